#!/usr/bin/env bash
# Calibrates one node end to end under a time budget:
#   1 self-checks (kernels_bench, then comm_bench on every GPU) -> 2 shapes of the plans ->
#   3 kernels_bench -> 4 comm_bench under mpirun, one rank per GPU -> 5 trainsim system build
#   -> 6 memory probe (CUDA context, cuBLAS workspaces, an NCCL communicator) -> 7 coverage check.
#
# usage: calibrate_node.sh [--base SYSTEM] [--plan MODEL:STRATEGY ...] [--budget-min 20]
#                          [--out-dir DIR] [--bin-dir DIR] [--name SYS_NAME] [--gpus N]
#                          [--skip-comm] [--skip-memory-probe] [--no-self-check] [--samples N] [--warmup N]
#                          [--grid FAMILIES] [--dtype bf16,fp8]
#   SYSTEM, MODEL and STRATEGY are preset names or JSON files (as for `trainsim`); without
#   --plan the presets users run most are calibrated (see DEFAULT_PLANS below). Without --base
#   the preset matching the GPU name is used (h100, h200, b200, a100). --grid all (gemm,
#   grouped, attention, memory) measures the models' calibration grids besides the plans' shapes
#   (about 26 min on an H100: give --budget-min 40), so the system file answers any plan;
#   the grid runs coarse to fine, a coarse grid of every family in its first ~7 min.
#   Rerunning with the same --out-dir resumes: finished steps are skipped, kernels_bench
#   continues from its partial file. MPIRUN (default mpirun) and COMM_BENCH_ARGS are read
#   from the environment.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin_dir="${TRAINSIM_BIN_DIR:-$here/../build/bin}"
out_dir="calibration"
base="" name="" skip_comm="" skip_probe="" self_check=1 gpus="" budget_min=20 bench_args=() grid_args=()
plans=()
DEFAULT_PLANS=(llama3-8b:tp1-pp1-dp8-zero1 llama3-70b:tp8-pp4-dp2-zero1-full-recompute
               qwen3-32b:tp4-pp1-dp2-zero1-sdp-recompute mixtral-8x7b:ep8-pp1-dp8-moe
               deepseek-v3:ep8-pp1-dp8-moe llama3-8b:tp1-pp1-dp8-zero1-fp8)

die() { echo "calibrate_node.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) base="${2:?--base needs a value}"; shift 2 ;;
    --plan) plans+=("${2:?--plan needs MODEL:STRATEGY}"); shift 2 ;;
    --budget-min) budget_min="${2:?--budget-min needs minutes}"; shift 2 ;;
    --out-dir) out_dir="${2:?--out-dir needs a value}"; shift 2 ;;
    --bin-dir) bin_dir="${2:?--bin-dir needs a value}"; shift 2 ;;
    --name) name="${2:?--name needs a value}"; shift 2 ;;
    --gpus) gpus="${2:?--gpus needs a count}"; shift 2 ;;
    --skip-comm) skip_comm=1; shift ;;
    --skip-memory-probe) skip_probe=1; shift ;;
    --no-self-check) self_check=""; shift ;;
    --samples|--warmup) bench_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --grid|--dtype) grid_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$budget_min" =~ ^[0-9]+$ && "$budget_min" -ge 5 ]] || die "--budget-min '$budget_min': expected whole minutes ≥ 5"
[[ ${#plans[@]} -gt 0 ]] || plans=("${DEFAULT_PLANS[@]}")
for tool in trainsim kernels_bench; do
  [[ -x "$bin_dir/$tool" ]] || die "$bin_dir/$tool not found; build first (make build) or pass --bin-dir"
done
if [[ -z "$skip_comm" ]]; then
  [[ -x "$bin_dir/comm_bench" ]] || die "$bin_dir/comm_bench not found; build it or pass --skip-comm"
  command -v "${MPIRUN:-mpirun}" > /dev/null || die "${MPIRUN:-mpirun} not found; install MPI, set MPIRUN, or pass --skip-comm"
fi
if [[ -z "$gpus" ]]; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
  [[ "$gpus" -ge 1 ]] || die "no GPU found by nvidia-smi; pass --gpus N"
fi
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 || true)
if [[ -z "$base" ]]; then
  case "${gpu_name,,}" in
    *h100*) base=h100-sxm-80g ;; *h200*) base=h200-sxm-141g ;; *b200*) base=b200-sxm-180g ;;
    *a100*pcie*) base=a100-pcie-80g ;; *a100*) base=a100-sxm-80g ;;
    *) die "no system preset for GPU '${gpu_name:-unknown}'; pass --base" ;;
  esac
fi
mkdir -p "$out_dir"
start=$(date +%s)
deadline=$((start + budget_min * 60))
# Budget shares: comm_bench gets a quarter (at most 8 min), the self-checks ~2 min, kernels the rest.
comm_min=$(( skip_comm ? 0 : (budget_min / 4 < 8 ? budget_min / 4 : 8) ))
log() {
  local now left
  now=$(date +%s); left=$((deadline - now))
  printf '[%s] [%dm%02ds elapsed, budget left %dm%02ds] %s\n' "$(date -u +%H:%M:%S)" $(((now - start) / 60)) \
    $(((now - start) % 60)) $((left / 60)) $((left % 60 < 0 ? 0 : left % 60)) "$*" >&2
}
mpirun_cmd=("${MPIRUN:-mpirun}" -np "$gpus" --bind-to none)
[[ "$(id -u)" == 0 ]] && mpirun_cmd+=(--allow-run-as-root)

# 1. Self-checks: numerics and timing sanity before anything is measured.
if [[ -n "$self_check" && ! -f "$out_dir/self-check.ok" ]]; then
  log "step 1/7: kernels_bench --self-check (about 1 min)"
  "$bin_dir/kernels_bench" --self-check | tee "$out_dir/kernels-self-check.txt"
  if [[ -z "$skip_comm" ]]; then
    log "step 1/7: comm_bench --self-check on $gpus GPUs (about 1 min)"
    # shellcheck disable=SC2086  # COMM_BENCH_ARGS is a list of words on purpose
    "${mpirun_cmd[@]}" "$bin_dir/comm_bench" --self-check --groups single --ops all_reduce --max-bytes 8 \
      --out "$out_dir/comm-self-check.json" ${COMM_BENCH_ARGS:-} | tee "$out_dir/comm-self-check.txt"
  fi
  touch "$out_dir/self-check.ok"
fi

# 2. Shapes every plan looks up (one file per plan; kernels_bench measures the union).
shape_args=()
i=0
for plan in "${plans[@]}"; do
  [[ "$plan" == *:* ]] || die "--plan '$plan': expected MODEL:STRATEGY"
  i=$((i + 1))
  if [[ ! -f "$out_dir/shapes-$i.json" ]]; then
    log "step 2/7: shapes for ${plan%%:*} with ${plan#*:}"
    "$bin_dir/trainsim" shapes --model "${plan%%:*}" --strategy "${plan#*:}" --system "$base" \
      --out "$out_dir/shapes-$i.json"
  fi
  shape_args+=(--shapes "$out_dir/shapes-$i.json")
done

# 3. Kernels (the plans' shapes, and with --grid the models' grids) under what is left of the
#    budget minus comm_bench's share; the partial file makes a rerun continue where this one stopped.
if [[ ! -f "$out_dir/kernels.json" || -f "$out_dir/kernels.json.partial.jsonl" || -f "$out_dir/kernels.left" ]]; then
  kernel_min=$(( (deadline - $(date +%s)) / 60 - comm_min ))
  [[ "$kernel_min" -ge 1 ]] || kernel_min=1
  "$bin_dir/kernels_bench" "${grid_args[@]}" "${shape_args[@]}" --dry-run | tail -1 | sed 's/^/  plan: /' >&2
  log "step 3/7: kernels_bench, budget ${kernel_min} min (per-item progress and ETA below)"
  resume=()
  [[ -f "$out_dir/kernels.json.partial.jsonl" || -f "$out_dir/kernels.json" ]] && resume=(--resume)
  "$bin_dir/kernels_bench" "${grid_args[@]}" "${shape_args[@]}" --out "$out_dir/kernels.json" "${resume[@]}" \
    --budget-min "$kernel_min" "${bench_args[@]}" 2>&1 | tee "$out_dir/kernels_bench.last.log" >&2
  cat "$out_dir/kernels_bench.last.log" >> "$out_dir/kernels_bench.log"
  if grep -q "items left by the time budget" "$out_dir/kernels_bench.last.log"; then
    touch "$out_dir/kernels.left"
  else
    rm -f "$out_dir/kernels.left"
  fi
fi

# 4. Collectives: one rank per GPU of this node (intra-node groups of 2, 4, 8 and the node).
comm_args=()
if [[ -z "$skip_comm" ]]; then
  if ! grep -q '"complete": true' "$out_dir/comm.json" 2> /dev/null; then
    log "step 4/7: comm_bench on $gpus GPUs under ${mpirun_cmd[0]} (about $comm_min min)"
    # shellcheck disable=SC2086
    "${mpirun_cmd[@]}" "$bin_dir/comm_bench" --out "$out_dir/comm.json" --max-bytes 1G ${COMM_BENCH_ARGS:-} \
      2> >(tee -a "$out_dir/comm_bench.log" >&2)
  fi
  comm_args=(--comm "$out_dir/comm.json")
fi

# 5. Merge into a system file the simulator reads back; provenance (device, driver, CUDA,
#    cuBLAS, cuDNN, NCCL, clocks, dates, commands) comes from the two result files.
log "step 5/7: trainsim system build"
"$bin_dir/trainsim" system build --base "$base" --kernels "$out_dir/kernels.json" "${comm_args[@]}" \
  --out "$out_dir/system.json" ${name:+--name "$name"}

# 6. The memory outside the tensors (docs/kernels-bench.md, "Memory probe"), measured once (with a
#    communicator over the node's GPUs unless --skip-comm), written into the system file.
if [[ -z "$skip_probe" ]]; then
  if [[ ! -f "$out_dir/memory-probe.json" ]]; then
    log "step 6/7: kernels_bench --memory-probe (seconds)"
    probe_ranks=0
    [[ -z "$skip_comm" ]] && probe_ranks=$gpus
    "$bin_dir/kernels_bench" --memory-probe --nccl-ranks "$probe_ranks" --out "$out_dir/memory-probe.json"
  fi
  "$bin_dir/kernels_bench" --apply-memory-probe "$out_dir/memory-probe.json" --system "$out_dir/system.json" \
    --out "$out_dir/system.probed.json"
  mv "$out_dir/system.probed.json" "$out_dir/system.json"
fi

# 7. Every looked-up shape should now be measured (unsupported kernels stay on the op mean).
log "step 7/7: coverage check"
for plan in "${plans[@]}"; do
  "$bin_dir/trainsim" shapes --model "${plan%%:*}" --strategy "${plan#*:}" --system "$out_dir/system.json" \
    --out "$out_dir/check-shapes.json"
done
if [[ -f "$out_dir/kernels.left" ]]; then
  log "done, budget reached: $out_dir/system.json is partial; rerun the same command to measure the rest"
else
  log "done: $out_dir/system.json"
fi
