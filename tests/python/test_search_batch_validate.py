"""trainsim.search, batch and validate: the CLI's results."""

import json

import pytest

import trainsim
from conftest import ROOT, cli_error, run_cli

GOLDEN = ROOT / "tests" / "data" / "golden"


def test_search_equals_cli_csv(tmp_path):
    out = tmp_path / "search.csv"
    run = run_cli("search", "--model", "llama3-8b", "--system", "h100-sxm-80g", "--gpus", "16", "--gbs", "64",
                  "--tp", "1,2,4", "--pp", "1-4", "--recompute", "none,full", "--top", "0", "--csv", out, "--quiet")
    assert run.rc == 0, run.err
    r = trainsim.search("llama3-8b", "h100-sxm-80g", gpus=16, gbs=64, tp=[1, 2, 4], pp="1-4",
                        recompute=["none", "full"], top=0)
    assert r.to_csv() == out.read_text()
    assert len(r) == out.read_text().count("\n") - 1 > 10
    rows = r.rows()
    assert [x["rank"] for x in rows] == list(range(1, len(r) + 1))
    # The CSV has 6 decimals, the records every digit.
    assert rows[0]["iteration_time_s"] == min(x["iteration_time_s"] for x in rows)
    assert rows[0]["iteration_time_s"] == pytest.approx(r.records()[0]["iteration_time_s"], abs=5e-7)
    assert r.table() in run_cli("search", "--model", "llama3-8b", "--system", "h100-sxm-80g", "--gpus", "16",
                                "--gbs", "64", "--tp", "1,2,4", "--pp", "1-4", "--recompute", "none,full",
                                "--top", "0", "--quiet").out


def test_search_json_report_equals_cli():
    run = run_cli("search", "--model", "mixtral-8x7b", "--system", "h100-sxm-80g", "--gpus", "32", "--gbs", "128",
                  "--rank-by", "mfu", "--json", "--quiet")
    assert run.rc == 0, run.err
    cli = json.loads(run.out)
    py = trainsim.search("mixtral-8x7b", "h100-sxm-80g", gpus=32, global_batch=128, rank_by="mfu").report
    for doc in (cli, py):
        del doc["provenance"], doc["elapsed_s"], doc["threads"]
    assert py == cli
    assert len(py["candidates"]) == 10


def test_search_to_pandas_or_records():
    r = trainsim.search("llama3-8b", "h100-sxm-80g", gpus=8, gbs=32, tp=[1, 2], pp=[1, 2], top=3)
    table = r.to_pandas()
    try:
        import pandas  # noqa: F401
    except ImportError:
        assert table == r.rows() and len(table) == 3
    else:
        assert list(table["rank"]) == [1, 2, 3]
        assert list(table["iteration_time_s"]) == [x["iteration_time_s"] for x in r.rows()]


@pytest.mark.parametrize("cli_args, kwargs", [
    (["--model", "llama3-8b", "--gpus", "8", "--gbs", "32", "--mfu", "fast"],
     {"model": "llama3-8b", "gpus": 8, "gbs": 32, "mfu": "fast"}),
    (["--model", "llama3-8b", "--system", "h100-sxm-80g", "--gbs", "32"],
     {"model": "llama3-8b", "system": "h100-sxm-80g", "gbs": 32}),
    (["--model", "llama3-8b", "--system", "h100-sxm-80g", "--gpus", "8", "--gbs", "32", "--tp", "2-1"],
     {"model": "llama3-8b", "system": "h100-sxm-80g", "gpus": 8, "gbs": 32, "tp": "2-1"}),
    (["--model", "llama3-8b", "--system", "h100-sxm-80g", "--gpus", "8", "--gbs", "32", "--recompute", "ful"],
     {"model": "llama3-8b", "system": "h100-sxm-80g", "gpus": 8, "gbs": 32, "recompute": "ful"}),
    (["--model", "llama3-8b", "--system", "h100-sxm-80g", "--gpus", "8", "--gbs", "32", "--rank-by", "speed"],
     {"model": "llama3-8b", "system": "h100-sxm-80g", "gpus": 8, "gbs": 32, "rank_by": "speed"}),
    (["--model", "llama3-8b", "--system", "h100-sxm-80", "--gpus", "8", "--gbs", "32"],
     {"model": "llama3-8b", "system": "h100-sxm-80", "gpus": 8, "gbs": 32}),
])
def test_search_errors_are_the_cli_errors(cli_args, kwargs):
    run = run_cli("search", "--quiet", *cli_args)
    kind, message = cli_error(run, "search")
    with pytest.raises(trainsim.UsageError if kind == "usage error" else trainsim.InputError) as e:
        trainsim.search(**kwargs)
    assert str(e.value) == message


def test_search_unknown_keyword():
    with pytest.raises(trainsim.UsageError, match="unknown option 'gpu'; did you mean 'gpus'") as e:
        trainsim.search("llama3-8b", "h100-sxm-80g", gpu=8, gbs=32)
    assert e.value.suggestion == "gpus" and e.value.issues == ()


def test_batch_equals_cli(tmp_path):
    system = GOLDEN / "systems" / "a100_pcie.json"
    out = tmp_path / "batch.csv"
    run = run_cli("batch", GOLDEN / "cases", "--system", system, "--match", "_a100_pcie", "--csv", out)
    assert run.rc == 0, run.err
    rows = trainsim.batch(GOLDEN / "cases", system=system, match="_a100_pcie")
    assert rows.failed == 0 and len(rows) == 64

    def without_time(text):  # eval_us: the measured time of each estimate
        return [line.rsplit(",", 2)[0] for line in text.splitlines()]
    assert without_time(rows.csv) == without_time(out.read_text())
    assert rows[0]["case"] == sorted(p.name for p in (GOLDEN / "cases").glob("*_a100_pcie"))[0]
    assert rows[0]["iteration_time_ms"] > 0 and rows[0]["error"] == ""


def test_batch_megatron_cases_and_errors(tmp_path):
    cases = ROOT / "tests" / "data" / "megatron" / "batch"
    run = run_cli("batch", cases, "--system", "h100-sxm-80g")
    rows = trainsim.batch(cases, system="h100-sxm-80g")
    assert [r["case"] for r in rows] == [line.split(",")[0] for line in run.out.splitlines()[1:]]
    run = run_cli("batch", tmp_path / "none", "--system", "h100-sxm-80g")
    with pytest.raises(trainsim.InputError) as e:
        trainsim.batch(tmp_path / "none", system="h100-sxm-80g")
    assert str(e.value) == cli_error(run, "batch")[1]


def test_validate_equals_cli():
    run = run_cli("validate", "validation", "--table", "korthikanti2022", "--json")
    assert run.rc == 0, run.err
    assert trainsim.validate("validation", tables=["korthikanti2022"]) == json.loads(run.out)


def test_validate_errors():
    run = run_cli("validate", "validation", "--table", "korthikanti2023")
    with pytest.raises(trainsim.InputError) as e:
        trainsim.validate("validation", tables=["korthikanti2023"])
    assert str(e.value) == cli_error(run, "validate")[1]
    assert e.value.suggestion == "korthikanti2022"
