#!/usr/bin/env bash
# Issue 20's CPU scaling: `topos train` as 1, 2, 4, 8 and 16 MPI processes of one thread each on
# the device machine's 16 cores, 4 processes of 4 threads, and one process of 16 threads, on the
# NYTimes-shaped corpus (a fifth of its documents by default: one thread samples about 1M tokens/s
# in the first iterations at K = 1,000, so the full 99.7M tokens would take 100 s an iteration);
# tokens/s, parallel efficiency, and the communication share. The model of every row is the same
# file (checked by its checksum).
#
#   here:            cargo build --release -p topos-cli --features mpi
#                    cp target/release/topos .devbin/topos-mpi   (bench/gpu.sh build makes .devbin)
#   device machine:  bash bench/mpi.sh            (K=1000 ITERS=3 ALGO=cgs DOCS=60600 by default)
#
# BIN=path picks another binary (an A/B in one call); ONLY="np4x4 threads16" runs only the named
# rows; TAG=name suffixes the row names (their outputs and the table's first column); EXTRA="…"
# adds options to every `topos train`.
#
# Rows go to $OUT/mpi.tsv; each run's JSON summary to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/topos-mpi-out}
mkdir -p "$OUT"
bin=${BIN:-$PWD/.devbin/topos-mpi}
ONLY=${ONLY:-}
TAG=${TAG:-}
K=${K:-1000}
ITERS=${ITERS:-3}
DOCS=${DOCS:-60600}
ALGO=${ALGO:-cgs}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
table=$OUT/mpi.tsv
nproc | sed 's/^/cores: /' | tee -a "$table"
mpirun --version | head -1 | tee -a "$table"
corpus=/tmp/nyt-$DOCS.tcorp
[ -f $corpus ] || "$bin" synth -o $corpus --docs $DOCS --vocab 100000 --topics 100 --doc-len 332 \
  --holdout 0.01 -q

train() { # name launcher... -- extra args
  local name=$1; shift
  if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi
  name=$name$TAG
  local launcher=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  shift
  /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "${launcher[@]}" "$bin" train $corpus -k "$K" \
    --iters "$ITERS" --algo "$ALGO" --device cpu --skip-heldout --eval-every 0 \
    -o "/tmp/$name.tmod" --json -q ${EXTRA:-} "$@" > "$OUT/$name.json"
  python3 - "$OUT/$name.json" "$OUT/$name.time" "$name" "/tmp/$name.tmod" <<'PY' | tee -a "$table"
import json, sys, zlib
s = json.load(open(sys.argv[1])); wall, kib = open(sys.argv[2]).read().split()
crc = zlib.crc32(open(sys.argv[4], "rb").read())
x = s.get("exchange") or {}
comm = s["phases"].get("communication", 0.0)
w = x.get("waiting_seconds")
wait = f"\twaiting {w:.2f} s" if w is not None else ""
print(f"{sys.argv[3]}\tprocesses {s['workers']}\tthreads {s['threads']}\t{s['tokens_per_second']/1e6:.1f}M tok/s"
      f"\tloop {s['seconds']:.2f} s\tcommunication {comm:.2f} s ({100*comm/max(s['seconds'],1e-9):.0f}%)"
      f"\tsent {s['communicated_bytes']/2**20/max(s['iterations'],1):.0f} MiB/it"
      f"\texchange sparse {x.get('sparse', '-')} dense {x.get('dense', '-')}"
      f"\twall {float(wall):.1f} s\thost {(s.get('peak_memory_bytes') or 0)/2**30:.2f} GiB (first process)\tLL {s['train_ll']:.4f}\tmodel crc {crc:08x}{wait}")
PY
}

train one-thread -- --threads 1
for np in 2 4 8 16; do
  train "np$np" mpirun --bind-to core -np $np -- --threads 1
done
TOPOS_EXCHANGE=dense train np8-dense mpirun --bind-to core -np 8 -x TOPOS_EXCHANGE -- --threads 1
TOPOS_EXCHANGE=sparse train np8-sparse mpirun --bind-to core -np 8 -x TOPOS_EXCHANGE -- --threads 1
train np4x4 mpirun --bind-to none --map-by slot -np 4 -- --threads 4
# Each process bound to 4 cores of its own (its threads cannot land on another's).
train np4x4-pinned mpirun --map-by slot:PE=4 --bind-to core -np 4 -- --threads 4
train threads16 -- --threads 16
cat "$table"
