#!/usr/bin/env bash
# The runner inside the GPU bundle that scripts/gpu-check builds (it lands as gpu-check/run.sh).
# Run it from the root of a copy of the repository (bench/*.py are read from there) on the GPU
# machine:
#
#   tar -xJf target/gpu-check/gpu-check.tar.xz -C /tmp && bash /tmp/gpu-check/run.sh
#
# It runs every check in turn, each under a time limit so that one hang cannot take all of the
# runner's 600 s: gpu_check, the prelude's CUDA-relevant tests, notebooks 01-05 (exported
# programs, outputs recorded; 03 and 05 a second time on the CPU), and the training-loop
# benchmark on CUDA against PyTorch eager.
# Everything it produces goes to $OUT (default ./gpu-check-out) as two files, because the GPU
# machine returns at most 8: summary.txt (one line per step) and gpu-check-results.tar.gz (every
# log, machine.txt, train-cuda.json, notebooks/NN.json and NN.cpu.json), rewritten after each step so a run cut
# short still returns what it did. Exits 1 if any step failed. `scripts/gpu-check --apply DIR`
# writes the results into the repository.
#
# Environment: TCHBOOK_PYTHON (default /opt/torch/.venv/bin/python, else python3) is the Python
# whose torch supplies libtorch and runs the PyTorch side; GPU_CHECK_BENCH_RUNS (default 2) runs
# per side in the benchmark; GPU_CHECK_DEADLINE_S (default 560) is the whole run's time: each step's
# limit is cut to what is left of it, so that the summary is written before the GPU runner's
# 600-second limit ends the command, and a step with no time left is reported as not run.
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
repo=$PWD
out=${OUT:-$repo/gpu-check-out}
mkdir -p "$out"
results=$(mktemp -d)/results
mkdir -p "$results/notebooks"
scratch=$(mktemp -d)   # the notebooks' working directory: stand-in data, saved weights

python=${TCHBOOK_PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$python" ] || python=$(command -v python3)
export TCHBOOK_PYTHON=$python
torch_dir=$("$python" -c 'import torch,os;print(os.path.dirname(torch.__file__))') || {
  echo "run.sh: $python cannot import torch; set TCHBOOK_PYTHON to a Python with torch 2.11" >&2
  exit 2
}
export LD_LIBRARY_PATH="$torch_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LIBTORCH=$torch_dir   # the prelude's tests read it

# The prelude's tests read files beside their sources (prelude/tests/parity.py, bench/torch_loops.py);
# the path compiled into the test binary is the build machine's, so they are told this copy's.
export TCHBOOK_PRELUDE_DIR=$repo/prelude

device=cpu
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then device=cuda; fi
{
  echo "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)"
  echo "torch $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
} > "$results/machine.txt"
cp "$bundle/MANIFEST" "$results/" 2>/dev/null

failed=()
steps=0
publish() {
  tar -C "$(dirname "$results")" -czf "$out/gpu-check-results.tar.gz" results
  {
    if [ ${#failed[@]} -eq 0 ]; then echo "PASS: $steps step(s) on $device, none failed"
    else echo "FAIL: ${failed[*]} (of $steps step(s) on $device)"; fi
    tr '\n' ' ' < "$results/machine.txt"; echo
    cat "$results/steps.txt" 2>/dev/null
  } > "$out/summary.txt"
}

deadline=$((SECONDS + ${GPU_CHECK_DEADLINE_S:-560}))

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in NAME.log, records the outcome. The
# limit is cut to what is left before the deadline (less 15 s: timeout's kill grace and publishing).
step() {
  local name=$1 limit=$2
  shift 2
  steps=$((steps + 1))
  echo "==> $name"
  local start=$SECONDS left=$((deadline - SECONDS - 15))
  [ "$left" -lt "$limit" ] && limit=$left
  local rc verdict=PASS
  if [ "$limit" -lt 5 ]; then
    echo "not run: the run's ${GPU_CHECK_DEADLINE_S:-560} s were spent" > "$results/$name.log"
    rc=-1 verdict="FAIL (not run: no time left)"
  else
    timeout --kill-after=10 "$limit" "$@" > "$results/$name.log" 2>&1
    rc=$?
  fi
  if [ $rc -eq -1 ]; then :
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict="FAIL (over its ${limit} s limit)"
  elif [ $rc -ne 0 ]; then verdict="FAIL (exit $rc)"; fi
  [ "$verdict" = PASS ] || failed+=("$name")
  echo "$verdict $name ($((SECONDS - start)) s)" | tee -a "$results/steps.txt"
  tail -n 5 "$results/$name.log" | sed 's/^/    /'
  publish
}

# The limits add up to more than the deadline: the benchmark, last, gets what the others left (on
# an H100 host it has needed more than 300 s of the 560).
step gpu_check 150 "$bundle/bin/gpu_check"
# The prelude's modules that touch devices, memory, state dicts, pinned loading and training.
step prelude-tests 200 "$bundle/bin/prelude-tests" device:: memory:: models:: loader:: train:: \
  --test-threads 2
for nb in 01-using-the-gpu 02-cpu-cuda-mps 03-cifar10-on-the-gpu 04-deeplizard-pytorch-on-the-gpu 05-bootcamp-using-gpu; do
  step "notebook-$nb" 150 bash -c 'cd "$1" && exec "$2" --record "$3"' _ \
    "$scratch" "$bundle/bin/$nb" "$results/notebooks/$nb.json"
done
# 03 and 05 teach that their small steps gain little on a GPU: the same programs run again on this
# machine's CPU (CUDA hidden), and --apply puts that run's printout under the GPU's in their cells
# tagged `beside` (`tchbook export --merge --beside`). 04 compares the devices in its own run.
for nb in 03-cifar10-on-the-gpu 05-bootcamp-using-gpu; do
  step "notebook-$nb-cpu" 150 bash -c 'cd "$1" && CUDA_VISIBLE_DEVICES= exec "$2" --record "$3"' _ \
    "$scratch" "$bundle/bin/$nb" "$results/notebooks/$nb.cpu.json"
done
step bench-"$device" 480 "$python" "$repo/bench/train.py" --bin "$bundle/bin/tchbook-bench" \
  --glibc-bin "$bundle/bin/tchbook-bench-glibc" --mimalloc "$bundle/bin/libmimalloc.so" \
  --device "$device" --runs "${GPU_CHECK_BENCH_RUNS:-2}" --threads 1 --timeout 60 \
  --out "$results/train-$device.json"

rm -rf "$scratch"
cat "$out/summary.txt"
[ ${#failed[@]} -eq 0 ]
