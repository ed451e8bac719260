#!/usr/bin/env python3
"""Writes kernels_grid_fixture.json: a small synthetic `kernels_bench --grid` results file (no
GPU measured it) for the `trainsim system build` / `system evaluate` ctests. Its provenance
declares a reduced grid (the merge reads the axes from there); the times follow analytic
efficiencies: GEMM 0.5 (m/64Ki)^0.2 (n/32Ki)^0.1 (k/32Ki)^0.1 of 989 TFLOPS, the grouped pair
0.6 (M/8Ki)^0.3, attention forward 0.55, copies at 85 % of 3.35 TB/s above a 4 us launch floor.

usage: make_grid_fixture.py > kernels_grid_fixture.json
"""
import json

PEAK, MEM, EAGER, GRAPH = 989e12, 3.35e12, 4e-6, 1.5e-6
M, NK = [256, 1024, 4096], [1024, 4096]
SERIES, TOKENS = [{"experts": 8, "hidden": 4096, "inter": 1536}], [128, 512, 2048]


def result(kind, op, key, seconds, flops=0, nbytes=0, launches=1):
    return {"kind": kind, "op": op, "key": key, "status": "ok", "flops": flops, "bytes": nbytes,
            "launches": launches, "time_s": {"n": 20, "median": seconds}}


def main():
    out = []
    for m in M:
        for n in NK:
            for k in NK:
                f = 2 * m * n * k
                eff = 0.5 * (m / 65536) ** 0.2 * (n / 32768) ** 0.1 * (k / 32768) ** 0.1
                out.append(result("compute", "matmul", f"b=1, m={m}, k={k}, n={n}, layout=TN, accumulate=False, "
                                  "out_dtype=bf16", f / (PEAK * eff), flops=f))
    for s in SERIES:
        e, h, i = s["experts"], s["hidden"], s["inter"]
        for t in TOKENS:
            for n, k in ((2 * i, h), (h, i)):
                f = 2 * e * t * n * k
                key = (f"ng={e}, M={t}, N={n}, K={k}, dtype=bf16, out_dtype=bf16, main_grad_dtype=fp32, stage=fwd, "
                       "grad=False, accumulate=False, use_split_accumulator=False, single_output=True")
                out.append(result("compute", "group_matmul", key, f / (PEAK * 0.6 * (t / 8192) ** 0.3), flops=f))
    for seq in (2048, 4096, 8192):
        f = 2 * seq * seq * 32 * 256
        key = (f"batch=1, seq_len={seq}, head_num=32, kv_head_num=8, qk_head_dim=128, v_head_dim=128, "
               "qkv_contiguous=True")
        out.append(result("compute", "sdp_fwd", key, f / (PEAK * 0.55), flops=f))
    for size in (64 << 20, 1 << 30):
        out.append(result("memory", "default", f"bytes={size}", 2 * size / (MEM * 0.85) + EAGER, nbytes=2 * size))
    out.append(result("latency", "eager_launch_floor", "fill_4kib_x256", EAGER))
    out.append(result("latency", "graph_launch_floor", "fill_4kib_x256", GRAPH))
    grid = {"families": ["gemm", "grouped", "attention", "memory"], "dtypes": ["bf16"],
            "gemm": {"m": M, "n": NK, "k": NK, "layout": "TN", "out_dtype": "bf16"},
            "grouped": {"series": SERIES, "tokens": TOKENS},
            "attention": {"batch": 1, "heads": [32], "gqa_ratio": [4], "seq": [2048, 4096, 8192],
                          "head_dims": [[128, 128]], "mask": "causal"},
            "memory": {"copy_bytes": [64 << 20, 1 << 30], "tokens": []}}
    doc = {"schema_version": "1.0.0", "kind": "trainsim-kernels",
           "device": {"name": "Synthetic H100 (no measurement)", "peak_mem_bandwidth_bytes_per_s": MEM,
                      "peak_bf16_tflops": 989, "peak_fp8_tflops": 1979},
           "provenance": {"tool": "kernels_bench", "version": "synthetic",
                          "command": "tests/data/kernels/make_grid_fixture.py", "grid": grid},
           "results": out}
    print(json.dumps(doc, indent=0))


if __name__ == "__main__":
    main()
