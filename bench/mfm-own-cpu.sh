#!/usr/bin/env bash
# Held-out log-likelihood per token of mfm's own-draw conditionals against cgs at equal
# iterations, on the CPU (issue 17: mfm within 0.02 nats of cgs). Prints one row per corpus, K
# and run: the mean over SEEDS of the held-out value after ITERS iterations, its difference to
# cgs's, and mean tokens/s.
# Usage: bash bench/mfm-own-cpu.sh corpus.tcorp ...   (env: KS, ITERS, THREADS, SEEDS, RUNS)
# A run is ALGO or mfm:COUNTERS:OWN, as in bench/mfm-own-device.sh, e.g.
# RUNS="cgs mfm:exact:balanced mfm:approx8:removed".
set -euo pipefail
TOPOS=${TOPOS:-target/release/topos}
KS=${KS:-"100 300 1000"}
ITERS=${ITERS:-200}
THREADS=${THREADS:-2}
SEEDS=${SEEDS:-"1 2"}
RUNS=${RUNS:-"cgs mfm:exact:balanced mfm:exact:removed"}
OUT=${OUT:-/tmp/mfm-own-cpu}
mkdir -p "$OUT"
printf '| corpus | K | run | held-out (mean of seeds %s) | against cgs | tokens/s |\n|---|---:|---|---:|---:|---:|\n' "$SEEDS"
for corpus in "$@"; do
  name=$(basename "$corpus" .tcorp)
  for k in $KS; do
    base=""
    for run in $RUNS; do
      IFS=: read -r algo counters own <<< "$run"
      extra=()
      [[ -n ${own:-} ]] && extra+=(--own-draw "$own")
      [[ -n ${counters:-} ]] && extra+=(--counters "$counters")
      sum=0; tps=0; n=0
      for seed in $SEEDS; do
        "$TOPOS" train "$corpus" -k "$k" --iters "$ITERS" --algo "$algo" "${extra[@]}" --seed "$seed" \
          --threads "$THREADS" --heldout-every "$ITERS" -o "$OUT/m.tmod" -q --json > "$OUT/last.json"
        read -r ll t < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["heldout_ll"], d["tokens_per_second"])' "$OUT/last.json")
        sum=$(python3 -c "print($sum + $ll)"); tps=$(python3 -c "print($tps + $t)"); n=$((n + 1))
      done
      mean=$(python3 -c "print(f'{$sum / $n:.4f}')")
      [[ $algo == cgs ]] && base=$mean
      diff=$([[ -n $base ]] && python3 -c "print(f'{$mean - $base:+.4f}')" || echo "–")
      printf '| %s | %s | %s | %s | %s | %.2fM |\n' "$name" "$k" "$run" "$mean" "$diff" "$(python3 -c "print($tps / $n / 1e6)")"
    done
  done
done
