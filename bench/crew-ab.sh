#!/usr/bin/env bash
# A/B of the engine group's crew (issue 21): `--device cuda:all` with one thread a GPU kept for
# the run (.devbin/topos) against one spawned every iteration (OLD, default .devbin/topos-old),
# interleaved ROUNDS times, on the NYTimes- or PubMed-shaped corpus; `mpirun -np G` (MPI=1, .devbin/topos-mpi)
# and one GPU as the references. Loop seconds, exchange seconds, the model's CRC32, and the whole
# process's wall and peak host memory (/usr/bin/time).
#
#   here:            bash bench/gpu.sh build; keep the old binary as .devbin/topos-old
#                    (and an MPI build as .devbin/topos-mpi)
#   device machine:  bash bench/crew-ab.sh      (CORPUS=nyt|pubmed, SPECS="1000:100 10000:30",
#                                                ROUNDS=2, MPI=1)
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
NEW=.devbin/topos
OLD=${OLD:-.devbin/topos-old}
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name --format=csv,noheader
case ${CORPUS:-nyt} in
  nyt) c=/tmp/nyt.tcorp
    [ -f $c ] || $NEW synth -o $c --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01 -q ;;
  pubmed) c=/tmp/pubmed.tcorp
    [ -f $c ] || $NEW synth -o $c --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q ;;
  *) echo "unknown CORPUS"; exit 2 ;;
esac
run() {  # label, then the command
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o /tmp/ab.time "$@" > /tmp/ab.json 2> /tmp/ab.err || {
    echo "FAILED $label"; tail -3 /tmp/ab.err; exit 1; }
  python3 -c "
import json,sys; d=json.load(open('/tmp/ab.json')); x=d.get('exchange') or {}
wall, kb = open('/tmp/ab.time').read().split()
print(sys.argv[1], '%.0fM tok/s'%(d['tokens_per_second']/1e6), 'loop %.3f s'%d['seconds'],
      'exchange %.3f s'%(x.get('seconds') or 0), 'crc', sys.argv[2], 'whole %s s %.0f MiB'%(wall, int(kb)/1024))" \
    "$label" "$(cksum < /tmp/ab.tmod | cut -d' ' -f1)"
}
for spec in ${SPECS:-1000:100 10000:30}; do
  k=${spec%%:*}; it=${spec##*:}
  args=(train $c -k "$k" --iters "$it" --heldout-every 0 -o /tmp/ab.tmod --json -q)
  run "K=$k one GPU" $NEW "${args[@]}" --device cuda
  for round in $(seq "${ROUNDS:-2}"); do
    run "K=$k round $round spawned cuda:all" $OLD "${args[@]}" --device cuda:all
    run "K=$k round $round crew cuda:all" $NEW "${args[@]}" --device cuda:all
  done
  if [ "${MPI:-1}" = 1 ]; then
    run "K=$k mpirun -np $gpus" mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE \
      .devbin/topos-mpi "${args[@]}" --device cuda
  fi
done
