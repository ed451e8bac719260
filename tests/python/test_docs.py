"""docs/python.md runs: its Python blocks in order, each printing the text block that follows it."""

import contextlib
import io
import os
import re

from conftest import ROOT

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```\n", re.S | re.M)


def blocks(text):
    """[(code, expected output or None)] of the document's python blocks."""
    found = [(m.group(1), m.group(2)) for m in BLOCK.finditer(text)]
    out = []
    for i, (lang, body) in enumerate(found):
        if lang != "python":
            continue
        nxt = found[i + 1] if i + 1 < len(found) else None
        out.append((body, nxt[1] if nxt and nxt[0] == "text" else None))
    return out


def test_python_md_runs_and_prints_what_it_shows(tmp_path):
    doc = (ROOT / "docs" / "python.md").read_text()
    bs = blocks(doc)
    assert len(bs) >= 7 and sum(e is not None for _, e in bs) >= 6
    # Run in a scratch folder (the plot lands there) that sees the repository's tests/data.
    os.symlink(ROOT / "tests", tmp_path / "tests")
    os.chdir(tmp_path)
    namespace = {"__name__": "docs_python_md"}
    for code, expected in bs:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/python.md", "exec"), namespace)
        if expected is not None:
            assert out.getvalue() == expected, code


def test_readme_python_example_runs():
    readme = (ROOT / "README.md").read_text()
    code = [b for lang, b in ((m.group(1), m.group(2)) for m in BLOCK.finditer(readme)) if lang == "python"]
    assert len(code) == 1 and len(code[0].strip().splitlines()) == 5
    out = io.StringIO()
    namespace = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code[0], "README.md", "exec"), namespace)
    assert out.getvalue() == "2.150 s/step, MFU 0.372, fits: True\n"
    assert len(namespace["table"]) == 10
