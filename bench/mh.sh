#!/usr/bin/env bash
# `mh` on the CPU side by side with WarpLDA, `cgs` and `fcgs`, one thread (issue 19; BENCHMARKS.md,
# "The `mh` sampler on the CPU"). Every system's counts at every checkpoint are scored by the same
# `topos eval` (bench/peers.py); the target is WarpLDA's held-out value at iteration 100.
#
#   bash bench/mh.sh CORPUS.tcorp K [ITERS] [EVERY]
#
# WarpLDA is built outside the repository in $PEERS (default /tmp/peers) with its runner
# run_warplda.py (BENCHMARKS.md, "Peers (how they were built and run)"). The systems run one
# after the other; results are appended to $OUT.
set -euo pipefail
corpus=$1 k=$2 iters=${3:-300} every=${4:-10}
out=${OUT:-/tmp/topos-bench/mh.tsv}
mkdir -p "$(dirname "$out")"
python3 "$(dirname "$0")/peers.py" "$corpus" --k "$k" --iters "$iters" --every "$every" --threads 1 \
  --systems warplda,topos-mh,topos-cgs,topos-fcgs --target-from warplda:100 --out "$out"
