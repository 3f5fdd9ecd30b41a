#!/usr/bin/env bash
# mfm's own-draw removal and counter levels on the GPU (issue 17; BENCHMARKS.md, "mfm with its
# own draw removed"), for the device machine after `bash bench/gpu.sh build` here (carry
# .devbin and .devdata): mfm's GPU tests, memcheck and racecheck of its kernels, held-out
# log-likelihood at K = 100 after 200 iterations on the three short real corpora of .devdata for
# cgs, esca and mfm (each width, own draw removed; exact with it kept), two seeds, then the
# NYTimes-shaped corpus at K = 1,000 (bench/gpu.sh mfm) unless SKIP_NYT is set.
#   OUT=... bash bench/mfm-own-device.sh
set -uo pipefail
export PATH=$PWD/.devbin:$PATH NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"
echo "== GPU tests"
gpu-tests --ignored gpu_mfm --test-threads 1 2>&1 | tail -12 | tee "$OUT/tests.txt"
echo "== sanitizers"
topos synth -o /tmp/small.tcorp --docs 1500 --vocab 3000 --topics 20 --doc-len 120 --quiet
for c in exact approx8; do
  compute-sanitizer --tool memcheck topos train /tmp/small.tcorp -k 50 --iters 3 --algo mfm --counters $c --device cuda -q -o /tmp/s.tmod 2>&1 | grep -o 'ERROR SUMMARY: [0-9]* errors' | sed "s/^/memcheck $c: /"
done
compute-sanitizer --tool racecheck topos train /tmp/small.tcorp -k 50 --iters 2 --algo mfm --counters approx8 --device cuda -q -o /tmp/s.tmod 2>&1 | grep -o 'RACECHECK SUMMARY: [0-9]* hazards[^\n]*\|ERROR SUMMARY: [0-9]* errors' | head -1 | sed 's/^/racecheck: /'
echo "== quality, K = 100, 200 iterations, GPU"
for c in reuters-short arxiv 20news; do
  for run in cgs esca mfm:exact:removed mfm:approx8:removed mfm:approx4:removed mfm:exact:kept; do
    IFS=: read -r algo counters own <<< "$run"; extra=()
    [ -n "${counters:-}" ] && extra+=(--counters "$counters" --own-draw "$own")
    for seed in 1 2; do
      topos train .devdata/$c.tcorp -k 100 --iters 200 --algo $algo "${extra[@]}" --seed $seed --device cuda \
        --heldout-every 100 --eval-every 100 -o /tmp/q.tmod --json -q > /tmp/q.json 2>/tmp/q.err || { echo "FAILED $c $run"; tail -3 /tmp/q.err; continue; }
      python3 -c "import json;s=json.load(open('/tmp/q.json'));print('$c\t$run\tseed $seed\theldout %.4f\ttrain %.4f\t%.0fM tok/s'%(s['heldout_ll'],s['train_ll'],s['tokens_per_second']/1e6))"
    done
  done
done | tee "$OUT/quality.tsv"
[ -n "${SKIP_NYT:-}" ] && exit 0
echo "== NYT-shaped K = 1000, 100 iterations"
OUT=$OUT RUNS="cgs esca mfm:exact mfm:approx8 mfm:exact:kept mfm:approx8:kept" bash bench/gpu.sh mfm 2>&1 | tail -12
