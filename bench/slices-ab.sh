#!/usr/bin/env bash
# A/B of the sliced sweep (issue 21): the exchange of each slice of the vocabulary while the
# next slices sample, against the whole sweep and then the exchange (TOPOS_EXCHANGE_SLICES=1),
# one binary, on every GPU of the device machine: `--device cuda` once, `--device cuda:all` for
# each slice count in ROUNDS interleaved rounds, then `mpirun -np G ... --device cuda` for each;
# tokens/s, the loop, the exchange's seconds not hidden behind the sweep and its ways, the
# model's CRC32 (every row of a corpus and K must agree), and the whole process's wall seconds
# and peak host memory by /usr/bin/time (under mpirun: mpirun's largest waited-for child).
#
#   here:            bash bench/gpu.sh build; cargo build --release -p topos-cli --features mpi;
#                    cp target/release/topos .devbin/topos-mpi
#   device machine:  CORPUS="nyt pubmed" bash bench/slices-ab.sh
#                    (SPECS="K:ITERS ...", default "1000:100 10000:30"; SLICES="1 4 8";
#                     ROUNDS=2; MPI_SLICES="1 4", empty skips mpirun)
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
BIN=.devbin/topos
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name --format=csv,noheader
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); x=d.get('exchange') or {}
ways='/'.join(str(x.get(w,0)) for w in ('nccl','nccl_sparse'))
wall, kb = open('/tmp/ab.time').read().split()
print(sys.argv[2], '%.0fM tok/s'%(d['tokens_per_second']/1e6), 'loop %.3f s'%d['seconds'],
      'exchange %.3f s'%(x.get('seconds') or 0), 'slices', x.get('slices'), 'all-reduce/sparse', ways, 'crc', sys.argv[3],
      'whole %s s %.0f MiB'%(wall, int(kb)/1024))" "$@"; }
timed() { /usr/bin/time -f "%e %M" -o /tmp/ab.time "$@"; }
crc() { cksum < "$1" | cut -d' ' -f1; }
run() {  # label, then the command
  local label=$1; shift
  timed "$@" > /tmp/ab.json 2> /tmp/ab.err || { echo "FAILED $label"; tail -3 /tmp/ab.err; exit 1; }
  summ /tmp/ab.json "$label" "$(crc /tmp/ab.tmod)"
}
for corpus in ${CORPUS:-nyt}; do
  case $corpus in
    nyt) c=/tmp/nyt.tcorp
      [ -f $c ] || $BIN synth -o $c --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01 -q ;;
    pubmed) c=/tmp/pubmed.tcorp
      [ -f $c ] || $BIN synth -o $c --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q ;;
    *) echo "unknown corpus $corpus"; exit 2 ;;
  esac
  for spec in ${SPECS:-1000:100 10000:30}; do
    k=${spec%:*} it=${spec#*:}
    args=(train $c -k $k --iters $it --heldout-every 0 --json -q -o /tmp/ab.tmod)
    run "$corpus K=$k one GPU" $BIN "${args[@]}" --device cuda
    for round in $(seq "${ROUNDS:-2}"); do
      for s in ${SLICES:-1 4 8}; do
        TOPOS_EXCHANGE_SLICES=$s run "$corpus K=$k round $round slices $s cuda:all" \
          $BIN "${args[@]}" --device cuda:all
      done
    done
    if [ -x .devbin/topos-mpi ]; then
      for s in ${MPI_SLICES-1 4}; do
        TOPOS_EXCHANGE_SLICES=$s run "$corpus K=$k slices $s mpirun -np $gpus" \
          mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE -x TOPOS_EXCHANGE_SLICES \
          .devbin/topos-mpi "${args[@]}" --device cuda
      done
    fi
  done
done
