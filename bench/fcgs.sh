#!/usr/bin/env bash
# Held-out log-likelihood per token of cgs, fcgs and esca at equal iterations, on the CPU
# (issue 17, part 2). Each run writes its --log; the table is held-out LL at 50/100/200 and
# mean tokens/s. Usage: bash bench/fcgs.sh [corpus.tcorp ...]   (env: K, ITERS, THREADS, SEEDS, ALGOS)
# An entry of ALGOS may name mfm's counters: ALGOS="cgs esca mfm mfm:approx8 mfm:approx4".
set -euo pipefail
TOPOS=${TOPOS:-target/release/topos}
K=${K:-100}
ITERS=${ITERS:-200}
THREADS=${THREADS:-2}
SEEDS=${SEEDS:-"1 2"}
ALGOS=${ALGOS:-"cgs fcgs esca"}
OUT=${OUT:-/tmp/fcgs-bench}
mkdir -p "$OUT"
printf '| corpus | K | sampler | seed | held-out 50 | held-out 100 | held-out %s | tokens/s |\n|---|---:|---|---:|---:|---:|---:|---:|\n' "$ITERS"
for corpus in "$@"; do
  name=$(basename "$corpus" .tcorp)
  for spec in $ALGOS; do
    algo=${spec%%:*}
    extra=()
    [[ $spec == *:* ]] && extra=(--counters "${spec#*:}")
    for seed in $SEEDS; do
      log="$OUT/$name-$K-${spec/:/-}-$seed.jsonl"
      "$TOPOS" train "$corpus" -k "$K" --iters "$ITERS" --algo "$algo" "${extra[@]}" --seed "$seed" \
        --threads "$THREADS" --heldout-every 50 --eval-every 50 --log "$log" -o "$OUT/m.tmod" -q --json > "$OUT/last.json"
      python3 - "$log" "$OUT/last.json" "$name" "$K" "$spec" "$seed" "$ITERS" <<'PY'
import json, sys
log, summary, name, k, algo, seed, iters = sys.argv[1:]
rows = {r["iteration"]: r for r in map(json.loads, open(log)) if "heldout_ll" in r}
s = json.load(open(summary))
cell = lambda i: f"{rows[i]['heldout_ll']:.4f}" if i in rows else "–"
print(f"| {name} | {k} | {algo} | {seed} | {cell(50)} | {cell(100)} | {cell(int(iters))} | {s['tokens_per_second']/1e6:.2f}M |")
PY
    done
  done
done
