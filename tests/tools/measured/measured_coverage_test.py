"""Every plan of validation/ on its measured system: no op of a class with measured data (a GEMM
grid, a points model or per-shape entries) is answered by the class default (issue 30). Classes
the system measured nothing of (e.g. fp8_group_matmul on H100) may take their default.

Usage: measured_coverage_test.py TRAINSIM (the trainsim binary)."""

import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
TRAINSIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "trainsim")


def measured_system(table):
    """The measured preset of a table's system (itself when it is one), or None."""
    with open(os.path.join(ROOT, "validation", table, "system.txt")) as f:
        name = next(line.split("#")[0].strip() for line in f if line.split("#")[0].strip())
    for candidate in (name, name + "-measured"):
        if candidate.endswith("-measured") and os.path.isfile(os.path.join(ROOT, "configs", "system", candidate + ".json")):
            return candidate
    return None


def plan_args(case):
    if os.path.isfile(os.path.join(case, "megatron_args.txt")):
        args = ["--megatron-args", os.path.join(case, "megatron_args.txt")]
        if os.path.isfile(os.path.join(case, "config.json")):
            args += ["--hf-config", os.path.join(case, "config.json")]
        return args
    return ["--model", os.path.join(case, "model.json"), "--strategy", os.path.join(case, "strategy.json")]


def measured_classes(system):
    with open(os.path.join(ROOT, "configs", "system", system + ".json")) as f:
        ops = json.load(f)["accelerator"]["op"]
    return {name for name, op in ops.items() if op.get("model") or op.get("accurate_efficient_factor")}


class MeasuredCoverageTest(unittest.TestCase):
    def test_no_class_default_where_the_family_is_measured(self):
        checked = 0
        for table in sorted(os.listdir(os.path.join(ROOT, "validation"))):
            cases = os.path.join(ROOT, "validation", table, "cases")
            system = measured_system(table) if os.path.isdir(cases) else None
            if system is None:
                continue
            measured = measured_classes(system)
            for case in sorted(os.listdir(cases)):
                res = subprocess.run([TRAINSIM, "perf", *plan_args(os.path.join(cases, case)), "--system", system,
                                      "--json"], capture_output=True, text=True)
                self.assertEqual(res.returncode, 0, msg=f"{table}/{case}: {res.stderr}")
                est = json.loads(res.stdout)
                by_class = est["efficiency_by_class"]
                for op, counts in by_class.items():
                    if op in measured:
                        self.assertEqual(counts["default"], 0, msg=f"{table}/{case} on {system}: {op} {counts}")
                for miss in est["efficiency_misses"]:
                    self.assertNotIn(miss["op"], measured, msg=f"{table}/{case} on {system}: {miss}")
                # The matmul class answers every plan (the output layer's GEMM stays bf16).
                self.assertIn("matmul", by_class, msg=f"{table}/{case}")
                checked += 1
        # narayanan2021 10, korthikanti2022 5, nemo2407_h100 9, megatron_bridge_2509_h100 5,
        # megatron_bridge_2509_b200 4, b200_megatron 22 (a100_pcie_megatron has no measured preset).
        self.assertEqual(checked, 55)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
