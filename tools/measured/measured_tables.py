"""Converter logic of the measured-systems importer, free of I/O and of pyarrow.

Turns rows of NVIDIA's published kernel and NCCL tables (aiconfigurator-core) into the records
trainsim's own benches write: kernels.json results (kernels_bench) and nccl-tests JSON documents
(read by `comm_bench --from-nccl-tests`). Units: table latencies are milliseconds, everything
returned here is SI (seconds, bytes, FLOP) except where a trainsim file format says otherwise.
"""

import bisect
import json
import math
import os
import statistics

# The simulator's op classes (calibration/op_class.h) as `trainsim system op-classes` prints them;
# ctest cli_op_classes_list keeps this copy equal to the binary's table.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_classes.json"), encoding="utf-8") as _f:
    OP_CLASSES = {row["name"]: row for row in json.load(_f)}
ATTENTION_OPS = tuple(name for name, row in OP_CLASSES.items() if row["family"] == "attention")

# Bytes of one element of an NCCL table's `nccl_dtype`. The tables' message_size counts elements:
# at equal message_size the half rows take twice as long as the int8 rows in the bandwidth regime,
# and half·2 bytes gives the 8-GPU H100 all-reduce a bus bandwidth of 445 GB/s (NVLink 4 with
# NVLS), where bytes would give 222 GB/s and elements·2 for all-gather stays under the 450 GB/s
# per-direction link (see docs/calibration.md).
NCCL_DTYPE_BYTES = {"half": 2, "bfloat16": 2, "float": 4, "int8": 1, "fp8": 1}

# nccl-tests bus-bandwidth factors (busbw = algbw · factor), as comm_bench uses them.
def busbw_factor(op, n):
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    return (n - 1) / n


NCCL_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
            "alltoall": "alltoall"}

# Rows of the m (token) dimension are interpolated as padded to this multiple: a GEMM whose m is
# just past a tile boundary pays for a partial tile. Chosen by held-out error on the H100 bf16
# table (mean 4.05 % at 32, 4.06 % unpadded, 4.24 % at 128, 4.52 % at 256): the split into the m
# and m+1 grids (_series) already carries most of the tile effect.
GEMM_M_TILE = 32


def nccl_tests_documents(rows, device, nccl_version, dtype="half"):
    """Groups NCCL table rows (dicts with op_name, num_gpus, message_size, latency in ms,
    nccl_dtype) of one dtype into nccl-tests `-J` style documents, one per (collective, group
    size): sizes in bytes, out-of-place time in µs, bandwidths in GB/s (1e9 B/s). Returns a list
    of (name, document) sorted by name. Raises ValueError for an unknown collective or dtype."""
    if dtype not in NCCL_DTYPE_BYTES:
        raise ValueError(f"nccl_dtype '{dtype}': unknown; known: {', '.join(sorted(NCCL_DTYPE_BYTES))}")
    series = {}
    for r in rows:
        if r["nccl_dtype"] != dtype:
            continue
        op = r["op_name"]
        if op not in NCCL_OPS:
            raise ValueError(f"op_name '{op}': unknown collective; known: {', '.join(sorted(NCCL_OPS))}")
        series.setdefault((op, int(r["num_gpus"])), []).append(r)
    docs = []
    for (op, n), rs in sorted(series.items()):
        results = []
        for r in sorted(rs, key=lambda r: r["message_size"]):
            size = int(r["message_size"]) * NCCL_DTYPE_BYTES[dtype]
            t_us = float(r["latency"]) * 1e3
            algbw = size / (t_us * 1e-6) / 1e9
            results.append({"size": size, "count": int(r["message_size"]), "type": dtype,
                            "out_of_place": {"time": t_us, "alg_bw": algbw, "bus_bw": algbw * busbw_factor(op, n)}})
        doc = {"collective": NCCL_OPS[op], "nccl_version": nccl_version,
               "ranks": [{"rank": i, "hostname": "node0", "device_name": device} for i in range(n)],
               "results": results}
        docs.append((f"{op}_x{n}", doc))
    return docs


def _pad_m(m):
    return math.ceil(m / GEMM_M_TILE) * GEMM_M_TILE


def _series(m):
    """The tables time every m and m+1 on separate grids (e.g. 4096 and 4097); m that is not a
    multiple of 16 pays a partial tile like the m+1 rows, so it is interpolated on that grid."""
    return 0 if m % 16 == 0 or m < 16 else 1


def _bracket(grid, x):
    """(lo, hi, weight of hi) for x on a sorted grid, clamped at the ends."""
    if x <= grid[0]:
        return grid[0], grid[0], 0.0
    if x >= grid[-1]:
        return grid[-1], grid[-1], 0.0
    i = bisect.bisect_left(grid, x)
    if grid[i] == x:
        return x, x, 0.0
    lo, hi = grid[i - 1], grid[i]
    return lo, hi, (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))


class GemmTable:
    """Measured GEMM times of one device and dtype: t(m, n, k) for y[m,n] = x[m,k]·W[n,k]ᵀ.

    predict() returns the measurement when (m, n, k) was timed, else interpolates
    y = log(t / (pad(m)·n·k)) (log of the inverse throughput on padded rows) trilinearly in
    (log m, log n, log k) over the grid of m's series, holding y constant beyond the grid (the
    throughput of the largest measured shape). Times are seconds."""

    def __init__(self, rows):
        """rows: iterable of (m, n, k, time_s)."""
        self.t = {}
        for m, n, k, t in rows:
            if t <= 0:
                raise ValueError(f"gemm m={m} n={n} k={k}: time must be > 0, got {t}")
            self.t[(int(m), int(n), int(k))] = float(t)
        if not self.t:
            raise ValueError("gemm table has no rows")
        self.ms = [sorted({m for (m, _, _) in self.t if _series(m) == s}) for s in (0, 1)]
        self.ns = sorted({n for (_, n, _) in self.t})
        self.ks = sorted({k for (_, _, k) in self.t})

    def _y(self, key):
        t = self.t.get(key)
        return None if t is None else math.log(t / (_pad_m(key[0]) * key[1] * key[2]))

    def predict(self, m, n, k):
        """(time_s, 'measured' | 'interpolated')."""
        if (m, n, k) in self.t:
            return self.t[(m, n, k)], "measured"
        grid = self.ms[_series(m)] or self.ms[0]
        (m0, m1, wm), (n0, n1, wn), (k0, k1, wk) = _bracket(grid, m), _bracket(self.ns, n), _bracket(self.ks, k)
        acc = wsum = 0.0
        for mm, a in ((m0, 1 - wm), (m1, wm)):
            for nn, b in ((n0, 1 - wn), (n1, wn)):
                for kk, c in ((k0, 1 - wk), (k1, wk)):
                    w = a * b * c
                    y = self._y((mm, nn, kk)) if w > 0 else None
                    if y is not None:
                        acc += w * y
                        wsum += w
        if wsum == 0:
            raise ValueError(f"gemm m={m} n={n} k={k}: no measured neighbours")
        return math.exp(acc / wsum) * _pad_m(m) * n * k, "interpolated"

    def held_out(self, key):
        """Predicts a measured grid node without it: along each axis, log-linear interpolation
        of y between the nearest measured nodes on either side (m on the node's own series);
        the mean of the axes that have both neighbours. None when no axis has."""
        m, n, k = key
        est = []
        for axis, grid in ((0, self.ms[_series(m)]), (1, self.ns), (2, self.ks)):
            i = bisect.bisect_left(grid, key[axis])
            lo = hi = None
            for v in reversed(grid[:i]):
                p = list(key); p[axis] = v
                if (y := self._y(tuple(p))) is not None:
                    lo = (v, y); break
            for v in grid[i + 1:]:
                p = list(key); p[axis] = v
                if (y := self._y(tuple(p))) is not None:
                    hi = (v, y); break
            if lo and hi:
                w = (math.log(key[axis]) - math.log(lo[0])) / (math.log(hi[0]) - math.log(lo[0]))
                est.append(lo[1] + w * (hi[1] - lo[1]))
        if not est:
            return None
        return math.exp(sum(est) / len(est)) * _pad_m(m) * n * k

    def baseline_held_out(self, key):
        """The reference predictor: log-space interpolation of t between the neighbouring m of
        the same (n, k), both series mixed. None at the ends of the m grid."""
        m, n, k = key
        if not hasattr(self, "_ms_by_nk"):
            self._ms_by_nk = {}
            for (mm, nn, kk) in self.t:
                self._ms_by_nk.setdefault((nn, kk), []).append(mm)
            for v in self._ms_by_nk.values():
                v.sort()
        ms = self._ms_by_nk[(n, k)]
        i = bisect.bisect_left(ms, m)
        if i == 0 or i == len(ms) - 1:
            return None
        a, b = ms[i - 1], ms[i + 1]
        w = (math.log(m) - math.log(a)) / (math.log(b) - math.log(a))
        ya, yb = math.log(self.t[(a, n, k)]), math.log(self.t[(b, n, k)])
        return math.exp(ya + w * (yb - ya))


def error_summary(pairs):
    """pairs: (predicted, measured). Returns count, mean, p90 and max of |pred/meas − 1|."""
    errs = sorted(abs(p / t - 1) for p, t in pairs)
    if not errs:
        return {"count": 0}
    p90 = errs[min(len(errs) - 1, math.ceil(0.9 * len(errs)) - 1)]
    return {"count": len(errs), "mean": statistics.fmean(errs), "p90": p90, "max": errs[-1]}


class AttentionTable:
    """Measured causal fused-attention forward times (context attention, bf16):
    t(batch, seq, heads, kv_heads, head_dim), seconds.

    predict() returns the measurement when the shape was timed, else scales the nearest
    measured shapes of the same head_dim by the FLOP ratio: y = log(t / (batch·heads·seq²)) is
    averaged over the 4 nearest shapes in (2·|Δlog seq|, |Δlog(batch·heads)|, |Δlog(heads/kv)|),
    weighted by inverse distance. A head_dim the table lacks is predicted at the nearest timed
    head dims on either side and interpolated log-linearly in head_dim on the time per FLOP
    (held constant past the last timed head dim)."""

    def __init__(self, rows):
        """rows: iterable of (batch, seq, heads, kv_heads, head_dim, time_s)."""
        self.t = {}
        for b, s, h, kv, d, t in rows:
            if t <= 0:
                raise ValueError(f"attention batch={b} seq={s} heads={h}: time must be > 0, got {t}")
            self.t[(int(b), int(s), int(h), int(kv), int(d))] = float(t)
        if not self.t:
            raise ValueError("attention table has no rows")
        self.by_dim = {}
        for key, t in self.t.items():
            b, s, h, kv, d = key
            self.by_dim.setdefault(d, []).append((math.log(s), math.log(b * h), math.log(h / kv),
                                                  math.log(t / (b * h * s * s)), key))

    def _across_head_dims(self, b, s, h, kv, d, skip_dim):
        dims = sorted(x for x in self.by_dim if x != skip_dim)
        if not dims:
            return None
        lo = max((x for x in dims if x < d), default=None)
        hi = min((x for x in dims if x > d), default=None)
        # Time per FLOP (∝ t / d at fixed batch, heads and seq) at each bracketing head dim.
        ys = {x: math.log(self.predict(b, s, h, kv, x)[0] / x) for x in (lo, hi) if x is not None}
        if lo is None or hi is None:
            y = next(iter(ys.values()))
        else:
            w = (math.log(d) - math.log(lo)) / (math.log(hi) - math.log(lo))
            y = ys[lo] + w * (ys[hi] - ys[lo])
        return math.exp(y) * d, "interpolated_head_dim"

    def predict(self, b, s, h, kv, d, exclude=None, skip_dim=None):
        """(time_s, 'measured' | 'interpolated' | 'interpolated_head_dim'), or None when the
        table is empty. `exclude` drops one measured key, `skip_dim` one head dim (held-out
        evaluation)."""
        key = (b, s, h, kv, d)
        if exclude is None and skip_dim != d and key in self.t:
            return self.t[key], "measured"
        cands = self.by_dim.get(d) if d != skip_dim else None
        if not cands:
            return self._across_head_dims(b, s, h, kv, d, skip_dim)
        ls, lbh, lr = math.log(s), math.log(b * h), math.log(h / kv)
        dist = sorted((2 * abs(c[0] - ls) + abs(c[1] - lbh) + abs(c[2] - lr), c[3])
                      for c in cands if c[4] != exclude)
        near = dist[:4]
        if near and near[0][0] == 0:
            y = near[0][1]
        else:
            wsum = sum(1 / dd for dd, _ in near)
            y = sum(yy / dd for dd, yy in near) / wsum
        return math.exp(y) * b * h * s * s, "interpolated"


def parse_key(key):
    """'b=1, m=4096, ...' → {'b': '1', 'm': '4096', ...} (trainsim shape keys)."""
    out = {}
    for part in key.split(", "):
        name, _, value = part.partition("=")
        out[name] = value
    return out


def matmul_problem(key):
    """(rows, cols, reduction) of a matmul key: the key's dims are the GEMM's own for every
    layout (kernels_bench maps b·m rows, n columns, k reduction onto cuBLAS), so a data or
    weight gradient (NN, NT) is the forward-layout (TN) GEMM of the same dims."""
    f = parse_key(key)
    return int(f["b"]) * int(f["m"]), int(f["n"]), int(f["k"])


def gemm_flops(key):
    f = parse_key(key)
    return 2.0 * int(f["b"]) * int(f["m"]) * int(f["n"]) * int(f["k"])


def sdp_flops(op, key):
    """Simulator convention: forward 2·B·S²·max(h, h_kv)·(d_qk + d_v), backward 2.5× that."""
    f = parse_key(key)
    fwd = 2.0 * int(f["batch"]) * int(f["seq_len"]) ** 2 * max(int(f["head_num"]), int(f["kv_head_num"])) * \
        (int(f["qk_head_dim"]) + int(f["v_head_dim"]))
    return fwd * (2.5 if OP_CLASSES[op]["backward"] else 1.0)


# Backward attention is not in the tables. Published FlashAttention results put the backward
# kernel's efficiency (on its 2.5× FLOP count) at 0.86× the forward's on A100 (FlashAttention-2,
# Dao 2023: 73 % vs 63 % of peak) and about 0.7× on H100 (FlashAttention-3, Shah et al. 2024);
# 0.75 is used for every GPU.
SDP_BWD_EFFICIENCY_RATIO = 0.75


def _count(counts, op, what):
    counts[f"{op}:{what}"] = counts.get(f"{op}:{what}", 0) + 1


def kernel_results(shapes, gemm_by_op, attention):
    """kernels.json result records for the shapes (dicts with op and key, as trainsim shapes
    writes them). gemm_by_op maps matmul / fp8_matmul to a GemmTable (absent: not imported);
    attention is an AttentionTable or None. Shapes that cannot be derived are skipped and
    counted. Returns (results, counts by how each time was obtained)."""
    results, counts = [], {}
    for s in shapes:
        op, key = s["op"], s["key"]
        impl = None
        if op in gemm_by_op:
            t, how = gemm_by_op[op].predict(*matmul_problem(key))
            layout = parse_key(key)["layout"]
            impl = how if layout == "TN" else f"{how}_as_tn"
            flops = gemm_flops(key)
        elif op in ATTENTION_OPS and attention is not None:
            f = parse_key(key)
            d_qk, d_v = int(f["qk_head_dim"]), int(f["v_head_dim"])
            # MLA (d_qk != d_v, not in the tables): its products Q·Kᵀ over d_qk and P·V over d_v
            # do the FLOPs of two over the mean head dim, so it is timed at head dim (d_qk + d_v)/2.
            d = d_qk if d_qk == d_v else (d_qk + d_v) / 2
            t, how = attention.predict(int(f["batch"]), int(f["seq_len"]), int(f["head_num"]),
                                       int(f["kv_head_num"]), d)
            flops = sdp_flops(op, key)
            impl = how if d_qk == d_v else f"{how}_mla_as_head_dim_{d:g}"
            if OP_CLASSES[op]["backward"]:
                # t_bwd = 2.5·t_fwd / ratio: the backward runs 2.5× the FLOPs at ratio× the rate.
                t = 2.5 * t / SDP_BWD_EFFICIENCY_RATIO
                impl = f"derived_from_{how}_fwd"
        else:
            _count(counts, op, "skipped_no_table")
            continue
        _count(counts, op, impl)
        results.append({"kind": "compute", "op": op, "key": key, "status": "ok", "impl": impl, "flops": flops,
                        "launches": 1, "time_s": {"n": 1, "median": t}})
    return results, counts


# Simulator bytes of a collective (comm_bench fit x): size·scale·(n + offset)/n.
COLLECTIVE_SCALE_OFFSET = {"all_reduce": (2, -1), "all_gather": (1, -1), "reduce_scatter": (1, -1),
                           "all2all": (1, -1)}


def model_bytes(op, n, size):
    scale, offset = COLLECTIVE_SCALE_OFFSET[op]
    return size * scale * (n + offset) / n


def alpha_beta_time(fit, size):
    """Seconds of comm.json fit (latency_us, bus_bandwidth_gbs) for a size in bytes."""
    return fit["latency_us"] * 1e-6 + model_bytes(fit["op"], fit["n"], size) / (fit["bus_bandwidth_gbs"] * 1e9)


def size_interpolated_held_out(points):
    """Leave-one-out of a size-dependent collective model: time interpolated linearly in
    (log size, log time) between the measured sizes of one (collective, group size) series, each
    interior point predicted from its two neighbours without it (the ends have one side only and
    are left out). points: (size_bytes, seconds). Returns (size, predicted, measured) triples."""
    pts = sorted(points)
    out = []
    for i in range(1, len(pts) - 1):
        (s0, t0), (s, t), (s1, t1) = pts[i - 1], pts[i], pts[i + 1]
        w = (math.log(s) - math.log(s0)) / (math.log(s1) - math.log(s0))
        out.append((s, math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0))), t))
    return out


def system_collective_time(network, op, n, size, num_per_node=8):
    """Seconds the simulator's network formula (SimuMax compute_net_op_time) gives for one
    collective of `size` bytes on a group of n inside `network` (a system JSON networks entry):
    x/(gbps·2^30·eff) + latency·h(n) + fixed(n), h(n) = (n + offset)·scale for a collective
    when num_per_node is 8."""
    o = network["op"][op]
    bw = network["bandwidth"]
    eff = o.get("efficient_factor", bw.get("efficient_factor", 1))
    lat = o.get("latency_us", bw.get("latency_us", 0))
    hops = (n + o["offset"]) * o["scale"] if num_per_node == 8 else 1
    fixed = o.get("fixed_latency_us_by_comm_num", {}).get(str(n), o.get("fixed_latency_us", 0))
    x = model_bytes(op, n, size)
    return x / (bw["gbps"] * 2**30 * eff) + (lat * hops + fixed) * 1e-6


# MoE expert GEMMs from the fused-MoE tables (moe_perf.parquet). A row times TensorRT-LLM's
# fused MoE (torch flow, cutlass grouped GEMMs) on one rank of a moe_tp × moe_ep group:
# num_tokens tokens, each routed to topk of num_experts experts; the rank holds
# num_experts / moe_ep experts with inter_size / moe_tp columns each. num_tokens counts the tokens
# of the whole EP group (the table's own check: at 16,384 tokens Qwen3-30B-A3B's experts, h 2048,
# I 768, 128 experts, top-8, take 1.37 ms at EP 1 and 0.23 ms at EP 8; were the tokens the
# rank's own, EP 8 would do EP 1's work 6× faster, at 2.4× the B200's bf16 peak). With balanced
# routing every expert gets num_tokens·topk / num_experts tokens.
#
# Besides the two GEMMs (gated up projection n = 2I, k = h; down projection n = h, k = I, together
# 6·M·E·h·I FLOPs) the fused kernel runs the expansion of the inputs into expert order (with their
# fp8 quantisation in the fp8 rows), the gated activation between the GEMMs and the finalize
# (un-permutation and top-k weighted sum). trainsim times its permute, activation and unpermute
# ops apart, so their memory-bound time is taken off each row (moe_extra_bytes at the preset's
# memory-bound rate, no per-launch floor) before the GEMM pair's time is derived.
MOE_KERNEL_SOURCE = "moe_torch_flow_cutlass"
MOE_FIT_DISTRIBUTION = "balanced"
# Rows of moe_ep_size 1 only: there the kernel times exactly the rank's experts, every routed
# token local, as Megatron's grouped GEMM after the dispatch. Under EP the timed op still expands
# and finalizes the tokens of the whole group (the rank's GEMMs take 1/ep of them): at equal
# tokens per expert its efficiency is lower and its series are rough (held-out error along the
# tokens, B200 bf16: 6.5 % mean over every EP against 2.8 % at EP 1; H100 bf16 13.4 % / 2.6 %).
MOE_FIT_EP = 1

# Bytes per element of the expanded GEMM inputs (the permuted tokens before the up projection, the
# activation's output before the down projection): 1 where the row's dtype quantises activations
# to fp8, else bf16's 2. The GEMM outputs (the up projection's 2I columns, the down projection's h
# columns before the finalize) and the layer's input and output are bf16.
MOE_QUANTISED_BYTES = {"fp8": 1, "fp8_block": 1}
# A row whose extra kernels would take more than this share of its latency keeps its latency.
MOE_EXTRA_MAX_SHARE = 0.5


def moe_extra_bytes(tokens, topk, hidden, inter, dtype):
    """Bytes the fused MoE's non-GEMM kernels move on one rank (TensorRT-LLM's cutlass fused MoE
    flow, moe_kernels.cu: expandInputRowsKernel, doActivationKernel, finalizeMoeRoutingKernel;
    the routing scales and indices, T·k values, are left out), T tokens, top-k, hidden h, the rank's inter I, e = bytes of the
    expanded GEMM inputs (MOE_QUANTISED_BYTES):
      expand:   read T·h·2, write T·k·h·e      (every token copied once per chosen expert)
      SwiGLU:   read T·k·2I·2, write T·k·I·e   (gate and up halves of the first GEMM's output)
      finalize: read T·k·h·2, write T·h·2      (un-permute and top-k weighted sum)"""
    t, k, h, i = tokens, topk, hidden, inter
    e = MOE_QUANTISED_BYTES.get(dtype, 2)
    return (t * h * 2 + t * k * h * e) + (t * k * 2 * i * 2 + t * k * i * e) + (t * k * h * 2 + t * h * 2)


def moe_gemm_time(row, dtype, bytes_per_s, counts=None):
    """Seconds of a row's GEMM pair: the table latency less its extra kernels' bytes at
    bytes_per_s (no per-launch floor: they run back to back inside the fused op). A row the
    subtraction would leave with less than 1 − MOE_EXTRA_MAX_SHARE of its latency keeps it
    (counts["kept"]; counts["rows"] counts every row)."""
    t = float(row["latency"]) * 1e-3
    extra = moe_extra_bytes(int(row["num_tokens"]), int(row["topk"]), int(row["hidden_size"]),
                            int(row["inter_size"]) // int(row["moe_tp_size"]), dtype) / bytes_per_s
    if counts is not None:
        counts["rows"] = counts.get("rows", 0) + 1
    if extra > MOE_EXTRA_MAX_SHARE * t:
        if counts is not None:
            counts["kept"] = counts.get("kept", 0) + 1
        return t
    return t - extra


def moe_grouped_series(rows, dtype, bytes_per_s, counts=None):
    """Grouped-GEMM series of one dtype from moe_perf rows (dicts): balanced cutlass rows of EP 1
    with at least one token per expert (fewer leave experts idle: the kernel then reads only the active
    experts' weights), each row's time its GEMM pair's (moe_gemm_time at bytes_per_s). Returns a list of {experts, hidden, inter, tokens, time_s} (per rank,
    tokens per expert increasing, seconds), one per (experts, hidden, inter); a count timed in
    several rows (different topk or expert counts giving the same per-rank shape): the
    geometric mean."""
    series = {}
    for r in rows:
        if r["kernel_source"] != MOE_KERNEL_SOURCE or r["moe_dtype"] != dtype or \
                r["distribution"] != MOE_FIT_DISTRIBUTION:
            continue
        ne, ep, tp = int(r["num_experts"]), int(r["moe_ep_size"]), int(r["moe_tp_size"])
        if ep != MOE_FIT_EP or int(r["inter_size"]) % tp:
            continue
        tokens = r["num_tokens"] * r["topk"] / ne
        if tokens < 1:
            continue
        key = (ne, int(r["hidden_size"]), int(r["inter_size"]) // tp)
        series.setdefault(key, {}).setdefault(tokens, []).append(moe_gemm_time(r, dtype, bytes_per_s, counts))
    out = []
    for (e, h, i), pts in sorted(series.items()):
        ms = sorted(pts)
        out.append({"experts": e, "hidden": h, "inter": i, "tokens": ms,
                    "time_s": [math.exp(statistics.fmean(math.log(t) for t in pts[m])) for m in ms]})
    return out


def moe_uneven_tokens(rows, dtype, series, bytes_per_s):
    """Uneven routing: for every power-law row of a shape the balanced series measured (its time the
    GEMM pair's as in the series, moe_gemm_time at bytes_per_s), the tokens
    per expert at which the balanced series takes the same time (log-log interpolation, inside
    the series' range), as a multiple of the row's mean tokens per expert. Returns
    {distribution: [ratios]}: the load of the expert that sets the grouped GEMM's time."""
    by_shape = {(s["experts"], s["hidden"], s["inter"]): s for s in series}
    out = {}
    for r in rows:
        if r["kernel_source"] != MOE_KERNEL_SOURCE or r["moe_dtype"] != dtype or \
                not r["distribution"].startswith("power_law"):
            continue
        ne, ep, tp = int(r["num_experts"]), int(r["moe_ep_size"]), int(r["moe_tp_size"])
        if ep != MOE_FIT_EP or int(r["inter_size"]) % tp:
            continue
        s = by_shape.get((ne, int(r["hidden_size"]), int(r["inter_size"]) // tp))
        tokens = r["num_tokens"] * r["topk"] / ne
        if s is None or tokens < 16:
            continue
        t = moe_gemm_time(r, dtype, bytes_per_s)
        ms, ts = s["tokens"], s["time_s"]
        for j in range(1, len(ms)):
            if ts[j - 1] <= t <= ts[j] and ts[j] > ts[j - 1]:
                w = (math.log(t) - math.log(ts[j - 1])) / (math.log(ts[j]) - math.log(ts[j - 1]))
                out.setdefault(r["distribution"], []).append(
                    math.exp(math.log(ms[j - 1]) + w * (math.log(ms[j]) - math.log(ms[j - 1]))) / tokens)
                break
    return out


# DeepEP's normal (prefill) dispatch and combine kernels measured under SGLang on H100 nodes of
# 8 GPUs (the package's h100_sxm comm/sglang tables): tests/model/deepep_measured_test.cpp reads
# the copy in tests/data/deepep. The columns that hold one value in every row go to the header.
DEEPEP_TABLE = ("h100_sxm", "comm", "sglang/0.5.6.post2", "wideep_deepep_normal_perf.parquet")
DEEPEP_CONSTANT = ("framework", "version", "device", "op_name", "kernel_source")
DEEPEP_COLUMNS = ("node_num", "num_token", "hidden_size", "num_topk", "num_experts", "dispatch_sms",
                  "dispatch_transmit_us", "dispatch_notify_us", "combine_sms", "combine_transmit_us",
                  "combine_notify_us")


def deepep_csv(rows, origin):
    """CSV text of the DeepEP table: '#' lines naming `origin` and the one-valued columns, the
    header, then one line per row sorted by nodes, SMs and tokens (times in microseconds as
    the table has them)."""
    if not rows:
        raise ValueError(f"{origin}: the DeepEP table has no rows")
    lines = [f"# {origin}"]
    for c in DEEPEP_CONSTANT:
        values = sorted({str(r[c]) for r in rows})
        if len(values) != 1:
            raise ValueError(f"{origin}: column {c} holds {len(values)} values ({', '.join(values)}), expected one")
        lines.append(f"# {c}: {values[0]}")
    lines.append(",".join(DEEPEP_COLUMNS))
    for r in sorted(rows, key=lambda r: (r["node_num"], r["dispatch_sms"], r["num_token"])):
        lines.append(",".join(f"{r[c]:.10g}" if isinstance(r[c], float) else str(r[c]) for c in DEEPEP_COLUMNS))
    return "\n".join(lines) + "\n"
