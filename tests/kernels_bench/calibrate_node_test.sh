#!/usr/bin/env bash
# calibrate_node.sh with stub tools on a CPU machine: the order of the steps, one comm_bench
# rank per GPU under mpirun, the budget handed to kernels_bench, and resuming.
# usage: calibrate_node_test.sh path/to/calibrate_node.sh
set -euo pipefail
script=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/path"
log="$tmp/calls.log"

stub() {  # stub NAME BODY: a tool that logs its arguments, then runs BODY
  printf '#!/usr/bin/env bash\necho "%s $*" >> %s\n%s\n' "$1" "$log" "$2" > "$3/$1"
  chmod +x "$3/$1"
}
out_arg='o=""; while [[ $# -gt 0 ]]; do [[ $1 == --out ]] && o=$2; shift; done'
stub kernels_bench "case \"\$*\" in *--self-check*) echo 'self-check: 12 passed, 0 failed';;
  *--dry-run*) echo 'estimated run time: 1m00s';; *) $out_arg; echo '{}' > \"\$o\"
  if [[ -n \${STUB_LEFT:-} ]]; then echo 'kernels_bench: 3 items left by the time budget; rerun with --resume' >&2; fi;; esac" "$tmp/bin"
stub comm_bench "$out_arg; echo '{\"complete\": true}' > \"\$o\"; echo 'self-check: passed'" "$tmp/bin"
stub trainsim "$out_arg; echo '{}' > \"\$o\"" "$tmp/bin"
stub nvidia-smi "case \"\$*\" in -L) for i in 0 1 2 3 4 5 6 7; do echo \"GPU \$i: NVIDIA H100 80GB HBM3\"; done;;
  *) echo 'NVIDIA H100 80GB HBM3';; esac" "$tmp/path"
stub mpirun 'while [[ $# -gt 0 && $1 != */comm_bench ]]; do shift; done; exec "$@"' "$tmp/path"

run() { PATH="$tmp/path:$PATH" bash "$script" --bin-dir "$tmp/bin" --out-dir "$tmp/out" --budget-min 20 \
          --plan llama3-8b:tp1-pp1-dp8-zero1 2> "$tmp/stderr.log"; }
run || { cat "$tmp/stderr.log"; exit 1; }
b="$tmp/bin" o="$tmp/out"
expected="nvidia-smi -L
nvidia-smi --query-gpu=name --format=csv,noheader
kernels_bench --self-check
mpirun -np 8 --bind-to none$([[ $(id -u) == 0 ]] && echo ' --allow-run-as-root') $b/comm_bench --self-check --groups single --ops all_reduce --max-bytes 8 --out $o/comm-self-check.json
comm_bench --self-check --groups single --ops all_reduce --max-bytes 8 --out $o/comm-self-check.json
trainsim shapes --model llama3-8b --strategy tp1-pp1-dp8-zero1 --system h100-sxm-80g --out $o/shapes-1.json
kernels_bench --shapes $o/shapes-1.json --dry-run
kernels_bench --shapes $o/shapes-1.json --out $o/kernels.json --budget-min 14-15
mpirun -np 8 --bind-to none$([[ $(id -u) == 0 ]] && echo ' --allow-run-as-root') $b/comm_bench --out $o/comm.json --max-bytes 1G
comm_bench --out $o/comm.json --max-bytes 1G
trainsim system build --base h100-sxm-80g --kernels $o/kernels.json --comm $o/comm.json --out $o/system.json
kernels_bench --memory-probe --nccl-ranks 8 --out $o/memory-probe.json
kernels_bench --apply-memory-probe $o/memory-probe.json --system $o/system.json --out $o/system.probed.json
trainsim shapes --model llama3-8b --strategy tp1-pp1-dp8-zero1 --system $o/system.json --out $o/check-shapes.json"
# 20 min budget - 5 min for comm_bench (a quarter), minus the seconds already spent.
calls=$(sed -E 's/--budget-min 1[45]$/--budget-min 14-15/' "$log")
if [[ "$calls" != "$expected" ]]; then
  echo "first run: unexpected calls"; diff <(echo "$expected") <(echo "$calls") || true; exit 1
fi
# A rerun resumes: nothing is measured again, the merge, the probe's write and the check run again.
: > "$log"
run || { cat "$tmp/stderr.log"; exit 1; }
expected="nvidia-smi -L
nvidia-smi --query-gpu=name --format=csv,noheader
trainsim system build --base h100-sxm-80g --kernels $o/kernels.json --comm $o/comm.json --out $o/system.json
kernels_bench --apply-memory-probe $o/memory-probe.json --system $o/system.json --out $o/system.probed.json
trainsim shapes --model llama3-8b --strategy tp1-pp1-dp8-zero1 --system $o/system.json --out $o/check-shapes.json"
if [[ "$(cat "$log")" != "$expected" ]]; then
  echo "rerun: unexpected calls"; diff <(echo "$expected") "$log" || true; exit 1
fi
grep -q "step 7/7: coverage check" "$tmp/stderr.log" || { echo "no progress lines"; cat "$tmp/stderr.log"; exit 1; }
# A run cut by the budget says so, and the rerun continues kernels_bench with --resume.
rm -rf "$o"
STUB_LEFT=1 run || { cat "$tmp/stderr.log"; exit 1; }
grep -q "budget reached: $o/system.json is partial" "$tmp/stderr.log" || { echo "no budget message"; exit 1; }
: > "$log"
run || { cat "$tmp/stderr.log"; exit 1; }
grep -Eq "^kernels_bench --shapes $o/shapes-1.json --out $o/kernels.json --resume --budget-min" "$log" ||
  { echo "rerun after the budget did not resume kernels_bench"; cat "$log"; exit 1; }
grep -q "done: $o/system.json" "$tmp/stderr.log" || { echo "no done line"; exit 1; }
# --grid: kernels_bench measures the models' grids besides the plans' shapes.
rm -rf "$o"
: > "$log"
PATH="$tmp/path:$PATH" bash "$script" --bin-dir "$tmp/bin" --out-dir "$tmp/out" --budget-min 40 --skip-comm \
  --plan llama3-8b:tp1-pp1-dp8-zero1 --grid all --dtype bf16 2> "$tmp/stderr.log" || { cat "$tmp/stderr.log"; exit 1; }
grep -Eq "^kernels_bench --grid all --dtype bf16 --shapes $o/shapes-1.json --out $o/kernels.json --budget-min" "$log" ||
  { echo "--grid not passed to kernels_bench"; cat "$log"; exit 1; }
# Without comm_bench the probe measures no communicator.
grep -q "^kernels_bench --memory-probe --nccl-ranks 0 --out $o/memory-probe.json" "$log" ||
  { echo "--skip-comm probe with a communicator"; cat "$log"; exit 1; }
# --skip-memory-probe: no probe, the system file as built.
rm -rf "$o"
: > "$log"
PATH="$tmp/path:$PATH" bash "$script" --bin-dir "$tmp/bin" --out-dir "$tmp/out" --budget-min 20 --skip-comm \
  --skip-memory-probe --plan llama3-8b:tp1-pp1-dp8-zero1 2> "$tmp/stderr.log" || { cat "$tmp/stderr.log"; exit 1; }
if grep -q "memory-probe" "$log"; then echo "--skip-memory-probe ran the probe"; cat "$log"; exit 1; fi
echo "calibrate_node.sh: steps, mpirun ranks and resume OK"
