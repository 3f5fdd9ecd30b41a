#!/usr/bin/env bash
# ezlda against cgs and fcgs on the CPU (issue 19, part 1): held-out log-likelihood per token at
# equal iterations, ezlda's skipped fractions by iteration, and tokens/s. Each run writes its
# --log (a line every 10 iterations, held-out every 50); the samplers of one corpus and seed run
# back to back. Usage: bash bench/ezlda.sh [corpus.tcorp ...]
#   (env: K, ITERS, THREADS, SEEDS, ALGOS, OUT, TOPOS)
# Speed on one thread, per iteration at iterations 10/50/100 (the log's tokens_per_second is
# the iteration's own sampling time, evaluations excluded):
#   THREADS=1 HELDOUT=0 ITERS=100 K=1000 bash bench/ezlda.sh C.tcorp
set -euo pipefail
TOPOS=${TOPOS:-target/release/topos}
K=${K:-100}
ITERS=${ITERS:-200}
THREADS=${THREADS:-2}
SEEDS=${SEEDS:-"1"}
ALGOS=${ALGOS:-"cgs fcgs ezlda"}
HELDOUT=${HELDOUT:-1}
OUT=${OUT:-/tmp/ezlda-bench}
mkdir -p "$OUT"
printf '| corpus | K | sampler | seed | held-out 50 / 100 / %s | tokens/s (mean) | it/s at 10 / 50 / 100 / %s | skipped final (S′) at 10 / 50 / 100 / %s |\n|---|---:|---|---:|---|---:|---|---|\n' "$ITERS" "$ITERS" "$ITERS"
for corpus in "$@"; do
  name=$(basename "$corpus" .tcorp)
  for seed in $SEEDS; do
    for algo in $ALGOS; do
      log="$OUT/$name-$K-$algo-$seed-$THREADS.jsonl"
      if [ "$HELDOUT" = 1 ]; then eval_args=(--heldout-every 50); else eval_args=(--skip-heldout); fi
      "$TOPOS" train "$corpus" -k "$K" --iters "$ITERS" --algo "$algo" --seed "$seed" \
        --threads "$THREADS" "${eval_args[@]}" --eval-every 10 --log "$log" -o "$OUT/m.tmod" -q --json > "$OUT/last.json"
      python3 - "$log" "$OUT/last.json" "$name" "$K" "$algo" "$seed" "$ITERS" <<'PY'
import json, sys
log, summary, name, k, algo, seed, iters = sys.argv[1:]
rows = {r["iteration"]: r for r in map(json.loads, open(log))}
s = json.load(open(summary))
its = [10, 50, 100, int(iters)]
held = lambda i: f"{rows[i]['heldout_ll']:.4f}" if rows.get(i, {}).get("heldout_ll") is not None else "–"
speed = lambda i: f"{rows[i]['tokens_per_second']/1e6:.2f}M" if i in rows else "–"
skip = lambda i: (f"{100*rows[i]['skipped_final_fraction']:.0f}% ({100*rows[i]['skipped_construction_fraction']:.0f}%)"
                  if "skipped_final_fraction" in rows.get(i, {}) else "–")
print(f"| {name} | {k} | {algo} | {seed} | {' / '.join(held(i) for i in [50, 100, int(iters)])} | "
      f"{s['tokens_per_second']/1e6:.2f}M | {' / '.join(speed(i) for i in its)} | {' / '.join(skip(i) for i in its)} |")
PY
    done
  done
done
