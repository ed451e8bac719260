#!/usr/bin/env python3
"""Searches from every published recipe of the accuracy suite and prints the table of
docs/search.md ("Searches from the published recipes"): the recipe's own predicted time and fit,
the best plan found on the same GPUs, global batch, precision and model, and the flags that change.

Usage: tools/search/search_recipes.py [--trainsim build/bin/trainsim] [--tables T1,T2] [--markdown]
Each case runs `trainsim search` from its Megatron-LM command line (megatron_args.txt) or its
model and strategy files, on the system preset named in the table's system.txt.
"""
import argparse
import json
import os
import subprocess
import sys
import time

TABLES = ["megatron_bridge_2509_h100", "megatron_bridge_2509_b200", "nemo2407_h100", "narayanan2021"]


def preset(table_dir):
    with open(os.path.join(table_dir, "system.txt")) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")][0]


def search_args(case_dir):
    mfile = os.path.join(case_dir, "megatron_args.txt")
    if os.path.exists(mfile):
        return ["--megatron-args", mfile]
    with open(os.path.join(case_dir, "strategy.json")) as f:
        s = json.load(f)
    world = s["world_size"]
    dp = world // (s.get("tp_size", 1) * s.get("cp_size", 1) * s.get("pp_size", 1))
    gbs = s["micro_batch_size"] * s["micro_batch_num"] * dp
    return ["--model", os.path.join(case_dir, "model.json"), "--strategy", os.path.join(case_dir, "strategy.json"),
            "--gpus", str(world), "--global-batch", str(gbs)]


def flags_diff(base, best):
    # The search's JSON carries each plan's complete strategy; name the sizes that differ.
    keys = [("tp", "TP"), ("cp", "CP"), ("pp", "PP"), ("vpp", "VP"), ("ep", "EP"), ("etp", "ETP"), ("mbs", "MBS"),
            ("zero", "ZeRO"), ("recompute", "recompute"), ("dispatcher", "dispatcher"), ("split", "split"),
            ("cp_comm_type", "cp_comm")]
    out = []
    for k, name in keys:
        if base.get(k) != best.get(k):
            out.append(f"{name} {base.get(k)}→{best.get(k)}")
    return ", ".join(out) if out else "same plan"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainsim", default="build/bin/trainsim")
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--validation", default="validation")
    args = ap.parse_args()
    print("| recipe | GPUs | recipe: predicted s (fit) | best found s | change | diff |")
    print("|---|---:|---:|---:|---:|---|")
    worse = 0
    for table in args.tables.split(","):
        tdir = os.path.join(args.validation, table)
        system = preset(tdir)
        for case in sorted(os.listdir(os.path.join(tdir, "cases"))):
            cdir = os.path.join(tdir, "cases", case)
            cmd = [args.trainsim, "search", "--system", system, "--top", "1", "--json", "--quiet"] + search_args(cdir)
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"| {case} | | error: {p.stderr.strip().splitlines()[-1]} | | | |")
                worse += 1
                continue
            j = json.loads(p.stdout)
            base = j.get("base", {})
            best = j["candidates"][0] if j["candidates"] else None
            gpus = j["search"]["world_size"]
            bt = base.get("iteration_time_s")
            fit = {"FITS": "fits", "TIGHT": "tight"}.get(base.get("fit_state"), "does not fit")
            base_txt = f"{bt:.2f} ({fit})" if bt is not None else "not estimated"
            if best is None:
                print(f"| {case} | {gpus} | {base_txt} | none fits | | |")
                worse += 1
                continue
            change = f"{100 * (best['iteration_time_s'] / bt - 1):+.1f} %" if bt else ""
            if bt is not None and base.get("fits") and best["iteration_time_s"] > bt:
                worse += 1
            best_txt = f"{best['iteration_time_s']:.2f}" + (" (tight)" if best.get("fit_state") == "TIGHT" else "")
            print(f"| {case} | {gpus} | {base_txt} | {best_txt} | {change} | "
                  f"{flags_diff(base, best)} | ", flush=True)
            print(f"searched in {time.time() - t0:.1f} s", file=sys.stderr)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
