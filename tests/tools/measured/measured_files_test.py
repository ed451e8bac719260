"""Checks imported numbers of the shipped configs/system/*-measured.json against NVIDIA's tables
(aiconfigurator-core). Exits 77 (skipped) when the package or pyarrow is not installed; `make
measured-systems` installs both into build/venv, which this test uses when the running Python
lacks them (TRAINSIM_VENV_PYTHON)."""

import json
import os
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "measured"))
import measured_tables as mt  # noqa: E402

SKIP = 77


def packages_or_skip():
    try:
        import pyarrow.parquet  # noqa: F401
        import importlib.util
        if importlib.util.find_spec("aiconfigurator_core") is None:
            raise ModuleNotFoundError("aiconfigurator_core")
    except ModuleNotFoundError as e:
        venv = os.environ.get("TRAINSIM_VENV_PYTHON", "")
        if venv and os.path.exists(venv) and os.path.abspath(venv) != os.path.abspath(sys.executable):
            os.execv(venv, [venv] + sys.argv)
        print(f"skipped: {e.name} is not installed (run `make measured-systems`)")
        sys.exit(SKIP)


packages_or_skip()
import import_measurements as im  # noqa: E402

ROOT_PKG, VERSION, _ = im.package_root(None)


def system(name):
    with open(os.path.join(ROOT, "configs", "system", name + "-measured.json")) as f:
        return json.load(f)


class ImportedNumbersTest(unittest.TestCase):
    def test_package_is_the_pinned_version(self):
        self.assertEqual(VERSION, "0.12.0")
        prov = system("h100-sxm-80g")["provenance"]["kernels"]["measurement_provenance"]["source"]
        self.assertEqual(prov["package"], "aiconfigurator-core")
        self.assertEqual(prov["version"], VERSION)

    def test_gemm_models_hold_every_table_point(self):
        # The matmul model's grid holds each bf16 row of the table (µs, 5 significant digits)
        # and nothing else: the other nodes are null.
        spec = im.GPUS["h100_sxm"]
        table, _ = im.load_gemm(ROOT_PKG, "h100_sxm", spec, "bfloat16")
        model = system("h100-sxm-80g")["accelerator"]["op"]["matmul"]["model"]
        self.assertEqual(model["kind"], "gemm_grid")
        self.assertEqual(model["provenance"]["points"], len(table.t))
        self.assertEqual(model["provenance"]["source"]["version"], VERSION)
        ms, ns, ks, times = model["m"], model["n"], model["k"], model["time_us"]
        self.assertEqual(len(times), len(ms) * len(ns) * len(ks))
        held = 0
        for i, m in enumerate(ms):
            for j, n in enumerate(ns):
                for l, k in enumerate(ks):
                    v = times[(i * len(ns) + j) * len(ks) + l]
                    t = table.t.get((m, n, k))
                    if t is None:
                        self.assertIsNone(v, msg=(m, n, k))
                        continue
                    self.assertLess(abs(v * 1e-6 / t - 1), 5e-5, msg=(m, n, k))
                    held += 1
        self.assertEqual(held, len(table.t))
        # One by hand: 4096³ bf16 took 0.174285 ms (4096×4096×4096 row of gemm_perf.parquet).
        at = (ms.index(4096) * len(ns) + ns.index(4096)) * len(ks) + ks.index(4096)
        self.assertAlmostEqual(times[at], 174.28, delta=0.01)
        # The plans' per-shape GEMM entries are gone (the model answers them).
        self.assertEqual(system("h100-sxm-80g")["accelerator"]["op"]["matmul"]["accurate_efficient_factor"], {})

    def test_measured_attention_reproduces_the_table(self):
        att = im.load_attention(ROOT_PKG, "a100_sxm", im.GPUS["a100_sxm"])
        # The attention classes are points models of the plans' shapes (efficiency per key).
        acc = system("a100-sxm-80g")["accelerator"]["op"]["sdp_fwd"]["model"]["points"]
        checked = 0
        for key, eff in acc.items():
            f = mt.parse_key(key)
            k = (int(f["batch"]), int(f["seq_len"]), int(f["head_num"]), int(f["kv_head_num"]), int(f["qk_head_dim"]))
            if k in att.t:
                self.assertAlmostEqual(eff, mt.sdp_flops("sdp_fwd", key) / (att.t[k] * 312e12), delta=1e-12)
                checked += 1
        self.assertGreaterEqual(checked, 5)

    def test_nvlink_all_reduce_follows_the_table_at_large_sizes(self):
        rows = im.read_parquet(im.table_path(ROOT_PKG, "h100_sxm", "comm", "nccl/2.29.2", "nccl_perf.parquet"))
        ms = {r["message_size"]: r["latency"] for r in rows
              if r["op_name"] == "all_reduce" and r["num_gpus"] == 8 and r["nccl_dtype"] == "half"}
        self.assertAlmostEqual(ms[268435456], 2.11106)
        net = system("h100-sxm-80g")["networks"]["high_intra_node"]
        # 268435456 half elements = 512 MiB; the fitted simulator time is within 3 % of 2.11 ms.
        t = mt.system_collective_time(net, "all_reduce", 8, 268435456 * 2)
        self.assertLess(abs(t / 2.11106e-3 - 1), 0.03)


if __name__ == "__main__":
    unittest.main()
