#!/usr/bin/env bash
# A/B of two builds on every GPU of the device machine (issue 21): `--device cuda` and
# `--device cuda:all` with the old binary and the new, interleaved in ROUNDS rounds, then
# `mpirun -np G ... --device cuda` with the new MPI build; tokens/s, the loop, the exchange's
# seconds and ways, the model's CRC32 (every row of a corpus and K must agree), and the whole
# process's wall seconds and peak host memory by /usr/bin/time (under mpirun: mpirun's, which
# counts its largest waited-for child).
#
#   here:            bash bench/gpu.sh build; cargo build --release -p topos-cli --features mpi;
#                    cp target/release/topos .devbin/topos-mpi; OLD's binary somewhere carried
#   device machine:  OLD=.devmpi/old8/topos CORPUS="nyt pubmed" bash bench/exchange-ab.sh
#                    (SPECS="K:ITERS ...", default "1000:100 10000:30"; ROUNDS=2; MPI=0 skips mpirun)
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
NEW=.devbin/topos
OLD=${OLD:?the old binary (OLD=path)}
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name --format=csv,noheader
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); x=d.get('exchange') or {}
ways='/'.join(str(x.get(w,0)) for w in ('nccl','nccl_sparse'))
wall, kb = open('/tmp/ab.time').read().split()
print(sys.argv[2], '%.0fM tok/s'%(d['tokens_per_second']/1e6), 'loop %.3f s'%d['seconds'],
      'exchange %.3f s'%(x.get('seconds') or 0), 'all-reduce/sparse', ways, 'crc', sys.argv[3],
      'whole %s s %.0f MiB'%(wall, int(kb)/1024))" "$@"; }
timed() { /usr/bin/time -f "%e %M" -o /tmp/ab.time "$@"; }
crc() { cksum < "$1" | cut -d' ' -f1; }
for corpus in ${CORPUS:-nyt}; do
  case $corpus in
    nyt) c=/tmp/nyt.tcorp
      [ -f $c ] || $NEW synth -o $c --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01 -q ;;
    pubmed) c=/tmp/pubmed.tcorp
      [ -f $c ] || $NEW synth -o $c --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q ;;
    *) echo "unknown corpus $corpus"; exit 2 ;;
  esac
  for spec in ${SPECS:-1000:100 10000:30}; do
    k=${spec%:*} it=${spec#*:}
    for round in $(seq "${ROUNDS:-2}"); do
      for bin in old new; do
        B=$OLD; [ $bin = new ] && B=$NEW
        for dev in cuda cuda:all; do
          [ $dev = cuda ] && [ "$round" != 1 ] && continue
          timed $B train $c -k $k --iters $it --device $dev --heldout-every 0 --json -q -o /tmp/ab.tmod \
            > /tmp/ab.json 2> /tmp/ab.err || { echo "FAILED $bin $dev"; tail -3 /tmp/ab.err; exit 1; }
          summ /tmp/ab.json "$corpus K=$k round $round $bin $dev" "$(crc /tmp/ab.tmod)"
        done
      done
    done
    if [ "${MPI:-1}" = 1 ] && [ -x .devbin/topos-mpi ]; then
      timed mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE .devbin/topos-mpi train $c -k $k --iters $it \
        --device cuda --heldout-every 0 --json -q -o /tmp/ab.tmod > /tmp/ab.json 2> /tmp/ab.err \
        || { echo "FAILED mpirun"; tail -3 /tmp/ab.err; exit 1; }
      summ /tmp/ab.json "$corpus K=$k mpirun -np $gpus new" "$(crc /tmp/ab.tmod)"
    fi
  done
done
