#!/usr/bin/env bash
# What bounds the speed-up of G GPUs (issue 21; BENCHMARKS.md, "What bounds the speed-up of G
# GPUs"): with a free exchange, G GPUs go no faster than one GPU sampling 1/G of the corpus. One
# GPU times the sweep on the whole NYTimes- and PubMed-shaped corpora and on corpora of 1/2 and
# 1/4 of their documents; the steady per-iteration time is the difference of a long and a short
# run over their difference in iterations, so the start and the first dense iterations drop out.
#
#   device machine (one GPU):  bash bench/bound.sh      (T=.devbin/topos)
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
T=${T:-.devbin/topos}
nvidia-smi --query-gpu=name --format=csv,noheader
run() { # corpus K format iterations
  TOPOS_GPU_WORD_TOPICS=$3 $T train /tmp/$1.tcorp -k $2 --iters $4 --device cuda --json -q \
    --heldout-every 0 -o /tmp/bound.tmod > /tmp/bound.json
  python3 -c "
import json; d=json.load(open('/tmp/bound.json')); p=d.get('gpu_plan') or {}
print('$1 K=$2 $3 it=$4', 'loop %.4f'%d['seconds'], d['train_tokens'], p.get('format'), p.get('mode'))"
}
for f in 1 2 4; do
  $T synth -o /tmp/nyt$f.tcorp --docs $((303000/f)) --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01 -q
  for k in 1000 10000; do for it in 10 40; do run nyt$f $k dense $it; done; done
  for it in 10 40; do run nyt$f 10000 hybrid $it; done
  rm -f /tmp/nyt$f.tcorp
done
for f in 1 2 4; do
  $T synth -o /tmp/pm$f.tcorp --docs $((8282000/f)) --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q
  for k in 1000 10000; do for it in 5 20; do run pm$f $k dense $it; done; done
  rm -f /tmp/pm$f.tcorp
done
