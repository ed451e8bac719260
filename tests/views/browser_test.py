#!/usr/bin/env python3
"""Views in a real headless Chromium (selenium + chromedriver).

  browser_test.py html TRAINSIM OUT_DIR [--screenshot PNG]
      perf --html of a Mixtral ep8 plan and search --html: each page loads without console
      errors and its plots exist in the rendered DOM with a size and drawn marks.

  browser_test.py serve TRAINSIM OUT_DIR [--screenshot PNG]
      trainsim serve on a free port: the API returns exactly what perf --json returns, bad input
      is a 400 naming the field, 1,000 requests from 8 concurrent clients all succeed (p50
      latency printed); in the page, editing a field updates the numbers to perf --json's, and a
      bad value shows its error next to the field; pasting a config.json and a Megatron-LM line
      fills the fields with their values, edits apply on top, the search follows the plan, a
      measured preset and an uploaded system file are used (each checked against perf --json);
      the server is still up at the end.

Exits 77 (reported by ctest as skipped) when selenium, chromium or chromedriver is missing.
"""
import os
import shutil
import subprocess
import sys

SKIP = 77


def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("SKIPPED: python3-selenium is not installed")
        sys.exit(SKIP)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        print("SKIPPED: chromium or chromium-driver is not installed")
        sys.exit(SKIP)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,1400"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=opts)


def check_page(driver, url, min_plots, marks):
    from selenium.webdriver.common.by import By
    driver.get(url)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, f"{url}: console errors: {errors}"
    plots = driver.find_elements(By.CSS_SELECTOR, "svg.plot")
    assert len(plots) >= min_plots, f"{url}: {len(plots)} plots, expected at least {min_plots}"
    for p in plots:
        size = p.size
        assert size["width"] > 100 and size["height"] > 50, f"{url}: plot {p.get_attribute('id')} is {size}"
        drawn = p.find_elements(By.CSS_SELECTOR, marks)
        assert drawn, f"{url}: plot {p.get_attribute('id')} draws nothing"
    return plots


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}"
    return r


# Every text of every plot, with its bounding box in page pixels and its plot's box.
LAYOUT_JS = """
const out = [];
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  const texts = [];
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;
    texts.push({s: t.textContent, cls: t.getAttribute('class') || '', l: r.left, r: r.right, t: r.top, b: r.bottom});
  }
  out.push({id: svg.id, l: box.left, r: box.right, t: box.top, b: box.bottom, texts: texts,
            ticks: svg.querySelectorAll('g.axis text.tick').length,
            legend: Array.from(svg.querySelectorAll('g.legend text')).map(x => x.textContent)});
}
return out;
"""


def check_layout(driver, page):
    """Each plot has an axis with ticks, no text outside the plot, and no two texts overlapping."""
    for plot in driver.execute_script(LAYOUT_JS):
        name = f"{page} #{plot['id']}"
        assert plot["ticks"] >= 2, f"{name}: no axis ticks"
        texts = plot["texts"]
        for t in texts:
            assert t["l"] >= plot["l"] - 0.5 and t["r"] <= plot["r"] + 0.5, f"{name}: '{t['s']}' is clipped"
            assert t["t"] >= plot["t"] - 0.5 and t["b"] <= plot["b"] + 0.5, f"{name}: '{t['s']}' is clipped"
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                # Overlap beyond a pixel of antialiasing in both directions.
                if min(a["r"], b["r"]) - max(a["l"], b["l"]) > 1 and min(a["b"], b["b"]) - max(a["t"], b["t"]) > 1:
                    raise AssertionError(f"{name}: '{a['s']}' overlaps '{b['s']}'")
    return {p["id"]: p for p in driver.execute_script(LAYOUT_JS)}


def html(trainsim, out_dir, screenshot):
    os.makedirs(out_dir, exist_ok=True)
    perf = os.path.join(out_dir, "mixtral-ep8.html")
    search = os.path.join(out_dir, "search.html")
    interleaved = os.path.join(out_dir, "llama3-70b-interleaved.html")
    run([trainsim, "perf", "--model", "mixtral-8x7b", "--strategy", "ep8-pp1-dp8-moe", "--html", perf])
    run([trainsim, "perf", "--model", "llama3-70b", "--strategy", "tp2-pp4-vpp2-dp1", "--html", interleaved])
    run([trainsim, "search", "--model", "llama3-8b", "--system", "h100-sxm-80g", "--gpus", "16", "--gbs", "64",
         "--quiet", "--html", search])
    driver = browser()
    try:
        plots = check_page(driver, "file://" + os.path.abspath(perf), 3, "rect")
        ids = {p.get_attribute("id") for p in plots}
        for want in ("time-per-stage", "memory-per-stage", "pipeline-gantt", "top-ops"):
            assert want in ids, f"perf page lacks plot {want}: {ids}"
        layout = check_layout(driver, "perf")
        from selenium.webdriver.common.by import By
        verdict = driver.find_element(By.ID, "fit-verdict").text
        assert verdict.startswith("FITS") or verdict.startswith("DOES NOT FIT"), verdict
        # Legends name only what is drawn: the Mixtral plan has no split backward and no straggler.
        gantt = layout["pipeline-gantt"]["legend"]
        assert "forward" in gantt and "backward_weight" not in gantt and "straggler" not in gantt, gantt
        memory = layout["memory-per-stage"]["legend"]
        assert any(x.startswith("fit limit") for x in memory) and any(x.startswith("device memory") for x in memory), memory
        if screenshot:
            driver.save_screenshot(screenshot)
        # An interleaved plan: most of its activations are the micro-batches in flight.
        check_page(driver, "file://" + os.path.abspath(interleaved), 3, "rect")
        check_layout(driver, "interleaved")
        check_page(driver, "file://" + os.path.abspath(search), 1, "circle.candidate")
        assert driver.find_elements(By.CSS_SELECTOR, "path.pareto"), "search page lacks the Pareto front"
        legend = check_layout(driver, "search")["search-scatter"]["legend"]
        assert "candidate" in legend and any(x.startswith("Pareto front") for x in legend), legend
    finally:
        driver.quit()
    print("html: perf and search pages render without console errors, with axes, legends of what is drawn, "
          "no clipped or overlapping text")


def serve(trainsim, out_dir, screenshot):
    import json
    import statistics
    import time
    import urllib.error
    import urllib.parse
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    os.makedirs(out_dir, exist_ok=True)
    proc = subprocess.Popen([trainsim, "serve", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, f"serve printed {line!r}"
        base = line.split("listening on ")[1].split()[0].rstrip("/")

        def get(path, data=None):
            req = urllib.request.Request(base + path, data=data,
                                         headers={"Content-Type": "application/json"} if data else {})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        plan = ["--model", "llama3-8b", "--strategy", "tp2-pp2-dp2-zero1", "--system", "h100-sxm-80g"]
        query = "/api/perf?model=llama3-8b&strategy=tp2-pp2-dp2-zero1&system=h100-sxm-80g"
        cli = run([trainsim, "perf", *plan, "--json"]).stdout
        status, api = get(query)
        assert status == 200 and api == cli, "GET /api/perf differs from perf --json"
        cli16 = run([trainsim, "perf", *plan, "--set", "micro_batch_num=16", "--json"]).stdout
        status, api16 = get(query + "&set=micro_batch_num%3D16")
        assert status == 200 and api16 == cli16, "GET /api/perf with set differs from perf --set --json"
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        docs = {k: json.load(open(os.path.join(root, "configs", k, n + ".json")))
                for k, n in (("model", "llama3-8b"), ("strategy", "tp2-pp2-dp2-zero1"), ("system", "h100-sxm-80g"))}
        status, posted = get("/api/perf", json.dumps(docs).encode())
        assert status == 200, posted
        a, b = json.loads(posted), json.loads(cli)
        for k in ("model", "strategy", "system"):  # the sources: documents here, preset names there
            a.pop(k), b.pop(k)
        assert a == b, "POST /api/perf with the three documents differs from perf --json"
        status, bad = get(query + "&set=tp_size%3D3")
        assert status == 400 and json.loads(bad)["field"] == "tp_size", (status, bad)

        def timed(i):
            t0 = time.perf_counter()
            s, body = get(query if i % 2 else query + "&set=micro_batch_num%3D16")
            return s, body == (cli if i % 2 else cli16), time.perf_counter() - t0

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(timed, range(1000)))
        failures = [r for r in results if r[0] != 200 or not r[1]]
        assert not failures, f"{len(failures)} of 1000 concurrent requests failed"
        p50 = statistics.median(r[2] for r in results) * 1e3
        print(f"serve: 1000 requests from 8 clients, all 200 and equal to perf --json; p50 latency {p50:.2f} ms")

        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        driver = browser()
        try:
            driver.get(base + "/")
            wait = WebDriverWait(driver, 60)  # generous: the machine may be loaded

            def step(d):
                # The report is re-rendered when a prediction arrives: the element found may be
                # replaced before its text is read (a stale reference); read it again then.
                from selenium.common.exceptions import StaleElementReferenceException
                for _ in range(20):
                    try:
                        found = d.find_elements(By.ID, "step-time")
                        return found[0].text if found else ""
                    except StaleElementReferenceException:
                        continue
                return ""
            wait.until(step)
            assert step(driver) == "%.2f ms" % json.loads(cli)["iteration_time_ms"], step(driver)
            field = driver.find_element(By.ID, "field-micro_batch_num")
            field.clear()
            field.send_keys("16")
            want = "%.2f ms" % json.loads(cli16)["iteration_time_ms"]
            wait.until(lambda d: step(d) == want)
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search circle.candidate"))
            assert len(driver.find_elements(By.CSS_SELECTOR, "#report svg.plot")) >= 3
            tp = driver.find_element(By.ID, "field-tp_size")
            tp.clear()
            tp.send_keys("3")
            err = '[data-key="tp_size"] .err'
            wait.until(lambda d: d.find_element(By.CSS_SELECTOR, err).text)
            assert "tp_size" in driver.find_element(By.CSS_SELECTOR, err).text
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "400" not in e["message"]]
            assert not errors, f"console errors: {errors}"
            one_request(driver, wait, step, out_dir, trainsim, screenshot)
        finally:
            driver.quit()
        assert get("/api/presets")[0] == 200, "the server stopped answering"
        assert proc.poll() is None, "the server exited"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print("serve: page, API and concurrency checks passed")


def one_request(driver, wait, step, out_dir, trainsim, screenshot=None):
    """The page is a view of one request: pasted documents fill the fields with what they set,
    edits apply on top (validated next to the field), the search and the system follow."""
    import json
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    qwen = os.path.join(root, "tests", "data", "hf", "qwen2.5-7b", "config.json")
    hf = os.path.join(root, "docs", "examples", "llama3.1-8b", "config.json")
    line = os.path.join(root, "docs", "examples", "llama3.1-8b", "megatron_args.sh")

    def paste(box, text):
        driver.execute_script("const e = document.getElementById(arguments[0]); e.value = arguments[1];"
                              "e.dispatchEvent(new Event('input'));", box, text)

    def field(key):
        f = driver.find_elements(By.ID, "field-" + key)
        return f[0].get_attribute("value") if f else None

    def cli(*args):
        j = json.loads(run([trainsim, "perf", *args, "--json"]).stdout)
        verdict = ("FITS, headroom %.2f GiB" % j["memory_headroom_gib"] if j["fit_state"] == "FITS"
                   else "TIGHT, headroom %.2f GiB with the allocator's reserve, %.2f GiB without"
                   % (j["memory_headroom_gib"], j["memory_headroom_without_reserve_gib"]) if j["fits"]
                   else "DOES NOT FIT, %.2f GiB over the limit" % -j["memory_headroom_gib"])
        return "%.2f ms" % j["iteration_time_ms"], verdict

    def expect(args, what):
        want, verdict = cli(*args)
        try:
            wait.until(lambda d: step(d) == want)
        except Exception:
            raise AssertionError(f"{what}: the page shows {step(driver)}, perf --json {want}")
        got = driver.find_element(By.ID, "fit-verdict").text
        assert got == verdict, f"{what}: verdict {got!r}, perf --json {verdict!r}"

    # A Hugging Face config: the model fields show its values (before: Llama 3 8B's).
    driver.find_element(By.ID, "overrides").clear()
    paste("hf_config", open(qwen).read())
    wait.until(lambda d: field("hidden_size") == "3584")
    assert field("tp_size") == "2" and field("world_size") == "8", (field("tp_size"), field("world_size"))
    expect(["--hf-config", qwen, "--strategy", "tp2-pp2-dp2-zero1"], "pasted config.json")

    # The README's config and command line: the strategy fields show the line's values.
    paste("hf_config", open(hf).read())
    paste("megatron_args", open(line).read())
    wait.until(lambda d: field("pp_size") == "4")
    shown = {k: field(k) for k in ("tp_size", "pp_size", "interleaving_size", "world_size", "seq_len",
                                   "micro_batch_size", "tp_comm_overlap", "hidden_size", "vocab_size")}
    assert shown == {"tp_size": "2", "pp_size": "4", "interleaving_size": "2", "world_size": "16", "seq_len": "4096",
                     "micro_batch_size": "1", "tp_comm_overlap": "true", "hidden_size": "4096",
                     "vocab_size": "128256"}, shown
    plan = ["--hf-config", hf, "--megatron-args", line]
    expect(plan, "pasted line")
    # The search panel searches the same model, GPUs and global batch.
    scope_js = "const e = document.getElementById('search-plan'); return e ? e.textContent : '';"
    try:
        wait.until(lambda d: "on 16 GPUs" in d.execute_script(scope_js))
    except Exception:
        raise AssertionError("the search panel searches " + driver.execute_script(scope_js))
    scope = driver.find_element(By.ID, "search-plan").text
    assert "global batch 64, seq 4096" in scope, scope

    # Edits apply on top of the line: tp 4 is the README's what-if; tp 3 is an error at the field.
    tp = driver.find_element(By.ID, "field-tp_size")
    tp.clear()
    tp.send_keys("4")
    expect(plan + ["--tp", "4"], "tp 4 on the pasted line")
    if screenshot:  # docs/views-serve.png: the README's line pasted, tp 4 on top
        wait.until(lambda d: "on 16 GPUs" in d.execute_script(scope_js) and
                   d.find_elements(By.CSS_SELECTOR, "#search circle.candidate"))
        driver.save_screenshot(screenshot)
    tp.clear()
    tp.send_keys("3")
    err = '[data-key="tp_size"] .err'
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, err).text)
    assert "tp_size" in driver.find_element(By.CSS_SELECTOR, err).text
    tp.clear()
    tp.send_keys("4")
    wait.until(lambda d: not d.find_element(By.CSS_SELECTOR, err).text)

    # A measured preset, then an uploaded system file.
    Select(driver.find_element(By.ID, "system")).select_by_value("h100-sxm-80g-measured")
    expect(plan + ["--tp", "4", "--system", "h100-sxm-80g-measured"], "measured preset")
    mine = os.path.join(os.path.abspath(out_dir), "my-h200.json")
    with open(os.path.join(root, "configs", "system", "h200-sxm-141g.json")) as src, open(mine, "w") as dst:
        dst.write(src.read())
    driver.find_element(By.ID, "system-file").send_keys(mine)
    expect(plan + ["--tp", "4", "--system", mine], "uploaded system")
    print("serve: pasted config and command line fill the fields, tp 4 and tp 3 on top, measured preset and "
          "uploaded system: the page shows perf --json's step time and fit verdict")


def main():
    args = sys.argv[1:]
    shot = None
    if "--screenshot" in args:
        i = args.index("--screenshot")
        shot = args[i + 1]
        del args[i:i + 2]
    if len(args) == 3 and args[0] in ("html", "serve"):
        (html if args[0] == "html" else serve)(args[1], args[2], shot)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
