#!/usr/bin/env bash
# mfm's own-draw removal and counter levels on the GPU (issue 17; BENCHMARKS.md, "mfm with its
# own draw removed"), for the device machine after `bash bench/gpu.sh build` here (carry
# .devbin and .devdata). PARTS (default "tests quality nyt") chooses among:
#   tests     mfm's GPU tests, memcheck and racecheck of its kernels
#   quality   held-out log-likelihood at K = 100 (QUALITY_AT) after 200 iterations on the three short real
#             corpora of .devdata for cgs, esca and mfm (each width, own draw removed; exact with
#             it kept), seeds 1 and 2
#   nyt       the NYTimes-shaped corpus at K = 1,000 (bench/gpu.sh mfm)
#   gutenberg .devdata/gutenberg.tcorp (topos prepare ../shared/data/gutenberg/chunks1000.txt.gz
#             --holdout 0.1, made here) at K = 1,000, 10,000 and 32,768, 200 iterations, held-out
#             every 50, whole process under /usr/bin/time
#   pubmed    the PubMed-shaped corpus at K = 1,000, 100 iterations (bench/gpu.sh mfm)
#   OUT=... PARTS="..." bash bench/mfm-own-device.sh
# QUALITY_RUNS, QUALITY_AT (CORPUS:K pairs of .devdata corpora), GUTENBERG_RUNS and GUTENBERG_K
# override the runs of those parts (a run is ALGO or mfm:COUNTERS:OWN, OWN one of --own-draw's
# values).
set -uo pipefail
export PATH=$PWD/.devbin:$PATH NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
PARTS=${PARTS:-tests quality nyt}
has() { [[ " $PARTS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"
if has tests; then
  echo "== GPU tests"
  gpu-tests --ignored gpu_mfm --test-threads 1 2>&1 | tail -12 | tee "$OUT/tests.txt"
  echo "== sanitizers"
  topos synth -o /tmp/small.tcorp --docs 1500 --vocab 3000 --topics 20 --doc-len 120 --quiet
  for c in exact approx8; do
    compute-sanitizer --tool memcheck topos train /tmp/small.tcorp -k 50 --iters 3 --algo mfm --counters $c --device cuda -q -o /tmp/s.tmod 2>&1 | grep -o 'ERROR SUMMARY: [0-9]* errors' | sed "s/^/memcheck $c: /"
  done
  compute-sanitizer --tool racecheck topos train /tmp/small.tcorp -k 50 --iters 2 --algo mfm --counters approx8 --device cuda -q -o /tmp/s.tmod 2>&1 | grep -o 'RACECHECK SUMMARY: [0-9]* hazards[^\n]*\|ERROR SUMMARY: [0-9]* errors' | head -1 | sed 's/^/racecheck: /'
fi
# A run is ALGO or mfm:COUNTERS:OWN.
run_args() {
  IFS=: read -r algo counters own <<< "$1"; extra=(--algo "$algo")
  [ -n "${counters:-}" ] && extra+=(--counters "$counters" --own-draw "$own")
  return 0
}
if has quality; then
  echo "== quality, 200 iterations, GPU"
  for ck in ${QUALITY_AT:-reuters-short:100 arxiv:100 20news:100}; do
    c=${ck%:*} k=${ck#*:}
    for run in ${QUALITY_RUNS:-cgs esca mfm:exact:removed mfm:approx8:removed mfm:approx4:removed mfm:exact:kept}; do
      run_args "$run"
      for seed in 1 2; do
        topos train .devdata/$c.tcorp -k $k --iters 200 "${extra[@]}" --seed $seed --device cuda \
          --heldout-every 100 --eval-every 100 -o /tmp/q.tmod --json -q > /tmp/q.json 2>/tmp/q.err || { echo "FAILED $c $run"; tail -3 /tmp/q.err; continue; }
        python3 -c "import json;s=json.load(open('/tmp/q.json'));print('$c\tK=$k\t$run\tseed $seed\theldout %.4f\ttrain %.4f\t%.0fM tok/s'%(s['heldout_ll'],s['train_ll'],s['tokens_per_second']/1e6))"
      done
    done
  done | tee "$OUT/quality.tsv"
fi
if has gutenberg; then
  echo "== Gutenberg, 200 iterations"
  for k in ${GUTENBERG_K:-1000 10000 32768}; do
    for run in ${GUTENBERG_RUNS:-cgs esca mfm:exact:removed mfm:approx8:removed mfm:exact:kept}; do
      run_args "$run"
      /usr/bin/time -f "%e %M" -o /tmp/g.time topos train .devdata/gutenberg.tcorp -k $k --iters 200 "${extra[@]}" \
        --device cuda --heldout-every 50 --log /tmp/g.jsonl -o /tmp/g.tmod --json -q > /tmp/g.json 2>/tmp/g.err || { echo "FAILED $k $run"; tail -3 /tmp/g.err; continue; }
      python3 - "$k" "$run" <<'PY'
import json, sys
s = json.load(open('/tmp/g.json'))
h = {r['iteration']: r['heldout_ll'] for r in map(json.loads, open('/tmp/g.jsonl')) if r.get('heldout_ll') is not None}
wall, rss = open('/tmp/g.time').read().split()[-2:]
print(f"{sys.argv[1]}\t{sys.argv[2]}\t{s['tokens_per_second']/1e6:.0f}M\tloop {s['seconds']:.2f} s\t" + "\t".join(f"{h.get(i, float('nan')):.4f}" for i in (50, 100, 200)) + f"\twall {float(wall):.2f} s\thost {int(rss)/1000:.0f} MB")
PY
    done
  done | tee "$OUT/gutenberg.tsv"
fi
if has nyt; then
  echo "== NYT-shaped K = 1000, 100 iterations"
  OUT=$OUT RUNS="cgs esca mfm:exact mfm:approx8 mfm:exact:kept mfm:approx8:kept" bash bench/gpu.sh mfm 2>&1 | tail -12
fi
if has pubmed; then
  echo "== PubMed-shaped K = 1000, 100 iterations"
  OUT=$OUT CORPUS=pubmed HOLDOUT=0.001 RUNS="cgs esca mfm:exact mfm:approx8" bash bench/gpu.sh mfm 2>&1 | tail -12
fi
