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
source "$(dirname "$0")/ab-common.sh"
NEW=.devbin/topos
OLD=${OLD:?the old binary (OLD=path)}
for corpus in ${CORPUS:-nyt}; do
  c=$(ab_corpus "$corpus" $NEW)
  for spec in ${SPECS:-1000:100 10000:30}; do
    k=${spec%:*} it=${spec#*:}
    for round in $(seq "${ROUNDS:-2}"); do
      for bin in old new; do
        B=$OLD; [ $bin = new ] && B=$NEW
        for dev in cuda cuda:all; do
          [ $dev = cuda ] && [ "$round" != 1 ] && continue
          ab_run "$corpus K=$k round $round $bin $dev" \
            $B train $c -k $k --iters $it --device $dev --heldout-every 0 --json -q -o /tmp/ab.tmod
        done
      done
    done
    if [ "${MPI:-1}" = 1 ] && [ -x .devbin/topos-mpi ]; then
      ab_run "$corpus K=$k mpirun -np $gpus new" \
        mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE .devbin/topos-mpi train $c -k $k --iters $it \
        --device cuda --heldout-every 0 --json -q -o /tmp/ab.tmod
    fi
  done
done
