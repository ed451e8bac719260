"""Unit tests of the measured-tables converter on small tables written here (no pyarrow, no
aiconfigurator-core needed)."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "measured"))
import measured_tables as mt  # noqa: E402

TN = "b=1, m={m}, k={k}, n={n}, layout={layout}, accumulate=False, out_dtype=bf16"
SDP = "batch={b}, seq_len={s}, head_num={h}, kv_head_num={kv}, qk_head_dim={d}, v_head_dim={dv}, qkv_contiguous=True"


def nccl_row(op, n, size, ms, dtype="half"):
    return {"op_name": op, "num_gpus": n, "message_size": size, "latency": ms, "nccl_dtype": dtype}


class NcclDocumentsTest(unittest.TestCase):
    def test_message_size_counts_elements_of_the_dtype(self):
        rows = [nccl_row("all_reduce", 8, 268435456, 2.11106), nccl_row("all_reduce", 8, 256, 0.01),
                nccl_row("all_reduce", 8, 268435456, 1.37870, "int8")]
        docs = mt.nccl_tests_documents(rows, "NVIDIA H100 80GB HBM3", "2.29.2")
        self.assertEqual([name for name, _ in docs], ["all_reduce_x8"])
        doc = docs[0][1]
        self.assertEqual(doc["collective"], "all_reduce")
        self.assertEqual(len(doc["ranks"]), 8)
        self.assertEqual({r["hostname"] for r in doc["ranks"]}, {"node0"})
        self.assertEqual([r["size"] for r in doc["results"]], [512, 536870912])
        big = doc["results"][1]["out_of_place"]
        self.assertAlmostEqual(big["time"], 2111.06)
        # algbw = 536870912 B / 2.11106 ms = 254.31 GB/s; busbw = algbw · 2·7/8 = 445.05 GB/s.
        self.assertAlmostEqual(big["alg_bw"], 254.3134311672809, places=9)
        self.assertAlmostEqual(big["bus_bw"], 445.04850454274157, places=9)

    def test_busbw_factors_of_the_other_collectives(self):
        rows = [nccl_row(op, 4, 1024, 1.0) for op in ("all_gather", "reduce_scatter", "alltoall")]
        docs = dict(mt.nccl_tests_documents(rows, "GPU", "2.0"))
        for name in ("all_gather_x4", "reduce_scatter_x4", "alltoall_x4"):
            r = docs[name]["results"][0]["out_of_place"]
            self.assertAlmostEqual(r["bus_bw"], r["alg_bw"] * 0.75)

    def test_unknown_collective_and_dtype_are_errors(self):
        with self.assertRaises(ValueError) as e:
            mt.nccl_tests_documents([nccl_row("broadcast", 2, 8, 1.0)], "GPU", "2.0")
        self.assertEqual(str(e.exception),
                         "op_name 'broadcast': unknown collective; known: all_gather, all_reduce, alltoall, "
                         "reduce_scatter")
        with self.assertRaises(ValueError) as e:
            mt.nccl_tests_documents([], "GPU", "2.0", dtype="fp64")
        self.assertEqual(str(e.exception), "nccl_dtype 'fp64': unknown; known: bfloat16, float, fp8, half, int8")


class GemmTableTest(unittest.TestCase):
    def setUp(self):
        # Throughput per padded row doubles from m=256 to m=512 (n = k = 1024).
        self.table = mt.GemmTable([(256, 1024, 1024, 1e-5), (512, 1024, 1024, 4e-5),
                                   (256, 2048, 1024, 2e-5), (512, 2048, 1024, 8e-5)])

    def test_measured_shape_is_returned_as_is(self):
        self.assertEqual(self.table.predict(512, 1024, 1024), (4e-5, "measured"))

    def test_interpolates_log_throughput_on_padded_rows(self):
        # m=384: weight ln(384/256)/ln 2 = 0.585 of the way; the time per padded row goes from
        # 1e-5/256 to 4e-5/512 (×2), so 2^0.585 = 1.5 → t = 1e-5/256 · 1.5 · 384 = 2.25e-5.
        t, how = self.table.predict(384, 1024, 1024)
        self.assertEqual(how, "interpolated")
        self.assertAlmostEqual(t, 2.25e-5, delta=1e-15)
        # n halfway in log space between 1024 and 2048: both planes have the same throughput.
        t, _ = self.table.predict(384, 1448, 1024)
        self.assertAlmostEqual(t, 2.25e-5 * 1448 / 1024, delta=1e-15)

    def test_rows_past_a_tile_boundary_pay_a_whole_tile(self):
        # m=300 pads to 320 rows (32-row multiples) and belongs to the m+1 grid; with no such
        # rows it falls back to the aligned grid: 1e-5/256 · 2^(ln(300/256)/ln 2) · 320.
        t, _ = self.table.predict(300, 1024, 1024)
        self.assertAlmostEqual(t, 1e-5 / 256 * (300 / 256) * 320, delta=1e-15)

    def test_beyond_the_grid_throughput_is_held(self):
        t, _ = self.table.predict(1024, 1024, 1024)
        self.assertAlmostEqual(t, 4e-5 / 512 * 1024, delta=1e-15)

    def test_held_out_and_baseline_predict_from_the_neighbours(self):
        # Constant throughput at 256 and 1024; the middle point is 10 % slower than that.
        c = 1e-8
        table = mt.GemmTable([(256, 512, 512, c * 256), (512, 512, 512, 1.1 * c * 512), (1024, 512, 512, c * 1024)])
        self.assertAlmostEqual(table.held_out((512, 512, 512)), c * 512, delta=1e-18)
        self.assertAlmostEqual(table.baseline_held_out((512, 512, 512)), c * 512, delta=1e-18)
        self.assertIsNone(table.baseline_held_out((256, 512, 512)))
        self.assertIsNone(table.held_out((256, 512, 512)))

    def test_non_positive_time_is_an_error(self):
        with self.assertRaises(ValueError) as e:
            mt.GemmTable([(1, 2, 3, 0.0)])
        self.assertEqual(str(e.exception), "gemm m=1 n=2 k=3: time must be > 0, got 0.0")


class SummaryAndKeysTest(unittest.TestCase):
    def test_error_summary(self):
        s = mt.error_summary([(1.1, 1), (0.9, 1), (1.0, 1), (1.5, 1)])
        self.assertEqual(s["count"], 4)
        self.assertAlmostEqual(s["mean"], (0.1 + 0.1 + 0 + 0.5) / 4)
        self.assertAlmostEqual(s["p90"], 0.5)
        self.assertAlmostEqual(s["max"], 0.5)
        self.assertEqual(mt.error_summary([]), {"count": 0})

    def test_gradient_gemm_is_the_same_problem(self):
        key = TN.format(m=9216, k=2048, n=12288, layout="NT")
        self.assertEqual(mt.matmul_problem(key), (9216, 12288, 2048))
        self.assertEqual(mt.gemm_flops(key), 2.0 * 9216 * 12288 * 2048)

    def test_sdp_flops_follow_the_simulator_convention(self):
        key = SDP.format(b=1, s=4096, h=32, kv=8, d=128, dv=128)
        fwd = 2.0 * 4096 ** 2 * 32 * 256
        self.assertEqual(mt.sdp_flops("sdp_fwd", key), fwd)
        self.assertEqual(mt.sdp_flops("sdp_bwd", key), 2.5 * fwd)


class KernelResultsTest(unittest.TestCase):
    def test_records_and_derivations(self):
        gemm = mt.GemmTable([(4096, 4096, 4096, 2e-4)])
        att = mt.AttentionTable([(1, 4096, 32, 8, 128, 1e-3)])
        shapes = [{"op": "matmul", "key": TN.format(m=4096, k=4096, n=4096, layout="TN")},
                  {"op": "matmul", "key": TN.format(m=4096, k=4096, n=4096, layout="NN")},
                  {"op": "sdp_fwd", "key": SDP.format(b=2, s=4096, h=32, kv=8, d=128, dv=128)},
                  {"op": "sdp_bwd", "key": SDP.format(b=1, s=4096, h=32, kv=8, d=128, dv=128)},
                  {"op": "sdp_fwd", "key": SDP.format(b=1, s=4096, h=32, kv=8, d=192, dv=128)},
                  {"op": "sdp_fwd", "key": SDP.format(b=1, s=4096, h=32, kv=8, d=64, dv=64)},
                  {"op": "group_matmul", "key": "ng=8"}]
        results, counts = mt.kernel_results(shapes, {"matmul": gemm}, att)
        self.assertEqual(counts, {"matmul:measured": 1, "matmul:measured_as_tn": 1, "sdp_fwd:interpolated": 1,
                                  "sdp_bwd:derived_from_measured_fwd": 1,
                                  "sdp_fwd:interpolated_head_dim_mla_as_head_dim_160": 1,
                                  "sdp_fwd:interpolated_head_dim": 1, "group_matmul:skipped_no_table": 1})
        by = {(r["op"], r["key"]): r for r in results}
        # MLA (192/128) at head dim 160: the table's only head dim (128) with its time per FLOP
        # held, 1e-3 s × 160/128.
        self.assertAlmostEqual(by[("sdp_fwd", shapes[4]["key"])]["time_s"]["median"], 1.25e-3, delta=1e-12)
        tn = by[("matmul", shapes[0]["key"])]
        self.assertEqual(tn["time_s"], {"n": 1, "median": 2e-4})
        self.assertEqual(tn["flops"], 2.0 * 4096 ** 3)
        self.assertEqual(by[("matmul", shapes[1]["key"])]["impl"], "measured_as_tn")
        # Batch 2 of the only measured shape: twice the FLOPs at the same throughput.
        self.assertAlmostEqual(by[("sdp_fwd", shapes[2]["key"])]["time_s"]["median"], 2e-3, delta=1e-15)
        # Head dim 64 is not timed: the time per FLOP of head dim 128 is held, so half the time.
        self.assertAlmostEqual(by[("sdp_fwd", shapes[5]["key"])]["time_s"]["median"], 0.5e-3, delta=1e-15)
        # Backward: 2.5× the FLOPs at 0.75× the forward's rate.
        self.assertAlmostEqual(by[("sdp_bwd", shapes[3]["key"])]["time_s"]["median"], 2.5 * 1e-3 / 0.75, delta=1e-15)


class AttentionTableTest(unittest.TestCase):
    def test_head_dims_between_timed_ones_interpolate_time_per_flop(self):
        # Time per FLOP-unit t/d: 1e-3/64 at d=64 and 4e-3/256 at d=256, ratio 1; at d=128 the
        # log-linear midpoint keeps it, so t = 1e-3/64 · 128 = 2e-3.
        att = mt.AttentionTable([(1, 4096, 32, 8, 64, 1e-3), (1, 4096, 32, 8, 256, 4e-3)])
        t, how = att.predict(1, 4096, 32, 8, 128)
        self.assertEqual(how, "interpolated_head_dim")
        self.assertAlmostEqual(t, 2e-3, delta=1e-15)
        # With d=256 twice as slow per FLOP, the midpoint (in log d) is √2 slower than d=64.
        att = mt.AttentionTable([(1, 4096, 32, 8, 64, 1e-3), (1, 4096, 32, 8, 256, 8e-3)])
        self.assertAlmostEqual(att.predict(1, 4096, 32, 8, 128)[0], 2e-3 * math.sqrt(2), delta=1e-15)

    def test_empty_table_is_an_error(self):
        with self.assertRaises(ValueError) as e:
            mt.AttentionTable([])
        self.assertEqual(str(e.exception), "attention table has no rows")


class CollectiveTimeTest(unittest.TestCase):
    def test_simulator_network_formula(self):
        net = {"bandwidth": {"gbps": 100.0, "efficient_factor": 0.5, "latency_us": 10},
               "op": {"all_reduce": {"scale": 2, "offset": -1, "latency_us": 2, "fixed_latency_us": 15},
                      "all_gather": {"scale": 1, "offset": -1, "efficient_factor": 0.8, "latency_us": 1,
                                     "fixed_latency_us_by_comm_num": {"4": 3}}}}
        # all_reduce n=8, 1 GiB: x = 2·7/8 GiB; 1.75 GiB / (100 GiB/s · 0.5) = 35 ms; + 2 µs·14 + 15 µs.
        self.assertAlmostEqual(mt.system_collective_time(net, "all_reduce", 8, 2**30), 0.035 + 43e-6, places=12)
        # all_gather n=4, 1 GiB: x = 3/4 GiB at 80 GiB/s = 9.375 ms; + 1 µs·3 + 3 µs.
        self.assertAlmostEqual(mt.system_collective_time(net, "all_gather", 4, 2**30), 0.009375 + 6e-6, places=12)

    def test_size_interpolated_held_out(self):
        # 1 µs at 1 KiB, 4 µs at 4 KiB, 9 µs at 16 KiB: 4 KiB held out lies halfway (in log size)
        # between its neighbours, sqrt(1·9) = 3 µs; the ends are not held out.
        held = mt.size_interpolated_held_out([(16384, 9e-6), (1024, 1e-6), (4096, 4e-6)])
        self.assertEqual(len(held), 1)
        size, predicted, measured = held[0]
        self.assertEqual((size, measured), (4096, 4e-6))
        self.assertAlmostEqual(predicted, 3e-6, places=15)

    def test_alpha_beta_time(self):
        fit = {"op": "reduce_scatter", "n": 2, "latency_us": 5.0, "bus_bandwidth_gbs": 100.0}
        # x = 1e9·1/2 bytes at 100 GB/s = 5 ms, + 5 µs.
        self.assertAlmostEqual(mt.alpha_beta_time(fit, 1e9), 0.005005, places=12)


def moe_row(tokens, ms, ep=1, tp=1, dist="balanced", dtype="bfloat16", src="moe_torch_flow_cutlass", experts=16,
            topk=4, h=1024, inter=512):
    return {"kernel_source": src, "moe_dtype": dtype, "distribution": dist, "num_tokens": tokens, "topk": topk,
            "num_experts": experts, "moe_ep_size": ep, "moe_tp_size": tp, "hidden_size": h, "inter_size": inter,
            "latency": ms}


# A memory-bound rate so high that the extra kernels take no time: the table latency as it is.
INF_RATE = float("inf")


class MoeExtraKernelsTest(unittest.TestCase):
    def test_bytes_by_hand(self):
        # Qwen3-30B-A3B's experts at 16,384 tokens, top-8, h 2048, I 768, bf16: T·k = 131,072;
        # expand 16384·2048·2 + 131072·2048·2 = 67,108,864 + 536,870,912; SwiGLU 131072·1536·2 +
        # 131072·768·2 = 402,653,184 + 201,326,592; finalize 536,870,912 + 67,108,864.
        self.assertEqual(mt.moe_extra_bytes(16384, 8, 2048, 768, "bfloat16"), 1811939328)
        # fp8: the expanded rows and the activation's output at 1 B: 536,870,912/2 + 201,326,592/2 less.
        self.assertEqual(mt.moe_extra_bytes(16384, 8, 2048, 768, "fp8"), 1811939328 - 268435456 - 100663296)

    def test_gemm_time_less_the_extra_kernels_and_the_guard(self):
        # 256 tokens, top-4, h 1024, I 512 over TP 2 = 256 per rank, bf16: expand 524,288 + 2,097,152,
        # SwiGLU 1,048,576 + 524,288, finalize 2,097,152 + 524,288 = 6,815,744 B; at 1e12 B/s 6.815744 µs.
        counts = {}
        row = moe_row(256, 0.020, tp=2)
        self.assertAlmostEqual(mt.moe_gemm_time(row, "bfloat16", 1e12, counts), 20e-6 - 6.815744e-6, places=15)
        # at 1e11 B/s the extra kernels would take 68 µs of the 20 µs: the row is kept whole, counted.
        self.assertAlmostEqual(mt.moe_gemm_time(row, "bfloat16", 1e11, counts), 20e-6, places=15)
        self.assertEqual(counts, {"rows": 2, "kept": 1})

    def test_series_and_uneven_rows_take_the_gemm_time(self):
        rows = [moe_row(256, 0.020), moe_row(1024, 0.080), moe_row(256, 0.040, dist="power_law_1.2")]
        # bf16, 16 experts top-4 h 1024 I 512: 256 tokens move 256·1024·2 + 1024·1024·2 + 1024·1024·2 +
        # 1024·512·2 + 1024·1024·2 + 256·1024·2 = 8,388,608 B, 1024 tokens 4× that: at 1e12 B/s
        # 8.388608 and 33.554432 µs.
        counts = {}
        series = mt.moe_grouped_series(rows, "bfloat16", 1e12, counts)
        self.assertEqual(series[0]["tokens"], [64.0, 256.0])
        for got, want in zip(series[0]["time_s"], [20e-6 - 8.388608e-6, 80e-6 - 33.554432e-6]):
            self.assertAlmostEqual(got, want, places=15)
        self.assertEqual(counts, {"rows": 2})
        # the power-law row: 40 − 8.388608 = 31.611392 µs, between 11.611392 (64 tokens) and 4× that
        # (256): log-linear in tokens, 64 · 31.611392 / 11.611392 = 174.24 tokens, 2.7224× the mean of 64
        # (the table latency as it is would give 128, 2×).
        ratios = mt.moe_uneven_tokens(rows, "bfloat16", series, 1e12)
        self.assertAlmostEqual(ratios["power_law_1.2"][0], 31.611392 / 11.611392, places=9)


class MoeGroupedSeriesTest(unittest.TestCase):
    def test_balanced_ep1_rows_per_rank_expert_shape(self):
        rows = [moe_row(64, 0.010), moe_row(256, 0.020), moe_row(2, 0.005),          # 2·4/16 < 1 token: dropped
                moe_row(256, 0.040, tp=2), moe_row(256, 0.030, ep=2),               # TP halves I; EP dropped
                moe_row(256, 0.050, dist="power_law_1.01"), moe_row(256, 0.050, dtype="fp8"),
                moe_row(256, 0.050, src="moe_torch_flow_nongated"),
                moe_row(128, 0.018, experts=32, topk=8)]                             # same per-rank shape
        series = mt.moe_grouped_series(rows, "bfloat16", INF_RATE)
        self.assertEqual([(s["experts"], s["hidden"], s["inter"]) for s in series],
                         [(16, 1024, 256), (16, 1024, 512), (32, 1024, 512)])
        # 64·4/16 = 16 and 256·4/16 = 64 tokens per expert; times in seconds.
        self.assertEqual(series[1]["tokens"], [16.0, 64.0])
        for got, want in zip(series[1]["time_s"], [1e-5, 2e-5]):
            self.assertAlmostEqual(got, want, places=15)
        self.assertEqual(series[0]["tokens"], [64.0])
        self.assertEqual(series[2]["tokens"], [32.0])

    def test_uneven_rows_give_the_load_of_the_busiest_experts(self):
        rows = [moe_row(256, 0.010), moe_row(1024, 0.040), moe_row(256, 0.020, dist="power_law_1.2")]
        series = mt.moe_grouped_series(rows, "bfloat16", INF_RATE)
        # 0.020 ms lies halfway in log time between 64 (0.010) and 256 tokens (0.040): 128 tokens,
        # twice the row's mean of 64.
        ratios = mt.moe_uneven_tokens(rows, "bfloat16", series, INF_RATE)
        self.assertEqual(list(ratios), ["power_law_1.2"])
        self.assertAlmostEqual(ratios["power_law_1.2"][0], 2.0, places=12)


def deepep_row(nodes, tokens, sms, dispatch_us, combine_us, device="NVIDIA H100"):
    return {"framework": "sglang", "version": "0.5.0", "device": device, "op_name": "normal",
            "kernel_source": "deepep", "node_num": nodes, "num_token": tokens, "hidden_size": 7168,
            "num_topk": 8, "num_experts": 256, "dispatch_sms": sms, "dispatch_transmit_us": dispatch_us,
            "dispatch_notify_us": 0.0, "combine_sms": sms, "combine_transmit_us": combine_us,
            "combine_notify_us": 0.0}


class DeepEpCsvTest(unittest.TestCase):
    def test_rows_sorted_with_the_one_valued_columns_in_the_header(self):
        rows = [deepep_row(2, 1024, 24, 235.4, 540.77), deepep_row(1, 131072, 20, 15631.93, 27215.11),
                deepep_row(2, 1024, 4, 970.83, 2486.0)]
        text = mt.deepep_csv(rows, "pkg 1.0, t.parquet")
        self.assertEqual(text.split("\n")[:7], [
            "# pkg 1.0, t.parquet", "# framework: sglang", "# version: 0.5.0", "# device: NVIDIA H100",
            "# op_name: normal", "# kernel_source: deepep", ",".join(mt.DEEPEP_COLUMNS)])
        self.assertEqual(text.split("\n")[7:], [
            "1,131072,7168,8,256,20,15631.93,0,20,27215.11,0", "2,1024,7168,8,256,4,970.83,0,4,2486,0",
            "2,1024,7168,8,256,24,235.4,0,24,540.77,0", ""])

    def test_a_column_of_two_values_is_an_error(self):
        rows = [deepep_row(1, 1024, 20, 1.0, 2.0), deepep_row(1, 2048, 20, 1.0, 2.0, device="NVIDIA H200")]
        with self.assertRaisesRegex(ValueError, r"column device holds 2 values \(NVIDIA H100, NVIDIA H200\)"):
            mt.deepep_csv(rows, "t")
        with self.assertRaisesRegex(ValueError, "no rows"):
            mt.deepep_csv([], "t")


if __name__ == "__main__":
    unittest.main()
