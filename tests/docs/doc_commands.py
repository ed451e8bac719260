#!/usr/bin/env python3
"""Docs that cannot drift: the commands README.md and docs/*.md show are run.

  doc_commands.py TRAINSIM [FILE.md ...]    (default: README.md, validation/README.md, docs/*.md)
  doc_commands.py --fix-tables TRAINSIM FILE.md    also rewrites the checked tables' figures
                                                   that differ (review the diff: the prose may
                                                   quote them)

Two kinds of fenced block are checked:

* Transcripts: a block whose first line starts with "$ ". Each "$ " line (with its "\\"
  continuation lines) is a command; the lines up to the next "$ " line are its standard output,
  compared line by line with what the command prints. A line "..." in the expected text stands
  for any number of lines; timings and thread counts (VOLATILE below) are compared as placeholders.
* Command blocks without output: every build/bin/trainsim command (with its continuation lines)
  of a block whose first line starts with "build/bin/trainsim" must run and exit 0, except those
  that cannot run here (NOT_RUN: a server, placeholder file names, a GPU's measurements).

* Tables of results: a Markdown table right after a comment

      <!-- checked table
      $ build/bin/trainsim perf --model {model} --set {sets:--set} --json
      step (ms) = iteration_time_ms
      fwd/bwd (ms) = time_breakdown.0.forward_per_micro_batch_ms / time_breakdown.0.backward_per_micro_batch_ms
      … = capacity=null
      -->

  runs, for each row, each "$ " command of the comment (one with no "HEADER = path" line below it
  is a setup step, run for every row that shows a number) with "{HEADER}" replaced by the row's cell
  under that header (backticks removed; an empty cell repeats the one above), "{HEADER:1}" by
  its first word and "{sets:HEADER}" by "--set K=V" for each K=V of the cell ("…" in a cell
  stands for the text the "… =" line gives); each "HEADER = path" line below a command compares
  the first numbers of that column (several: "a / b") with the values at those paths of the command's
  JSON output (dotted keys, list indexes or key=value for the element with that value;
  placeholders as in the command), rounded to the digits the cell shows. A cell without a
  number ("-") is not compared, and a command none of whose cells has one is not run.

Commands run in a scratch folder that sees the repository's folders (configs, docs, tests, ...),
so files they write land there; "trainsim" and "build/bin/trainsim" are the binary under test.
Exits 1 listing every difference, 0 when every command printed what the text shows.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Figures that change from run to run: masked in the text and in the output alike.
VOLATILE = [
    (re.compile(r"in [0-9.]+ s \([0-9]+ candidates/s"), "in <s> s (<n> candidates/s"),
    (re.compile(r"\b[0-9]+ threads\b"), "<n> threads"),
]

# Commands shown but not run by this test, with the reason (matched as substrings).
NOT_RUN = {
    "trainsim serve": "a server; tests/views/browser_test.py runs it",
    "my_model.json": "placeholder file names",
    "trainsim validate": "the accuracy suite; ctest runs it (cli_validate_*)",
    "h100_measured.json": "the system file a GPU calibration writes",
    "kernels.json": "kernels_bench's measurements (a GPU)",
}

# Benches whose transcripts are run when built beside trainsim (skipped, with a note, when not).
BENCHES = ("kernels_bench",)

FENCE = re.compile(r"^( *)```[^\n]*\n(.*?)^\1```[ \t]*$", re.S | re.M)


def blocks(text):
    """(line number, [lines]) of each fenced block, without the fence's indentation."""
    out = []
    for m in FENCE.finditer(text):
        indent = len(m.group(1))
        lines = [l[indent:] if l[:indent].strip() == "" else l for l in m.group(2).splitlines()]
        out.append((text.count("\n", 0, m.start()) + 1, lines))
    return out


def commands(lines):
    """Joins continuation lines: [(command, index of its last line)]."""
    out, cur = [], ""
    for i, l in enumerate(lines):
        cur += l.strip() if cur else l.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip() + " "
            continue
        out.append((cur, i))
        cur = ""
    return out


def mask(line):
    line = line.rstrip()
    for pattern, repl in VOLATILE:
        line = pattern.sub(repl, line)
    return line


def matches(expected, actual):
    """Line-by-line equality with "..." lines matching any run of lines."""
    exp = [mask(l) for l in expected]
    act = [mask(l) for l in actual]
    while exp and exp[-1] == "":
        exp.pop()
    while act and act[-1] == "":
        act.pop()

    def go(i, j):
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i] == act[j] and go(i + 1, j + 1)

    return go(0, 0)


def first_difference(expected, actual):
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e == "...":
            break
        if mask(e) != mask(a):
            return f"line {i + 1}:\n    text:   {e}\n    output: {a}"
    printed = {mask(a) for a in actual}
    for e in expected:
        if e != "..." and mask(e) not in printed:
            return f"this line is not printed:\n    text:   {e}"
    return f"{len(expected)} lines shown, {len(actual)} printed (in another order?)"


def scratch_dir(trainsim):
    d = tempfile.mkdtemp(prefix="doc_commands_")
    for name in os.listdir(ROOT):
        if name in ("build", ".git") or name.startswith("build"):
            continue
        os.symlink(os.path.join(ROOT, name), os.path.join(d, name))
    os.makedirs(os.path.join(d, "build", "bin"))
    os.symlink(os.path.abspath(trainsim), os.path.join(d, "build", "bin", "trainsim"))
    # The benches built beside it: their transcripts (dry runs, no GPU) are checked too.
    for bench in BENCHES:
        path = os.path.join(os.path.dirname(os.path.abspath(trainsim)), bench)
        if os.path.exists(path):
            os.symlink(path, os.path.join(d, "build", "bin", bench))
    return d


def run(command, cwd):
    words = shlex.split(command, comments=True)
    if words and words[0] == "trainsim":
        words[0] = "build/bin/trainsim"
    r = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


TABLE_MARK = re.compile(r"^<!-- checked table\n(.*?)^-->\n((?:\|[^\n]*\n)+)", re.S | re.M)
NUMBER = re.compile(r"[-+−]?[0-9][0-9,]*(?:\.[0-9]+)?")  # − (U+2212) as the docs write a minus


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def json_at(doc, path):
    """The value at a dotted path: keys, list indexes, or key=value (the list element whose key
    has that value)."""
    for part in path.split("."):
        if isinstance(doc, list) and "=" in part:
            k, v = part.split("=", 1)
            doc = next(x for x in doc if str(x.get(k)) == v)
        else:
            doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def check_tables(text, rel, cwd, failures, fixed=None):
    """The checked tables of a document: each row's commands and the figures they print. With
    `fixed` (a dict), the rows with other figures than the output's go there, rewritten: offset in
    the document -> (row, rewritten row)."""
    import json
    ran = 0
    for m in TABLE_MARK.finditer(text):
        where = f"{rel}:{text.count(chr(10), 0, m.start()) + 1}"
        spec = [l.rstrip() for l in m.group(1).splitlines() if l.strip()]
        ellipsis = ""
        commands_ = []  # [command template, [(header, [paths])]]
        for l in spec:
            if l.startswith("$ "):
                commands_.append([l[2:], []])
            elif l.startswith("… = "):
                ellipsis = l[4:]
            elif " = " in l and commands_:
                header, paths = l.split(" = ", 1)
                commands_[-1][1].append((header.strip(), [p.strip() for p in paths.split(" / ")]))
            else:
                failures.append(f"{where}: checked table: cannot read '{l}'")
        rows = m.group(2).splitlines()
        # Offsets of the rows in the document: two tables may hold rows of the same text.
        starts = [m.start(2)]
        for r in rows:
            starts.append(starts[-1] + len(r) + 1)
        headers = [h.replace("`", "") for h in cells(rows[0])]
        above = {}
        for row_index, row in enumerate(rows[2:], start=2):
            values = dict(zip(headers, cells(row)))
            new_values = dict(values)
            # An empty cell repeats the one above in commands and paths (rows grouped under one).
            filled = {h: (v if v else above.get(h, "")) for h, v in values.items()}
            above = filled

            def fill(template):
                def one(mm):
                    name = mm.group(1)
                    if name.startswith("sets:"):
                        cell = values[name[5:]]
                    elif name.endswith(":1"):  # the cell's first word
                        return filled[name[:-2]].replace("`", "").split()[0]
                    else:
                        return filled[name].replace("`", "")
                    cell = cell.replace("…", "`" + ellipsis + "`", 1) if cell.startswith("…") else cell
                    words = " ".join(re.findall(r"`([^`]*)`", cell)).split()
                    return " ".join("--set " + shlex.quote(w) for w in words)
                return re.sub(r"\{([^}]+)\}", one, template)

            row_has_numbers = any(NUMBER.findall(values.get(h, "")) for _, cols in commands_ for h, _ in cols)
            for template, columns in commands_:
                wanted = [(h, paths, NUMBER.findall(values.get(h, ""))) for h, paths in columns]
                if not any(nums for _, _, nums in wanted) and (columns or not row_has_numbers):
                    continue
                try:
                    command = fill(template)
                except KeyError as e:
                    failures.append(f"{where}: checked table: no column {e}")
                    continue
                rc, out, err = run(command, cwd)
                ran += 1
                if rc != 0:
                    failures.append(f"{where}: `{command}` exited {rc}: {err.strip()[:300]}")
                    continue
                if not columns:  # a setup step (e.g. writing a file the next command reads)
                    continue
                doc = json.loads(out)
                for header, paths, nums in wanted:
                    if not nums:
                        continue
                    if len(nums) < len(paths):
                        failures.append(f"{where}: '{header}' shows {len(nums)} numbers for {len(paths)} paths")
                        continue
                    for shown, path in zip(nums, paths):  # the cell's first numbers
                        digits = len(shown.split(".")[1]) if "." in shown else 0
                        try:
                            actual = float(json_at(doc, fill(path)))
                        except (KeyError, IndexError, StopIteration, TypeError, ValueError):
                            failures.append(f"{where}: `{command}`: {header}: no value at {fill(path)}")
                            continue
                        if abs(float(shown.replace(",", "").replace("−", "-")) - actual) > 0.5 * 10 ** -digits + 1e-9:
                            failures.append(f"{where}: `{command}`: {header} shows {shown}, the output "
                                            f"has {actual:.{digits}f} ({fill(path)})")
                            figure = f"{actual:.{digits}f}"
                            new_values[header] = new_values[header].replace(
                                shown, figure.replace("-", "−") if "−" in values[header] else figure, 1)
            if fixed is not None and new_values != values:
                fixed[starts[row_index]] = (row, "| " + " | ".join(new_values[h] for h in headers) + " |")
    return ran


def check_file(path, cwd, failures, fix=False):
    rel = os.path.relpath(path, ROOT) if path.startswith(ROOT) else os.path.basename(path)
    text = open(path, encoding="utf-8").read()
    fixed = {} if fix else None
    ran = check_tables(text, rel, cwd, failures, fixed)
    if fixed:
        for start in sorted(fixed, reverse=True):  # from the end: earlier offsets stay valid
            old, new = fixed[start]
            text = text[:start] + new + text[start + len(old):]
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{rel}: {len(fixed)} table rows rewritten with the output's figures")
    for line_no, lines in blocks(text):
        if not lines:
            continue
        where = f"{rel}:{line_no}"
        if lines[0].startswith("$ "):
            # A transcript: commands and what each prints.
            starts = [i for i, l in enumerate(lines) if l.startswith("$ ")]
            for n, s in enumerate(starts):
                end = starts[n + 1] if n + 1 < len(starts) else len(lines)
                body = [lines[s][2:]] + lines[s + 1:end]
                (command, last), = commands(body)[:1]
                expected = body[last + 1:]
                binary = shlex.split(command)[0]
                if binary.startswith("build/bin/") and not os.path.exists(os.path.join(cwd, binary)):
                    print(f"{where}: `{binary}` not built beside trainsim: transcript not checked")
                    continue
                rc, out, err = run(command, cwd)
                ran += 1
                if rc != 0:
                    failures.append(f"{where}: `{command}` exited {rc}: {err.strip()[:500]}")
                elif not matches(expected, out.splitlines()):
                    failures.append(f"{where}: `{command}` prints otherwise than the text shows, "
                                    f"{first_difference(expected, out.splitlines())}\n--- output:\n{out}")
        elif lines[0].startswith("build/bin/trainsim "):
            for command, _ in commands(lines):
                if not command.startswith("build/bin/trainsim "):
                    continue  # make targets, the GPU benches
                if any(k in command for k in NOT_RUN):
                    continue
                rc, out, err = run(command, cwd)
                ran += 1
                if rc != 0:
                    failures.append(f"{where}: `{command}` exited {rc}: {err.strip()[:500]}")
    return ran


def self_test(trainsim):
    """The checker fails a transcript whose text differs from the output, and a failing command."""
    cwd = scratch_dir(trainsim)
    md = os.path.join(cwd, "self_test.md")
    with open(md, "w") as f:
        f.write("```\n$ trainsim perf --set tp_size=3\n```\n\n"               # exits 1
                "```\n$ trainsim presets\nmodel:\n...\n```\n\n"             # as shown
                "```\n$ trainsim presets\nmodels:\n...\n```\n\n"            # differs
                "```\nbuild/bin/trainsim perf --model no-such-model\n```\n\n"   # exits 1
                "<!-- checked table\n$ build/bin/trainsim perf --model {model} {sets:set} --json\n"
                "parameters = parameter_count\nGPUs = world_size\n… = world_size=16\n-->\n"
                "| model | set | parameters | GPUs |\n|---|---|---|---|\n"
                "| llama3-8b | `micro_batch_num=4 world_size=32` | 8,030,261,248 | 32 |\n"   # as shown
                "| llama3-70b | … | 70,553,706,496 | 17 |\n"                         # 16 GPUs
                "| `llama2-7b` | | - | - |\n")                                         # not run
    failures = []
    try:
        ran = check_file(md, cwd, failures)
    finally:
        shutil.rmtree(cwd)
    assert ran == 6 and len(failures) == 4, (ran, failures)
    assert "GPUs shows 17, the output has 16 (world_size)" in failures[0], failures
    assert "exited 1" in failures[1] and "prints otherwise" in failures[2] and "exited 1" in failures[3], failures
    assert matches(["a", "...", "c"], ["a", "b", "b", "c"]) and not matches(["a", "c"], ["a", "b", "c"])
    assert matches(["4 candidates in 0.1 s (40 candidates/s, 2 threads)"],
                   ["4 candidates in 0.3 s (13 candidates/s, 1 threads)"])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    args = sys.argv[1:]
    fix = "--fix-tables" in args
    if fix:
        args.remove("--fix-tables")
    trainsim = args[0]
    self_test(trainsim)
    files = args[1:] or [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "validation", "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    cwd = scratch_dir(trainsim)
    failures = []
    total = 0
    try:
        for f in files:
            n = check_file(os.path.abspath(f), cwd, failures, fix)
            total += n
            if n:
                print(f"{os.path.relpath(f, ROOT)}: {n} commands run")
    finally:
        shutil.rmtree(cwd)  # the links and what the commands wrote; never the repository's files
    for f in failures:
        print("FAIL " + f)
    print(f"{total} commands run, {len(failures)} differ from the text")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
