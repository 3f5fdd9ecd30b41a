#!/usr/bin/env bash
# The whole process of a GPU run beside its loop: the summary's phases (start, training
# log-likelihood, held-out, outputs = writing the model, with the host's held-out fold-in where
# φ is sparse), wall and peak host memory by /usr/bin/time, and the model's CRC32, for each binary
# in BINS on the PubMed-shaped corpus (made there) at each K, 30 iterations.
#
#   here:            bash bench/gpu.sh build   (then copy an older build to .devbin/ to compare)
#   device machine:  BINS="topos-old topos" KS="10000 1000" DEVICE=cuda bash bench/outputs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/.devbin:$PATH NCCL_NVLS_ENABLE=0
c=/tmp/pubmed.tcorp
[ -f $c ] || topos synth -o $c --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q
for k in ${KS:-10000 1000}; do
  for b in ${BINS:-topos}; do
    /usr/bin/time -f "%e %M" -o /tmp/t .devbin/$b train $c -k $k --iters 30 --heldout-every 0 \
      --json -q -o /tmp/m.tmod --device ${DEVICE:-cuda} > /tmp/r.json 2> /tmp/r.err || { tail /tmp/r.err; exit 1; }
    python3 - "$b" "$k" "$(cksum < /tmp/m.tmod | cut -d' ' -f1)" <<'PY'
import json, sys
d = json.load(open('/tmp/r.json')); wall, kb = open('/tmp/t').read().split()
print(sys.argv[1], 'K', sys.argv[2], 'wall', wall, 's, host', int(kb) // 1024, 'MiB, loop %.3f s' % d['seconds'],
      'crc', sys.argv[3], 'held-out', d.get('heldout_ll'))
print('  phases', {k: round(v, 3) for k, v in d['phases'].items() if isinstance(v, (int, float)) and v})
PY
  done
done
