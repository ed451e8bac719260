"""trainsim.perf: the same document as `trainsim perf --json`, the same errors."""

import json
import pathlib

import pytest

import trainsim
from conftest import ROOT, cli_error, normalised, run_cli

MODELS = sorted(p.stem for p in (ROOT / "configs" / "model").glob("*.json"))
STRATEGIES = sorted(p.stem for p in (ROOT / "configs" / "strategy").glob("*.json"))
SYSTEMS = sorted(p.stem for p in (ROOT / "configs" / "system").glob("*.json"))
GOLDEN = ROOT / "tests" / "data" / "golden"
GOLDEN_CASES = sorted(p.name for p in (GOLDEN / "cases").iterdir() if p.is_dir())


def test_presets_are_found():
    # The parametrisations below run over these lists: an empty one would test nothing.
    assert len(MODELS) == 16 and len(STRATEGIES) == 13 and len(SYSTEMS) == 15 and len(GOLDEN_CASES) == 128


def same_as_cli(cli_args, **kwargs):
    """perf(**kwargs) and `trainsim perf --json CLI_ARGS`: equal documents, or equal errors."""
    run = run_cli("perf", "--json", *cli_args)
    if run.rc == 0:
        r = trainsim.perf(**kwargs)
        assert r.to_json() == run.out  # the same text, byte for byte
        assert r.to_dict() == json.loads(run.out)
        assert normalised(json.dumps(r.to_dict())) == normalised(run.out)
        return r
    kind, message = cli_error(run, "perf")
    with pytest.raises(trainsim.UsageError if kind == "usage error" else trainsim.InputError) as e:
        trainsim.perf(**kwargs)
    assert str(e.value) == message
    return None


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_preset_plans(model, strategy):
    same_as_cli(["--model", model, "--strategy", strategy], model=model, strategy=strategy)


@pytest.mark.parametrize("system", SYSTEMS)
def test_preset_systems(system):
    same_as_cli(["--system", system], system=system)


def test_default_plan():
    r = same_as_cli([])
    assert r is not None and r["model"] == "preset:model/llama3-8b" and r["parallelism"].startswith("tp2.")


@pytest.mark.parametrize("case", GOLDEN_CASES)
def test_golden_cases(case):
    d = GOLDEN / "cases" / case
    system = GOLDEN / "systems" / ((d / "system.txt").read_text().strip() + ".json")
    r = same_as_cli(["--model", d / "model.json", "--strategy", d / "strategy.json", "--system", system],
                    model=str(d / "model.json"), strategy=d / "strategy.json", system=str(system))
    assert r is not None


def test_documents_give_the_numbers_of_their_files():
    # A dict is the file's content: the same prediction, only the sources are named differently.
    d = GOLDEN / "cases" / GOLDEN_CASES[0]
    system = GOLDEN / "systems" / ((d / "system.txt").read_text().strip() + ".json")
    by_path = trainsim.perf(model=d / "model.json", strategy=d / "strategy.json", system=system).to_dict()
    by_dict = trainsim.perf(model=json.loads((d / "model.json").read_text()),
                            strategy=json.loads((d / "strategy.json").read_text()),
                            system=json.loads(system.read_text())).to_dict()
    assert (by_dict["model"], by_dict["strategy"], by_dict["system"]) == (
        "model (dict)", "strategy (dict)", "system (dict)")
    for k in ("model", "strategy", "system"):
        by_path.pop(k), by_dict.pop(k)
    assert by_dict == by_path


HF = ROOT / "tests" / "data" / "hf" / "llama-3.1-8b" / "config.json"
MEGATRON = ROOT / "tests" / "data" / "megatron" / "llama3.1-8b-16gpu.sh"


def test_hf_config_and_megatron_line():
    r = same_as_cli(["--hf-config", HF, "--megatron-args", MEGATRON], hf_config=str(HF), megatron_args=MEGATRON)
    # The command line as a string: the same plan; the source is named as given.
    s = trainsim.perf(hf_config=json.loads(HF.read_text()), megatron_args=MEGATRON.read_text()).to_dict()
    assert s["strategy"] == "megatron_args (string)"
    assert s["iteration_time_ms"] == r["iteration_time_ms"] and s["peak_reserved_gib"] == r["peak_reserved_gib"]
    assert r["parallelism"].startswith("tp2.sp.cp1.pp4")


def test_overrides_are_set_options():
    same_as_cli(["--set", "tp_size=4", "--set", "recompute_granularity=full_block", "--set", "zero_state=3"],
                set={"tp_size": 4, "recompute_granularity": "full_block", "zero_state": 3})


def test_compat_and_mfu():
    same_as_cli(["--model", "llama2-7b", "--strategy", "tp1-pp1-dp8-zero1", "--system", "a100-pcie-simumax",
                 "--compat", "simumax-1.2", "--mfu", "simumax"],
                model="llama2-7b", strategy="tp1-pp1-dp8-zero1", system="a100-pcie-simumax",
                compat="simumax-1.2", mfu="simumax")


@pytest.mark.parametrize("cli_args, kwargs", [
    (["--model", "llama3-8bb"], {"model": "llama3-8bb"}),
    (["--system", "h100"], {"system": "h100"}),
    (["--set", "tp_sise=2"], {"set": {"tp_sise": 2}}),
    (["--set", "tp_size=3"], {"set": {"tp_size": 3}}),
    (["--set", "tp_size=x"], {"set": {"tp_size": "x"}}),
    (["--compat", "simumax"], {"compat": "simumax"}),
    (["--mfu", "paper"], {"mfu": "paper"}),
    (["--model", "tests/data/megatron/typo.txt"], {"model": "tests/data/megatron/typo.txt"}),
    (["--strategy", "no/such/file.json"], {"strategy": "no/such/file.json"}),
    (["--megatron-args", "tests/data/megatron/typo.txt"], {"megatron_args": pathlib.Path("tests/data/megatron/typo.txt")}),
    (["--hf-config", "tests/data/hf/README.md"], {"hf_config": "tests/data/hf/README.md"}),
])
def test_errors_are_the_cli_errors(cli_args, kwargs):
    assert same_as_cli(cli_args, **kwargs) is None


def test_wrong_types_are_usage_errors():
    with pytest.raises(trainsim.UsageError, match="^model: expected a preset name, a file path or a dict, got int$"):
        trainsim.perf(model=8)
    with pytest.raises(trainsim.UsageError, match="^megatron_args: expected the command line as a string, got list$"):
        trainsim.perf(megatron_args=["--tp", "2"])


def test_error_attributes():
    with pytest.raises(trainsim.UsageError) as e:
        trainsim.perf(set={"tp_sise": 2})
    assert e.value.suggestion == "tp_size"
    with pytest.raises(trainsim.InputError) as e:
        trainsim.perf(set={"tp_size": 3})
    assert e.value.issues and e.value.path == e.value.issues[0][1] and e.value.path.startswith("/")
    assert isinstance(e.value, trainsim.Error) and isinstance(e.value, ValueError)


def test_result_views():
    r = trainsim.perf()
    d = r.to_dict()
    assert r.iteration_time_s * 1e3 == pytest.approx(d["iteration_time_ms"], rel=1e-12)
    assert r.mfu == d["mfu"] and r.fits == d["fits"]
    assert r.fit_state == d["fit_state"] == "FITS"
    assert r.peak_reserved_gib == pytest.approx(d["peak_reserved_gib"], rel=1e-12)
    assert r.stages == d["stages"] and [s["name"] for s in r.stages] == ["first_stage", "last_stage"]
    assert r.time_breakdown == d["time_breakdown"]
    ops = r.breakdown(level="op")
    assert len(ops) == sum(len(s["by_op"]) for s in d["breakdown"]["time_per_stage"]) > 0
    assert {o["pp_rank"] for o in ops} == {0, 1}
    assert all("op" in o and o["total_ms"] >= 0 for o in ops)
    layers = r.breakdown(level="layer")
    assert {x["layer_type"] for x in layers} >= {"embedding", "head"}
    with pytest.raises(trainsim.UsageError) as e:
        r.breakdown(level="ops")
    assert str(e.value) == cli_error(run_cli("perf", "--breakdown", "ops"), "perf")[1]
    assert r.summary() == run_cli("perf").out
    d["mfu"] = -1  # to_dict gives a copy
    assert r.to_dict()["mfu"] == r.mfu


def test_tight_fit_state():
    # NeMo 24.07's GPT-3 20B on 64 H100 (docs/memory.md): -0.52 GiB with the allocator's
    # reserve, +3.52 GiB without it, so it fits only once the allocator frees its cache.
    d = ROOT / "validation/nemo2407_h100/cases/gpt3-20b_g64_tp2_pp1_dp32_mbs2_mbc4"
    r = trainsim.perf(model=d / "model.json", strategy=d / "strategy.json", system="h100-sxm-80g")
    doc = r.to_dict()
    assert r.fits is True and r.fit_state == doc["fit_state"] == "TIGHT"
    assert doc["memory_headroom_gib"] == pytest.approx(-0.52, abs=0.005)
    assert doc["memory_headroom_without_reserve_gib"] == pytest.approx(3.52, abs=0.005)
