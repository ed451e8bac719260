#!/usr/bin/env bash
# Calibrates one node end to end:
#   trainsim shapes (per plan) -> kernels_bench -> comm_bench (single rank) -> trainsim system build
# and checks that the result covers every shape the plans look up.
#
# usage: calibrate_node.sh --base SYSTEM --plan MODEL:STRATEGY [--plan MODEL:STRATEGY ...]
#                          [--out-dir DIR] [--bin-dir DIR] [--name SYS_NAME] [--resume]
#                          [--skip-comm] [--samples N] [--warmup N]
#   SYSTEM, MODEL and STRATEGY are preset names or JSON files (as for `trainsim`).
#   Extra comm_bench arguments can be given in COMM_BENCH_ARGS; to measure several GPUs, run
#   comm_bench under mpirun yourself and pass its comm.json to `trainsim system build --comm`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin_dir="${TRAINSIM_BIN_DIR:-$here/../build/bin}"
out_dir="calibration-$(date -u +%Y%m%dT%H%M%SZ)"
base="" name="" resume="" skip_comm="" bench_args=()
plans=()

die() { echo "calibrate_node.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) base="${2:?--base needs a value}"; shift 2 ;;
    --plan) plans+=("${2:?--plan needs MODEL:STRATEGY}"); shift 2 ;;
    --out-dir) out_dir="${2:?--out-dir needs a value}"; shift 2 ;;
    --bin-dir) bin_dir="${2:?--bin-dir needs a value}"; shift 2 ;;
    --name) name="${2:?--name needs a value}"; shift 2 ;;
    --resume) resume=1; shift ;;
    --skip-comm) skip_comm=1; shift ;;
    --samples|--warmup) bench_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n "$base" ]] || die "--base is required"
[[ ${#plans[@]} -gt 0 ]] || die "at least one --plan MODEL:STRATEGY is required"
for tool in trainsim kernels_bench; do
  [[ -x "$bin_dir/$tool" ]] || die "$bin_dir/$tool not found; build first or pass --bin-dir"
done
if [[ -z "$skip_comm" && ! -x "$bin_dir/comm_bench" ]]; then
  die "$bin_dir/comm_bench not found; build it or pass --skip-comm"
fi
mkdir -p "$out_dir"
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# 1. Shapes every plan looks up (one file per plan; kernels_bench measures the union).
shape_args=()
i=0
for plan in "${plans[@]}"; do
  [[ "$plan" == *:* ]] || die "--plan '$plan': expected MODEL:STRATEGY"
  i=$((i + 1))
  log "shapes for ${plan%%:*} with ${plan#*:}"
  "$bin_dir/trainsim" shapes --model "${plan%%:*}" --strategy "${plan#*:}" --system "$base" \
    --out "$out_dir/shapes-$i.json"
  shape_args+=(--shapes "$out_dir/shapes-$i.json")
done

# 2. Kernels; an interrupted run leaves kernels.json.partial.jsonl and continues with --resume.
log "kernels_bench (progress below; log in $out_dir/kernels_bench.log)"
"$bin_dir/kernels_bench" "${shape_args[@]}" --out "$out_dir/kernels.json" ${resume:+--resume} \
  "${bench_args[@]}" 2> >(tee -a "$out_dir/kernels_bench.log" >&2)

# 3. Collectives on this node's single rank.
comm_args=()
if [[ -z "$skip_comm" ]]; then
  log "comm_bench (single rank)"
  # shellcheck disable=SC2086  # COMM_BENCH_ARGS is a list of words on purpose
  "$bin_dir/comm_bench" --out "$out_dir/comm.json" ${COMM_BENCH_ARGS:-} 2> >(tee -a "$out_dir/comm_bench.log" >&2)
  comm_args=(--comm "$out_dir/comm.json")
fi

# 4. Merge into a system file the simulator reads back.
log "system build"
"$bin_dir/trainsim" system build --base "$base" --kernels "$out_dir/kernels.json" "${comm_args[@]}" \
  --out "$out_dir/system.json" ${name:+--name "$name"}

# 5. Every looked-up shape should now be measured (unsupported kernels stay on the op mean).
for plan in "${plans[@]}"; do
  "$bin_dir/trainsim" shapes --model "${plan%%:*}" --strategy "${plan#*:}" --system "$out_dir/system.json" \
    --out "$out_dir/check-shapes.json"
done
log "done: $out_dir/system.json"
