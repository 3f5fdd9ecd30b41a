#!/usr/bin/env bash
# Issue 16's table: the whole process (/usr/bin/time: wall and peak host memory) beside the
# sampling loop's own time (the summary's `seconds`), on the device machine, for the landed
# driver (.devbin/topos-old, built from the commit before the driver moved) and the new one.
#
#   here:            bash bench/gpu.sh build; cp <old build>/topos .devbin/topos-old
#   device machine:  bash bench/driver.sh table      NYTimes- and PubMed-shaped corpora, old and new
#                    bash bench/driver.sh phases     the new binary's rows with their phases
#                    bash bench/driver.sh quick      fewer rows (one NYTimes K = 32,768 run less)
#                    bash bench/driver.sh nyt        the NYTimes K = 1,024 rows only
#                    bash bench/driver.sh big        a >= 2-billion-token corpus at K = 1,000
#
# Rows: corpus, K, iterations, binary, loop seconds, wall seconds, wall/loop, peak host GiB,
# tokens/s of the loop, held-out LL, training LL, GPU plan. Logs go to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-table}
OUT=${OUT:-/tmp/topos-driver-out}
mkdir -p "$OUT"
export PATH=$PWD/.devbin:$PATH
table=$OUT/driver.tsv
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$table"

synth() { # name args...
  local name=$1; shift
  [ -f "/tmp/$name.tcorp" ] && return
  /usr/bin/time -f "synth $name %e s, peak %M KiB" topos synth -o "/tmp/$name.tcorp" "$@" --json \
    > "$OUT/synth-$name.json" 2>> "$OUT/synth.log"
  tail -1 "$OUT/synth.log" | tee -a "$table"
}

run() { # binary corpus k iters extra...
  local bin=$1 corpus=$2 k=$3 iters=$4; shift 4
  local name="$corpus-k$k-$bin"
  /usr/bin/time -f "%e %M" -o "$OUT/$name.time" \
    "$bin" train "/tmp/$corpus.tcorp" -k "$k" --iters "$iters" --device cuda -o "/tmp/$name.tmod" \
    --json -q "$@" > "$OUT/$name.json" 2> "$OUT/$name.err" || { echo "FAILED $name"; tail -3 "$OUT/$name.err"; return 0; }
  python3 - "$OUT/$name.json" "$OUT/$name.time" "$corpus" "$k" "$iters" "$bin" <<'PY' | tee -a "$table"
import json, sys
s = json.load(open(sys.argv[1])); wall, kib = open(sys.argv[2]).read().split()
wall, gib = float(wall), int(kib) / 2**20
plan = s.get("gpu_plan") or {}
f = lambda x: "NA" if x is None else f"{x:.4f}"
ph = s.get("phases")
ph = " ".join(f"{k} {v:.2f}" for k, v in ph.items() if v) if ph else "NA"
op = (plan.get("open_seconds") or {})
if op: ph += " | open " + " ".join(f"{k} {v:.2f}" for k, v in op.items())
print(f"{sys.argv[3]}\tK={sys.argv[4]}\t{sys.argv[5]} it\t{sys.argv[6]}\tloop {s['seconds']:.2f} s\twall {wall:.2f} s\t{wall / s['seconds']:.2f}x\thost {gib:.2f} GiB\t{s['tokens_per_second'] / 1e6:.0f}M tok/s\theldout {f(s['heldout_ll'])}\ttrain {f(s['train_ll'])}\t{plan.get('mode')} {plan.get('chunks')} {plan.get('format')}\t[{ph}]")
PY
}

if [ "$mode" = phases ]; then
  synth nyt --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01
  synth pubmed --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001
  run topos nyt 1024 100 --algo esca   # compiles the kernels into the PTX cache
  run topos nyt 1024 100 --algo esca
  run topos nyt 32768 30 --algo esca
  run topos pubmed 1000 20 --algo esca
  run topos pubmed 32768 20 --algo esca
  # The issue's PubMed command makes no held-out set: the same runs without its evaluation.
  run topos pubmed 1000 20 --algo esca --skip-heldout
  run topos pubmed 32768 20 --algo esca --skip-heldout
fi

if [ "$mode" = quick ]; then
  # The phases of one NYTimes and the PubMed runs (corpora made by an earlier `phases`).
  synth nyt --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01
  synth pubmed --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001
  run topos nyt 1024 100 --algo esca   # fills the PTX cache
  run topos nyt 1024 100 --algo esca
  run topos nyt 32768 30 --algo esca
  run topos pubmed 1000 20 --algo esca
  run topos pubmed 1000 20 --algo esca --skip-heldout
  run topos pubmed 32768 20 --algo esca --skip-heldout
fi

if [ "$mode" = nyt ]; then
  synth nyt --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01
  run topos nyt 1024 100 --algo esca   # fills the PTX cache
  run topos nyt 1024 100 --algo esca
fi

if [ "$mode" = table ]; then
  synth nyt --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01
  synth pubmed --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001
  # The first run compiles the kernels (NVRTC) and fills the PTX cache; say so in the table.
  for bin in topos topos-old; do
    run $bin nyt 1024 100 --algo esca
  done
  run topos nyt 32768 30 --algo esca
  run topos nyt 1024 100 --algo cgs
  for bin in topos topos-old; do
    run $bin pubmed 1000 20 --algo esca
  done
  run topos pubmed 32768 20 --algo esca
fi

if [ "$mode" = big ]; then
  # 22.3M documents of 90 tokens: 2.0 billion tokens (8 GiB of corpus file), PubMed's shape.
  synth big --docs 22300000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.0002
  run topos big 1000 ${ITERS:-100} --algo ${ALGO:-cgs} --eval-every 50
fi
cat "$table"
