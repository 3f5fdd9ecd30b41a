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
source "$(dirname "$0")/ab-common.sh"
NEW=.devbin/topos
OLD=${OLD:-.devbin/topos-old}
c=$(ab_corpus "${CORPUS:-nyt}" $NEW)
for spec in ${SPECS:-1000:100 10000:30}; do
  k=${spec%%:*}; it=${spec##*:}
  args=(train $c -k "$k" --iters "$it" --heldout-every 0 -o /tmp/ab.tmod --json -q)
  ab_run "K=$k one GPU" $NEW "${args[@]}" --device cuda
  for round in $(seq "${ROUNDS:-2}"); do
    ab_run "K=$k round $round spawned cuda:all" $OLD "${args[@]}" --device cuda:all
    ab_run "K=$k round $round crew cuda:all" $NEW "${args[@]}" --device cuda:all
  done
  if [ "${MPI:-1}" = 1 ]; then
    ab_run "K=$k mpirun -np $gpus" mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE \
      .devbin/topos-mpi "${args[@]}" --device cuda
  fi
done
