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
source "$(dirname "$0")/ab-common.sh"
BIN=.devbin/topos
for corpus in ${CORPUS:-nyt}; do
  c=$(ab_corpus "$corpus" $BIN)
  for spec in ${SPECS:-1000:100 10000:30}; do
    k=${spec%:*} it=${spec#*:}
    args=(train $c -k $k --iters $it --heldout-every 0 --json -q -o /tmp/ab.tmod)
    ab_run "$corpus K=$k one GPU" $BIN "${args[@]}" --device cuda
    for round in $(seq "${ROUNDS:-2}"); do
      for s in ${SLICES:-1 4 8}; do
        TOPOS_EXCHANGE_SLICES=$s ab_run "$corpus K=$k round $round slices $s cuda:all" \
          $BIN "${args[@]}" --device cuda:all
      done
    done
    if [ -x .devbin/topos-mpi ]; then
      for s in ${MPI_SLICES-1 4}; do
        TOPOS_EXCHANGE_SLICES=$s ab_run "$corpus K=$k slices $s mpirun -np $gpus" \
          mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE -x TOPOS_EXCHANGE_SLICES \
          .devbin/topos-mpi "${args[@]}" --device cuda
      done
    fi
  done
done
