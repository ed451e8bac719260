#!/usr/bin/env python3
"""Builds configs/system/*-measured.json from NVIDIA's published measurements.

The PyPI package aiconfigurator-core ships per-GPU parquet tables measured on real machines
(GEMM, fused attention, NCCL). This tool converts them into the files trainsim's own benches
write (kernels.json, nccl-tests JSON → comm_bench → comm.json) and runs `trainsim system build`,
so the measured system files come out of the same merge as a calibration on our own hardware.

  make measured-systems                                   # venv + this tool, every GPU
  build/venv/bin/python tools/measured/import_measurements.py build [--gpu h100_sxm] [--source WHEEL]
  build/venv/bin/python tools/measured/import_measurements.py evaluate   # models' and predictors' held-out error
  build/venv/bin/python tools/measured/import_measurements.py deepep     # tests/data/deepep's copy of the DeepEP table

Run from the repository root. Exit status: 0 ok, 1 input/IO error, 2 usage.
"""

import argparse
import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measured_tables as mt  # noqa: E402

PACKAGE = "aiconfigurator-core"
DEEPEP_OUT = "tests/data/deepep/h100_deepep_normal.csv"

# What is imported per GPU: aiconfigurator system name → trainsim preset and table versions
# (the newest TensorRT-LLM tables of aiconfigurator-core 0.12.0; NCCL the newest version).
GPUS = {
    "h100_sxm": {"out": "h100-sxm-80g", "base": "h100-sxm-80g", "gemm": "trtllm/1.3.0rc20",
                 "attention": "trtllm/1.3.0rc20", "nccl": "2.29.2", "fp8": "fp8", "moe": "trtllm/1.3.0rc20"},
    "h200_sxm": {"out": "h200-sxm-141g", "base": "h200-sxm-141g", "gemm": "trtllm/1.3.0rc20",
                 "attention": "trtllm/1.3.0rc20", "nccl": "2.29.2", "fp8": "fp8", "moe": "trtllm/1.3.0rc20"},
    # B200 bf16 GEMMs, grouped GEMMs and attention from SimuMax's calibration of a DGX B200 (its
    # benches of TransformerEngine's training kernels, backward measured): on the whole development set
    # these predict the B200 runs better than the TensorRT-LLM tables (docs/calibration.md,
    # "Two measured B200 sources"). The fp8 classes keep the tables (SimuMax has no fp8 entries):
    # fp8 grouped GEMMs from the fused-MoE table.
    # The memory-bound classes (norms, activations, casts, permutes, cross entropy) from the same
    # calibration: its measured effective HBM bandwidth and latency per launch (docs/calibration.md,
    # "Memory-bound kernels"); the tables time no memory-bound kernel.
    "b200_sxm": {"out": "b200-sxm-180g", "base": "b200-sxm-180g", "gemm": "trtllm/1.3.0rc20",
                 "attention": "trtllm/1.3.0rc20", "nccl": "2.29.2", "fp8": "fp8", "moe": "trtllm/1.3.0rc20",
                 "moe_ops": ["fp8_group_matmul"],
                 "training": {"file": "configs/system/b200-simumax.json", "name": "SimuMax v1.2 b200_bf16_ceperm",
                              "ops": ["matmul", "group_matmul", "sdp_fwd", "sdp_bwd"],
                              "bandwidths": ["default", "permute_fwd", "permute_bwd", "ce", "ce_fusion"]}},
    # No GB200 datasheet preset: the B200 one with GB200's peaks and memory (gb200.yaml of the
    # package: bf16 2500, fp8 5000 TFLOP/s dense, 185.03 GiB HBM3e at 8000 GB/s).
    "gb200": {"out": "gb200", "base": "b200-sxm-180g", "gemm": "trtllm/1.3.0rc20",
              "attention": "trtllm/1.3.0rc20", "nccl": "2.29.2", "fp8": "fp8", "moe": "trtllm/1.3.0rc20",
              "base_override": {"sys_name": "gb200", "bf16_tflops": 2500, "fp8_tflops": 5000, "mem_gbs": 185.03,
                                "hbm_gibps": 7450.58, "host_link_gibps": 209.55, "host_adam_gibps": 51.09,
                                "host_note": (
                                    "host (trainsim extension, datasheet/assumed): link_gbps = NVLink-C2C, 900 GB/s "
                                    "bidirectional between one Grace CPU and its two Blackwell GPUs = 225 GB/s per GPU "
                                    "and direction = 209.55 GiB/s (datasheet); cpu_adam_gbps = assumed: a CPU Adam "
                                    "streams 28 B per parameter (reads fp32 param, grad, m, v; writes param, m, v) to "
                                    "update 12 B of state, at half the Grace LPDDR5X bandwidth per GPU: 512 GB/s per "
                                    "Grace for 2 GPUs = 256 GB/s, x 0.5 x 12/28 = 54.86 GB/s = 51.09 GiB/s")}},
    # A100 has no FP8 tensor cores; its preset gives fp8_matmul the bf16 peak, so FP8 keys are
    # timed with the bf16 table. Its fused-MoE table (trtllm 1.0.0) has power-law rows only, of
    # another kernel (moe_torch_flow): no grouped-GEMM model.
    # Its GEMM model divides out the waves of tiles over the SMs before interpolating (108 SMs,
    # the A100 datasheet; 128 x 256 tiles, cuBLAS's largest Ampere bf16 tensor-op tile,
    # ampere_bf16_s16816gemm_bf16_128x256: docs/calibration.md): Ampere's kernels run a wave at
    # a time. The Hopper and Blackwell tables show no such steps (persistent kernels).
    "a100_sxm": {"out": "a100-sxm-80g", "base": "a100-sxm-80g", "gemm": "trtllm/1.0.0",
                 "attention": "trtllm/1.0.0", "nccl": "2.27.3", "fp8": "bfloat16",
                 "waves": {"sm_count": 108, "tile_m": 128, "tile_n": 256}},
}

# Plans whose shapes the measured files carry (besides every validation case): the CLI default
# and the examples of docs/calibration.md and docs/search.md.
EXAMPLE_PLANS = [
    ("llama3-8b", "tp1-pp1-dp8-zero1"), ("llama3-8b", "tp2-pp2-dp2-zero1"), ("llama3-8b", "tp1-pp1-dp8-zero1-fp8"),
    ("llama3-70b", "tp8-pp4-dp2-zero1-full-recompute"), ("llama3-70b", "tp8-pp8-dp4-zero1"),
    ("llama2-7b", "tp1-pp1-dp8-zero1"), ("qwen2.5-7b", "tp2-pp2-dp2-zero1"), ("gpt3-175b", "tp8-pp8-dp4-zero1"),
]


class InputError(Exception):
    """Input or I/O problem: printed as `import_measurements: error: ...`, exit status 1."""


def fail(msg):
    raise InputError(msg)


def package_root(source):
    """Directory holding systems/ of aiconfigurator-core: from `source` (an unpacked package
    directory or a .whl file) or the installed package. Returns (root, version, cleanup dir)."""
    if source:
        if source.endswith(".whl"):
            if not os.path.isfile(source):
                fail(f"{source}: no such wheel file")
            tmp = tempfile.TemporaryDirectory(prefix="aic-wheel-")
            with zipfile.ZipFile(source) as z:
                z.extractall(tmp.name, [n for n in z.namelist()
                                        if n.startswith("aiconfigurator_core/systems/") or ".dist-info/" in n])
            root = os.path.join(tmp.name, "aiconfigurator_core")
            version = os.path.basename(source).split("-")[1]
            return root, version, tmp
        if not os.path.isdir(os.path.join(source, "systems")):
            fail(f"{source}: expected the aiconfigurator_core package directory (with systems/) or a .whl file")
        return source, "unknown", None
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        fail(f"the Python package {PACKAGE} is not installed; run `make measured-systems` (it installs "
             f"tools/measured/requirements.txt into build/venv) or pass --source WHEEL")
    from importlib.metadata import version as pkg_version
    return list(spec.submodule_search_locations)[0], pkg_version(PACKAGE), None


def read_parquet(path):
    try:
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        fail("pyarrow is not installed; run `make measured-systems` or install tools/measured/requirements.txt")
    if not os.path.isfile(path):
        fail(f"{path}: no such table in the package")
    return pq.read_table(path).to_pylist()


def table_path(root, gpu, kind, version, name):
    return os.path.join(root, "systems", "data", gpu, kind, version, name)


def load_gemm(root, gpu, spec, dtype):
    rows = read_parquet(table_path(root, gpu, "gemm", spec["gemm"], "gemm_perf.parquet"))
    sel = [(r["m"], r["n"], r["k"], r["latency"] * 1e-3) for r in rows if r["gemm_dtype"] == dtype]
    if not sel:
        fail(f"{gpu} gemm {spec['gemm']}: no rows with gemm_dtype '{dtype}'")
    return mt.GemmTable(sel), rows[0]["device"]


def load_attention(root, gpu, spec):
    rows = read_parquet(table_path(root, gpu, "attention", spec["attention"], "context_attention_perf.parquet"))
    sel = [(r["batch_size"], r["isl"], r["num_heads"], r["num_key_value_heads"], r["head_dim"], r["latency"] * 1e-3)
           for r in rows if r["attn_dtype"] == "bfloat16" and r["kv_cache_dtype"] == "bfloat16"
           and r["window_size"] == 0 and r.get("beam_width", 1) == 1 and r.get("step", 0) == 0]
    return mt.AttentionTable(sel)


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stderr.strip()}")
    return res.stdout


def collect_shapes(trainsim, work):
    """Union of the shapes of every validation case and example plan (trainsim shapes)."""
    plans = []
    for table in sorted(os.listdir("validation")):
        cases = os.path.join("validation", table, "cases")
        if os.path.isdir(cases):
            for c in sorted(os.listdir(cases)):
                d = os.path.join(cases, c)
                if os.path.isfile(os.path.join(d, "megatron_args.txt")):  # a Megatron-LM command line
                    args = ["--megatron-args", os.path.join(d, "megatron_args.txt")]
                    if os.path.isfile(os.path.join(d, "config.json")):
                        args += ["--hf-config", os.path.join(d, "config.json")]
                    plans.append(args)
                else:
                    plans.append(["--model", os.path.join(d, "model.json"), "--strategy", os.path.join(d, "strategy.json")])
    plans += [["--model", model, "--strategy", strategy] for model, strategy in EXAMPLE_PLANS]
    shapes = {}
    out = os.path.join(work, "shapes.json")
    for args in plans:
        run([trainsim, "shapes", *args, "--out", out])
        with open(out) as f:
            for s in json.load(f)["shapes"]:
                shapes[(s["op"], s["key"])] = {"op": s["op"], "key": s["key"]}
    return [shapes[k] for k in sorted(shapes)], len(plans)


def base_file(spec, work):
    """The base system for `trainsim system build`: the preset, or a patched copy of it."""
    over = spec.get("base_override")
    if not over:
        return spec["base"]
    with open(os.path.join("configs", "system", spec["base"] + ".json")) as f:
        sys_json = json.load(f)
    sys_json["sys_name"] = over["sys_name"]
    sys_json["description"] = (
        f"NVIDIA GB200 (one Blackwell GPU of a Grace-Blackwell superchip, NVL72 rack), built from the "
        f"{spec['base']} datasheet preset with GB200's dense peaks (bf16 {over['bf16_tflops']}, fp8 "
        f"{over['fp8_tflops']} TFLOP/s), {over['mem_gbs']} GiB HBM3e at 8000 GB/s = {over['hbm_gibps']} GiB/s "
        f"(aiconfigurator-core gb200.yaml); networks as the B200 preset (8-GPU NVLink 5 slice of the "
        f"72-GPU domain). Datasheet efficiencies, not measured.")
    for name, op in sys_json["accelerator"]["op"].items():
        op["tflops"] = over["fp8_tflops"] if name.startswith("fp8") else over["bf16_tflops"]
    for bw in sys_json["accelerator"]["bandwidth"].values():
        bw["gbps"] = over["hbm_gibps"]
    sys_json["accelerator"]["mem_gbs"] = over["mem_gbs"]
    # Grace's NVLink-C2C host link and LPDDR5X for the CPU Adam; the framework's host costs as the base.
    sys_json["host"]["link_gbps"] = over["host_link_gibps"]
    sys_json["host"]["cpu_adam_gbps"] = over["host_adam_gibps"]
    note = sys_json["provenance"]["host"]
    sys_json["provenance"]["host"] = over["host_note"] + note[note.index("; framework"):]
    path = os.path.join(work, "base.json")
    with open(path, "w") as f:
        json.dump(sys_json, f, indent=1)
    return path


def write_gemm_grids(gpu, spec, version, device, bf16, fp8, work):
    """trainsim-gemm-grid documents of every table point (matmul: bf16, fp8_matmul: the fp8
    table), for `trainsim system build --gemm-grid`. Returns the command-line arguments."""
    args = []
    for op, table, dtype in (("matmul", bf16, "bfloat16"), ("fp8_matmul", fp8, spec["fp8"])):
        grid = {"kind": "trainsim-gemm-grid", "op": op, "device": device, "dtype": dtype,
                **({"waves": spec["waves"]} if "waves" in spec else {}),
                "provenance": {"package": PACKAGE, "version": version, "system": gpu,
                               "framework": "TensorRT-LLM " + spec["gemm"].split("/")[1],
                               "table": f"systems/data/{gpu}/gemm/{spec['gemm']}/gemm_perf.parquet ({dtype})",
                               "time_s": "table latency (ms) × 1e-3"},
                "points": [[m, n, k, t] for (m, n, k), t in sorted(table.t.items())]}
        path = os.path.join(work, f"gemm_grid_{op}.json")
        with open(path, "w") as f:
            json.dump(grid, f)
        args += ["--gemm-grid", path]
    return args


# Grouped-GEMM op class → the fused-MoE table's moe_dtype (per-tensor fp8: the cutlass kernel
# Megatron's fp8 recipes compare with; fp8_block is DeepGEMM's blockwise kernel).
MOE_DTYPES = {"group_matmul": "bfloat16", "fp8_group_matmul": "fp8"}


def memory_bound_rate(spec):
    """Bytes per second the preset gives its memory-bound default class (HBM bandwidth × efficiency:
    the training source's where it supplies the class, B200: SimuMax's; else the base preset's,
    the datasheet's 0.8) and a note saying so."""
    with open(os.path.join("configs", "system", spec["base"] + ".json")) as f:
        base = json.load(f)["accelerator"]["bandwidth"]["default"]
    hbm = spec.get("base_override", {}).get("hbm_gibps", base["gbps"])  # GB200: its own bandwidth
    rate, name = hbm * base["efficient_factor"] * 2**30, spec["base"]
    training = spec.get("training")
    if training and "default" in training["bandwidths"]:  # B200: SimuMax's measured rate
        with open(training["file"]) as f:
            bw = json.load(f)["accelerator"]["bandwidth"]["default"]
        rate, name = bw["gbps"] * bw["efficient_factor"] * 2**30, training["name"]
    return rate, (f"{rate / 1e9:.1f} GB/s = {hbm} GiB/s x {rate / (hbm * 2**30):.4f}, the memory-bound "
                  f"default class of {name}")


def write_grouped_grids(gpu, spec, version, root, work):
    """trainsim-grouped-grid documents of the fused-MoE table (group_matmul: bf16 rows,
    fp8_group_matmul: fp8 rows), for `trainsim system build --grouped-grid`. Returns the
    command-line arguments and a summary per op (series, points, uneven-routing ratios)."""
    if not spec.get("moe"):
        return [], {}
    rows = read_parquet(table_path(root, gpu, "moe", spec["moe"], "moe_perf.parquet"))
    rate, rate_note = memory_bound_rate(spec)
    args, summary = [], {}
    for op in spec.get("moe_ops", list(MOE_DTYPES)):
        dtype = MOE_DTYPES[op]
        counts = {}
        series = mt.moe_grouped_series(rows, dtype, rate, counts)
        if not series:
            fail(f"{gpu} moe {spec['moe']}: no balanced {mt.MOE_KERNEL_SOURCE} rows with moe_dtype '{dtype}'")
        print(f"{gpu} {op}: {counts.get('kept', 0)} of {counts['rows']} fused-MoE rows kept whole (their extra "
              f"kernels would take more than {mt.MOE_EXTRA_MAX_SHARE:.0%} of the latency)", file=sys.stderr)
        uneven = mt.moe_uneven_tokens(rows, dtype, series, rate)
        doc = {"kind": "trainsim-grouped-grid", "op": op, "device": rows[0]["device"], "dtype": dtype,
               "provenance": {"package": PACKAGE, "version": version, "system": gpu,
                              "framework": "TensorRT-LLM " + spec["moe"].split("/")[1],
                              "table": f"systems/data/{gpu}/moe/{spec['moe']}/moe_perf.parquet ({dtype}, "
                                       f"{mt.MOE_KERNEL_SOURCE}, {mt.MOE_FIT_DISTRIBUTION}, EP 1, >= 1 token per expert)",
                              "rows": "moe_ep_size 1 (the rank's experts only), every moe_tp_size",
                              "per_rank": "experts = num_experts, inter = inter_size / moe_tp_size, "
                                          "tokens per expert = num_tokens * topk / num_experts",
                              "time_s": "table latency (ms) × 1e-3 of the fused MoE (gated up and down projection "
                                        "GEMMs with the input expansion, activation and finalize kernels) less the "
                                        "extra kernels' bytes at the memory-bound rate, no per-launch floor",
                              "extra_kernels": {
                                  "bytes": "expand T·h·2 + T·k·h·e, SwiGLU T·k·2I·2 + T·k·I·e, finalize T·k·h·2 + T·h·2 "
                                           f"(T tokens, k topk, I per rank, e {mt.MOE_QUANTISED_BYTES.get(dtype, 2)} B)",
                                  "rate": rate_note,
                                  "rows_kept_whole": f"{counts.get('kept', 0)} of {counts['rows']} (extra time > "
                                                     f"{mt.MOE_EXTRA_MAX_SHARE:.0%} of the latency)"}},
               "series": series}
        path = os.path.join(work, f"grouped_grid_{op}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        args += ["--grouped-grid", path]
        summary[op] = {"series": len(series), "points": sum(len(s["tokens"]) for s in series),
                       "rows_kept_whole": counts.get("kept", 0),
                       "uneven_tokens_ratio_median": {d: round(statistics.median(v), 3) for d, v in sorted(uneven.items())}}
    return args, summary


def attention_points_file(spec, work, results, gpu, version):
    """A system file holding the attention results as measured entries (efficiency against the
    base's peak) of sdp_fwd and sdp_bwd, for `system build --measured-system`: their points model
    answers any attention key (nearest shapes), so no key falls back to a class default."""
    with open(os.path.join("configs", "system", spec["base"] + ".json")) as f:
        sys_json = json.load(f)
    ops = sys_json["accelerator"]["op"]
    for r in results:
        op = ops[r["op"]]
        op.setdefault("accurate_efficient_factor", {})[r["key"]] = r["flops"] / (r["time_s"]["median"] * op["tflops"] * 1e12)
    sys_json["sys_name"] = f"{gpu} context attention"
    sys_json["description"] = (f"{PACKAGE} {version} {gpu}: the plans' attention shapes timed from the context-attention "
                               f"table (measured or interpolated; sdp_bwd 2.5 x forward / {mt.SDP_BWD_EFFICIENCY_RATIO})")
    sys_json.pop("provenance", None)
    path = os.path.join(work, "attention_points.json")
    with open(path, "w") as f:
        json.dump(sys_json, f, indent=1)
    return path


def build_gpu(gpu, root, version, shapes, args):
    spec = GPUS[gpu]
    work = os.path.join(args.work, gpu)
    os.makedirs(work, exist_ok=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    tables = {}
    bf16, device = load_gemm(root, gpu, spec, "bfloat16")
    fp8 = bf16 if spec["fp8"] == "bfloat16" else load_gemm(root, gpu, spec, spec["fp8"])[0]
    attention = load_attention(root, gpu, spec)
    tables["gemm"] = f"systems/data/{gpu}/gemm/{spec['gemm']}/gemm_perf.parquet (bfloat16, {spec['fp8']})"
    tables["attention"] = (f"systems/data/{gpu}/attention/{spec['attention']}/context_attention_perf.parquet "
                           "(bfloat16, no window)")
    tables["nccl"] = f"systems/data/{gpu}/comm/nccl/{spec['nccl']}/nccl_perf.parquet (half)"
    results, counts = mt.kernel_results(shapes, {"matmul": bf16, "fp8_matmul": fp8}, attention)
    provenance = {
        "tool": "tools/measured/import_measurements.py", "date": when,
        "command": "make measured-systems",
        "source": {"package": PACKAGE, "version": version, "license": "Apache-2.0", "system": gpu,
                   "framework": "TensorRT-LLM " + spec["gemm"].split("/")[1], "tables": tables},
        "derived": {
            "time_s": "table latency (ms) × 1e-3; one figure per shape (n = 1)",
            "interpolated": "shape not in the table: attention FLOP-scaled nearest measured shapes, across head "
                            "dims log-linear on the time per FLOP (docs/calibration.md)",
            "gemm_model": "matmul and fp8_matmul: every table point in the op's model (gemm_grid), evaluated by the "
                          "simulator for any shape; the kernel entries of these ops set only the op fallback "
                          "(mean over the plans' shapes)",
            "as_tn": "NN/NT gradient GEMMs timed as the forward-layout (TN) GEMM of the same dims",
            "sdp_bwd": f"2.5 × forward time / {mt.SDP_BWD_EFFICIENCY_RATIO} (backward not in the tables)",
            "grouped_model": "group_matmul and fp8_group_matmul (where the GPU's fused-MoE table is imported): "
                             "series of measured expert shapes (grouped_grid), evaluated by the simulator for any "
                             "shape (docs/calibration.md, \"Grouped-GEMM model\")",
            "attention_model": "sdp_fwd and sdp_bwd (not B200/GB200): a measured-points model of the plans' shapes "
                               "above (attention_points.json), evaluated for any attention key; the classes keep "
                               "the base's efficient_factor",
            "mla": "attention with qk_head_dim != v_head_dim (MLA) timed at head dim (qk + v)/2 (same FLOPs)",
            "not_imported": "memory-bound classes (except where a training calibration gives them), p2p, "
                            "inter-node networks: base values kept",
        },
        "counts": counts,
    }
    doc = {"schema_version": "1.0.0", "kind": "trainsim-kernels", "flops_convention": "simulator",
           "device": {"name": device}, "method": {"source": "published table", "statistic": "table latency"},
           "provenance": provenance, "results": results}
    # Attention goes into a measured-points model (`system build --measured-system`) that answers
    # every attention key, not into per-shape entries whose mean would become the class fallback:
    # the classes keep the base's fallback, which no key of the family then needs.
    attention_args = []
    if not spec.get("training"):
        doc["results"] = [r for r in results if r["op"] not in mt.ATTENTION_OPS]
        points = attention_points_file(spec, work, [r for r in results if r["op"] in mt.ATTENTION_OPS], gpu, version)
        attention_args = ["--measured-system", points, "--measured-ops", ",".join(mt.ATTENTION_OPS)]
    kernels = os.path.join(work, "kernels.json")
    with open(kernels, "w") as f:
        json.dump(doc, f, indent=1)

    nccl_rows = read_parquet(table_path(root, gpu, "comm", "nccl/" + spec["nccl"], "nccl_perf.parquet"))
    files = []
    for name, d in mt.nccl_tests_documents(nccl_rows, nccl_rows[0]["device"], spec["nccl"]):
        path = os.path.join(work, f"nccl_{name}.json")
        with open(path, "w") as f:
            json.dump(d, f, indent=1)
        files.append(path)
    comm = os.path.join(work, "comm.json")
    run([args.comm_bench, "--from-nccl-tests", *files, "--intra-link", "nvlink", "--out", comm])
    with open(comm) as f:
        comm_doc = json.load(f)
    comm_doc["provenance"]["timing"] = "published table latency (ms), converted to µs"
    comm_doc["provenance"]["import"] = {
        "tool": provenance["tool"], "date": when,
        "source": {**provenance["source"], "tables": {"nccl": tables["nccl"]}},
        "message_size": "elements of nccl_dtype (half: 2 bytes), total buffer as in nccl-tests"}
    with open(comm, "w") as f:
        json.dump(comm_doc, f, indent=1)

    # Every measured GEMM of the tables, from which `system build` fits the op's model (the
    # kernels.json entries above then only set the op fallbacks, the mean over the plans' shapes).
    grids = write_gemm_grids(gpu, spec, version, device, bf16, fp8, work)
    grouped, grouped_summary = write_grouped_grids(gpu, spec, version, root, work)
    if grouped_summary:
        tables["moe"] = f"systems/data/{gpu}/moe/{spec['moe']}/moe_perf.parquet"
        provenance["grouped"] = grouped_summary
        with open(kernels, "w") as f:
            json.dump(doc, f, indent=1)

    # The description says what the file is (system build would keep the base's).
    counted = ", ".join(f"{v['points']} points in {v['series']} expert shapes" for v in grouped_summary.values())
    sizes = sorted({int(n.rsplit("_x", 1)[1]) for n in (os.path.basename(f)[:-5] for f in files)})
    base = spec["base"] + (" with GB200's peaks and memory" if spec.get("base_override") else "")
    description = (
        f"{device}: built by `make measured-systems` from the measurements NVIDIA publishes in {PACKAGE} "
        f"{version} ({gpu}: TensorRT-LLM {spec['gemm'].split('/')[1]} GEMM and context-attention tables, NCCL "
        f"{spec['nccl']} table{', fused-MoE table' if grouped else ''}). GEMM efficiencies from a model of every "
        f"table point ({len(bf16.t):,} bf16, "
        f"{len(fp8.t):,} {spec['fp8']}), evaluated for any shape: measured where the table has it, else "
        f"interpolated; gradient GEMMs as the forward layout. Fused-attention efficiencies for the shapes of the "
        f"validation cases and example plans: measured where the table has the shape, else interpolated; backward "
        f"derived. "
        + (f"Grouped-GEMM ({', '.join(grouped_summary)}) efficiencies from a model of the fused-MoE table's balanced "
           f"EP-1 rows ({counted}), evaluated for any shape; gradient GEMMs at the forward's efficiency. "
           if grouped_summary else "")
        + f"NVLink collectives fitted (alpha-beta) on groups of "
        f"{', '.join(map(str, sizes))} GPUs. Everything else (peaks, memory-bound classes, "
        f"{'' if len(grouped_summary) == 2 else 'MoE, '}inter-node) from "
        f"the base: {base}. "
        f"See provenance and docs/calibration.md.")
    training = []
    if spec.get("training"):
        t = spec["training"]
        training = ["--measured-system", t["file"], "--measured-ops", ",".join(t["ops"])]
        description = description.replace(" See provenance", (
            f" Except: {', '.join(t['ops'])} (bf16 GEMM, grouped GEMM, attention) from models of the per-shape "
            f"efficiencies {t['name']} measured with TransformerEngine's training kernels on a DGX B200 ({t['file']}), evaluated "
            f"for any shape; the tables' models and entries of these classes are not used. See provenance"))
        if t.get("bandwidths"):
            training += ["--measured-bandwidths", ",".join(t["bandwidths"])]
            description = description.replace(" See provenance", (
                f" The memory-bound bandwidth classes ({', '.join(t['bandwidths'])}) from the same calibration: its "
                f"effective bandwidth (cross entropy and permutes measured, the default class as given) and latency per launch "
                f"(a value of that file, not measured); inside CUDA graphs the "
                f"datasheet presets' 10 us per kernel (graph_latency_us, assumed, to be measured; provenance "
                f"measured_bandwidths). See provenance"))
            description = description.replace("Everything else (peaks, memory-bound classes, MoE",
                                              "Everything else (peaks, MoE")
    out = os.path.join(args.out_dir, spec["out"] + "-measured.json")
    if attention_args:
        description = description.replace(
            "Fused-attention efficiencies for the shapes of the validation cases and example plans: measured "
            "where the table has the shape, else interpolated; backward derived.",
            "Fused attention: a model of the validation cases' and example plans' shapes timed from the table "
            "(measured where the table has the shape, else interpolated; backward derived), evaluated for any "
            "shape.")
    run([args.trainsim, "system", "build", "--base", base_file(spec, work), "--kernels", kernels, "--comm", comm,
         *grids, *grouped, *training, *attention_args, "--out", out, "--name", spec["out"].replace("-", "_") + "_measured",
         "--description", description])
    print(f"{gpu}: wrote {out} ({len(results)} kernel entries: {counts}; {len(files)} NCCL series)")


def nccl_errors(gpu, spec, comm_path):
    """Time error over every table point of each collective: the α–β fit (comm.json) and the
    datasheet preset's network formula, per group size."""
    with open(comm_path) as f:
        comm = json.load(f)
    with open(os.path.join("configs", "system", spec["base"] + ".json")) as f:
        preset = json.load(f)
    fits = {(x["op"], x["n"]): x for x in comm["fits"]}
    out = {}
    for (op, n), fit in sorted(fits.items()):
        pts = [p for p in comm["points"] if p["op"] == op and p["n"] == n]
        ab = [(mt.alpha_beta_time(fit, p["size_bytes"]), p["time_us"] * 1e-6) for p in pts]
        ds = [(mt.system_collective_time(preset["networks"]["high_intra_node"], op, n, p["size_bytes"]),
               p["time_us"] * 1e-6) for p in pts]
        big = [(mt.alpha_beta_time(fit, p["size_bytes"]), p["time_us"] * 1e-6) for p in pts
               if p["size_bytes"] >= 2**20]
        held = mt.size_interpolated_held_out([(p["size_bytes"], p["time_us"] * 1e-6) for p in pts])
        mid = [(pr, t) for s, pr, t in held if 2**20 <= s <= 16 * 2**20]
        out[f"{gpu} nccl {op} x{n}"] = {"alpha_beta": mt.error_summary(ab), "alpha_beta_>=1MiB": mt.error_summary(big),
                                        "size_interpolated_held_out": mt.error_summary([(pr, t) for _, pr, t in held]),
                                        "size_interpolated_held_out_1-16MiB": mt.error_summary(mid),
                                        "datasheet": mt.error_summary(ds),
                                        "fit": {"count": 0, "busbw_gbs": fit["bus_bandwidth_gbs"],
                                                "latency_us": fit["latency_us"]}}
    return out


def model_loo(gpu, spec, root, version, args):
    """Leave-one-out of the simulator's GEMM models (`trainsim system evaluate`) fitted on every
    table point: all points, and those with m >= 256 (training shapes)."""
    work = os.path.join(args.work, gpu)
    os.makedirs(work, exist_ok=True)
    bf16, device = load_gemm(root, gpu, spec, "bfloat16")
    fp8 = bf16 if spec["fp8"] == "bfloat16" else load_gemm(root, gpu, spec, spec["fp8"])[0]
    grids = write_gemm_grids(gpu, spec, version, device, bf16, fp8, work)
    grouped, _ = write_grouped_grids(gpu, dict(spec, moe_ops=list(MOE_DTYPES)), version, root, work)
    out = os.path.join(work, "gemm_models.json")
    run([args.trainsim, "system", "build", "--base", spec["base"], *grids, *grouped, "--out", out])
    for min_m in ("0", "256"):
        print(f"{gpu} GEMM models, " + run([args.trainsim, "system", "evaluate", "--system", out, "--min-m", min_m]),
              end="")


def evaluate(root, version, args):
    """Held-out error of the simulator's GEMM models, of the importer's predictors and of the
    reference interpolation."""
    if not os.access(args.trainsim, os.X_OK):
        fail(f"{args.trainsim}: not built; run `make build` first")
    report = {}
    for gpu in args.gpu:
        spec = GPUS[gpu]
        model_loo(gpu, spec, root, version, args)
        for dtype in ["bfloat16"] + ([spec["fp8"]] if spec["fp8"] != "bfloat16" else []):
            table, _ = load_gemm(root, gpu, spec, dtype)
            ours, base = [], []
            for key, t in table.t.items():
                if key[0] < 256:
                    continue
                b = table.baseline_held_out(key)
                p = table.held_out(key)
                if b is None or p is None:
                    continue
                base.append((b, t))
                ours.append((p, t))
            report[f"{gpu} {dtype}"] = {"baseline": mt.error_summary(base), "predictor": mt.error_summary(ours)}
        # Reproducibility of the table itself: the same bf16 GEMMs timed by a second framework
        # (vLLM, torch.nn.functional.linear → cuBLAS), its median offset removed.
        other = table_path(root, gpu, "gemm", "vllm/0.24.0", "gemm_perf.parquet")
        if os.path.isfile(other):
            ref, _ = load_gemm(root, gpu, spec, "bfloat16")
            rows = read_parquet(other)
            pairs = [(r["latency"] * 1e-3, ref.t[(r["m"], r["n"], r["k"])]) for r in rows
                     if r["gemm_dtype"] == "bfloat16" and r["m"] >= 256 and (r["m"], r["n"], r["k"]) in ref.t]
            if pairs:
                offset = statistics.median(p / t for p, t in pairs)
                report[f"{gpu} bfloat16 vllm vs trtllm"] = {
                    "same_shape": mt.error_summary([(p / offset, t) for p, t in pairs])}
        att = load_attention(root, gpu, spec)
        pairs = []
        for key, t in att.t.items():
            if key[1] >= 512:
                pairs.append((att.predict(*key, exclude=key)[0], t))
        report[f"{gpu} attention"] = {"predictor": mt.error_summary(pairs)}
        # Head dims the table lacks (96, 160 in the validation cases): hold out a whole head dim
        # that has timed head dims on both sides.
        dims = sorted(att.by_dim)
        for d in dims[1:-1]:
            pairs = [(att.predict(*key, skip_dim=d)[0], t) for key, t in att.t.items()
                     if key[1] >= 512 and key[4] == d]
            report[f"{gpu} attention d={d} from other head dims"] = {"predictor": mt.error_summary(pairs)}
        comm = os.path.join(args.work, gpu, "comm.json")
        if os.path.isfile(comm):
            report.update(nccl_errors(gpu, spec, comm))
    for name, r in report.items():
        line = "  ".join(f"{k}: n={v['count']} mean {v['mean']*100:.1f} % p90 {v['p90']*100:.1f} % max "
                         f"{v['max']*100:.0f} %" for k, v in r.items() if v["count"])
        if "fit" in r:
            line = f"B {r['fit']['busbw_gbs']:.0f} GB/s, α {r['fit']['latency_us']:.1f} µs  " + line
        print(f"{name:24s} {line}")


def main(argv):
    ap = argparse.ArgumentParser(prog="import_measurements", description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["build", "evaluate", "deepep"])
    ap.add_argument("--gpu", action="append", choices=sorted(GPUS), help="repeatable; default: all")
    ap.add_argument("--source", help="aiconfigurator-core .whl file or package directory (default: installed)")
    ap.add_argument("--trainsim", default="build/bin/trainsim")
    ap.add_argument("--comm-bench", default="build/bin/comm_bench")
    ap.add_argument("--work", default="build/measured", help="intermediate files (kernels.json, comm.json)")
    ap.add_argument("--out-dir", default="configs/system")
    args = ap.parse_args(argv)
    args.gpu = args.gpu or list(GPUS)
    tmp = None
    try:
        root, version, tmp = package_root(args.source)
        if args.action == "evaluate":
            evaluate(root, version, args)
            return 0
        if args.action == "deepep":
            inner = os.path.join("aiconfigurator_core", "systems", "data", *mt.DEEPEP_TABLE)
            rows = read_parquet(table_path(root, *mt.DEEPEP_TABLE))
            with open(DEEPEP_OUT, "w", encoding="utf-8") as f:
                f.write(mt.deepep_csv(rows, f"{PACKAGE} {version}, {inner}"))
            print(f"{DEEPEP_OUT}: {len(rows)} rows")
            return 0
        for exe in (args.trainsim, args.comm_bench):
            if not os.access(exe, os.X_OK):
                fail(f"{exe}: not built; run `make build` first")
        os.makedirs(args.work, exist_ok=True)
        shapes, plans = collect_shapes(args.trainsim, args.work)
        print(f"{len(shapes)} shapes from {plans} plans")
        for gpu in args.gpu:
            build_gpu(gpu, root, version, shapes, args)
        return 0
    except (InputError, ValueError, OSError) as e:
        print(f"import_measurements: error: {e}", file=sys.stderr)
        return 1
    finally:
        if tmp:
            tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
