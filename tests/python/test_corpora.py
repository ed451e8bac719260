"""The fuzzers' seed corpora (make fuzz: fuzz_configs, fuzz_user_inputs) replayed through the
module, whole and cut short: every input gives a prediction or a trainsim.Error, never another
exception or a crash."""

import pathlib

import pytest

import trainsim
from conftest import ROOT, run_cli

CONFIG_SEEDS = sorted(p for d in ("configs", "tests/data/golden/systems") for p in (ROOT / d).rglob("*")
                      if p.is_file()) + [ROOT / "tests/data/kernels/base_system.json"]
USER_SEEDS = sorted(p for d in ("tests/data/hf", "tests/data/megatron", "docs/examples")
                    for p in (ROOT / d).rglob("*") if p.is_file())


def test_corpora_are_found():
    assert len(CONFIG_SEEDS) > 40 and len(USER_SEEDS) > 20


def variants(path, tmp_path):
    """The file, its first half and its first 60 % with the last byte flipped."""
    data = path.read_bytes()
    out = [path]
    for i, cut in enumerate((data[: len(data) // 2], data[: len(data) * 3 // 5][:-1] + b"\x7f")):
        p = tmp_path / f"{path.name}.{i}"
        p.write_bytes(cut)
        out.append(p)
    return out


def outcome(**kwargs):
    try:
        r = trainsim.perf(**kwargs)
    except trainsim.Error as e:
        assert str(e)
        return "error"
    assert r.to_dict()["schema_version"]
    return "ok"


@pytest.mark.parametrize("seed", CONFIG_SEEDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_seeds(seed, tmp_path):
    results = {(i, role): outcome(**{role: p})
               for i, p in enumerate(variants(seed, tmp_path)) for role in ("model", "strategy", "system")}
    kind = seed.parent.name if seed.parent.parent.name == "configs" else None
    if kind in ("model", "strategy", "system") and seed.suffix == ".json":
        # A preset file in its own role (with the default plan's other inputs) predicts when the
        # CLI does; cut in half, it is not JSON any more.
        assert results[0, kind] == ("ok" if run_cli("perf", f"--{kind}", seed).rc == 0 else "error")
        assert results[1, kind] == "error"


@pytest.mark.parametrize("seed", USER_SEEDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_input_seeds(seed, tmp_path):
    for p in variants(seed, tmp_path):
        outcome(hf_config=p)
        outcome(megatron_args=pathlib.Path(p))
        outcome(megatron_args=p.read_bytes().decode("utf-8", "replace"))
