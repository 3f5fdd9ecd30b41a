#!/usr/bin/env bash
# Throughput (tokens/s over the timed iterations) and peak memory (max RSS) of both samplers at
# several K on several corpora. Prints one TSV row per run:
#   corpus  algo  K  threads  iterations  tokens_per_s  peak_rss_MiB  train_ll
# usage: [ALGOS="esca cgs"] bench/throughput.sh "K1 K2 ..." ITERS THREADS CORPUS.tcorp...
set -euo pipefail
TOPOS=${TOPOS:-$(dirname "$0")/../target/release/topos}
ks=$1; iters=$2; threads=$3; shift 3
for corpus in "$@"; do
  for algo in ${ALGOS:-esca cgs}; do
    for k in $ks; do
      out=$(mktemp -d)
      /usr/bin/time -f "%M" -o "$out/rss" "$TOPOS" train "$corpus" -k "$k" --iters "$iters" --algo "$algo" \
        --threads "$threads" --eval-every 0 -o "$out/m.tmod" --json -q > "$out/s.json"
      python3 - "$corpus" "$algo" "$k" "$threads" "$iters" "$out" <<'PY'
import json, sys, os
corpus, algo, k, threads, iters, out = sys.argv[1:]
s = json.load(open(os.path.join(out, "s.json")))
rss = int(open(os.path.join(out, "rss")).read().split()[-1]) / 1024
print(f"{os.path.basename(corpus)}\t{algo}\t{k}\t{threads}\t{iters}\t{s['tokens_per_second']/1e6:.2f}M\t{rss:.0f}\t{s['train_ll']:.4f}")
PY
      rm -rf "$out"
    done
  done
done
