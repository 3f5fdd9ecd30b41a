#!/usr/bin/env bash
# Issue 21: several GPUs of one host, on the device machine's multi-GPU kinds (nvidia-h100-x2 and
# up). The GPU tests first (their group test puts one engine on each GPU, and three on two GPUs,
# which stage their exchange through the host), then the NYTimes-shaped corpus on one GPU, on
# every GPU of the process (`--device cuda:all`, NCCL between them), as one MPI process per GPU
# (`mpirun -np N --device cuda`), and on every GPU with the exchange staged through the host;
# tokens/s, the exchange's share of the loop, and whether every run wrote the same model.
#
#   here:            bash bench/gpu.sh build; cargo build --release -p topos-cli --features mpi;
#                    cp target/release/topos .devbin/topos-mpi
#   device machine:  bash bench/multigpu.sh        (K="1000 10000", ITERS=100, CORPUS=nyt|pubmed,
#                                                   TESTS=0 skips the GPU tests, FAULT=0 the fault run,
#                                                   HOST=0 the host-staged exchange, AGAIN=0 the
#                                                   one-GPU repeat, DENSE=0 the forced-dense row,
#                                                   ITERS_LARGE_K the iterations at K > 5,000 (30),
#                                                   ALGOS="fcgs esca ezlda mh mfm" the other
#                                                   samplers at ALGO_K (1000) three ways)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/topos-multigpu-out}
mkdir -p "$OUT"
export PATH=$PWD/.devbin:$PATH
# NVLink multicast (NVLS) off: the device machines' KINDS.md.
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
table=$OUT/multigpu.tsv
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee -a "$table"
nvidia-smi topo -m > "$OUT/topology.txt" 2>&1 || true
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "gpus: $gpus" | tee -a "$table"

if [ "${TESTS:-1}" = 1 ]; then
  (cd .devbin && ./gpu-tests --ignored --test-threads 1 --nocapture 2>&1) > "$OUT/gpu-tests.log" || {
    tail -40 "$OUT/gpu-tests.log"; exit 1; }
  grep -E "test result|engines on" "$OUT/gpu-tests.log" | tee -a "$table"
  # The group test's corpus is too dense for the sparse exchange to be chosen: force it once.
  (cd .devbin && TOPOS_EXCHANGE=sparse ./gpu-tests --ignored --test-threads 1 --nocapture \
    gpu_engines_sharing 2>&1) > "$OUT/gpu-tests-sparse.log" || { tail -40 "$OUT/gpu-tests-sparse.log"; exit 1; }
  grep -E "test result|engines on" "$OUT/gpu-tests-sparse.log" | tee -a "$table"
  # The sliced sweep cut seven ways (uneven word ranges, some slices small), sparse.
  (cd .devbin && TOPOS_EXCHANGE=sparse TOPOS_EXCHANGE_SLICES=7 ./gpu-tests --ignored --test-threads 1 \
    --nocapture gpu_engines_sharing 2>&1) > "$OUT/gpu-tests-slices7.log" || { tail -40 "$OUT/gpu-tests-slices7.log"; exit 1; }
  grep -E "test result|engines on" "$OUT/gpu-tests-slices7.log" | tee -a "$table"
  # memcheck on every GPU of one process, the sweep in slices, sparse and dense (not fatal here:
  # NCCL's own host calls are reported too; the log's device errors are read by hand).
  topos synth -o /tmp/small.tcorp --docs 1500 --vocab 3000 --topics 20 --doc-len 120 --quiet
  for way in sparse dense; do
    TOPOS_EXCHANGE=$way timeout 300 compute-sanitizer --tool memcheck --print-limit 50 \
      topos train /tmp/small.tcorp -k 50 --iters 3 --device cuda:all -q -o /tmp/s.tmod \
      > "$OUT/sanitizer-slices-$way.log" 2>&1 || true
    echo "memcheck cuda:all $way: $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$OUT/sanitizer-slices-$way.log")," \
      "invalid accesses: $(grep -c 'Invalid __global__' "$OUT/sanitizer-slices-$way.log")" | tee -a "$table"
  done
fi

# The corpora of the GPU section of BENCHMARKS.md (PubMed-shaped: 0.1% held out, as there).
case ${CORPUS:-nyt} in
  nyt) corpus=/tmp/nyt.tcorp
    [ -f $corpus ] || topos synth -o $corpus --docs 303000 --vocab 100000 --topics 100 --doc-len 332 \
      --holdout 0.01 -q ;;
  pubmed) corpus=/tmp/pubmed.tcorp
    [ -f $corpus ] || topos synth -o $corpus --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 \
      --holdout 0.001 -q ;;
  *) echo "unknown CORPUS"; exit 2 ;;
esac
echo "corpus: ${CORPUS:-nyt}" | tee -a "$table"

if [ "${FAULT:-1}" = 1 ]; then
  # A GPU rank that fails mid-run (TOPOS_FAULT=RANK:ITERATION, as a device error would) must end
  # the whole run with the rank named, non-zero, and leave no model.
  rm -f /tmp/fault.tmod
  set +e
  TOPOS_FAULT=1:3 timeout 120 mpirun --bind-to none -np "$gpus" -x TOPOS_FAULT -x NCCL_NVLS_ENABLE \
    topos-mpi train $corpus -k 1000 --iters 10 --device cuda -o /tmp/fault.tmod -q > "$OUT/fault.log" 2>&1
  rc=$?
  set -e
  named=$(grep -c "process 1 of $gpus" "$OUT/fault.log" || true)
  echo "fault run (TOPOS_FAULT=1:3, GPU ranks): exit $rc, rank named $named time(s), model left: $([ -e /tmp/fault.tmod ] && echo yes || echo no)" | tee -a "$table"
  grep -m1 "error" "$OUT/fault.log" | tee -a "$table" || true
fi

train() { # name k iters launcher... -- args
  local name=$1 k=$2 iters=$3; shift 3
  local launcher=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  shift
  /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "${launcher[@]}" train $corpus -k "$k" \
    --iters "$iters" -o "/tmp/$name.tmod" --json -q "$@" > "$OUT/$name.json" 2> "$OUT/$name.err" \
    || { echo "FAILED $name"; tail -5 "$OUT/$name.err"; return 0; }
  python3 - "$OUT/$name.json" "$OUT/$name.time" "$name" "/tmp/$name.tmod" <<'PY' | tee -a "$table"
import json, sys, zlib
s = json.load(open(sys.argv[1])); wall, kib = open(sys.argv[2]).read().split()
crc = zlib.crc32(open(sys.argv[4], "rb").read())
x = s.get("exchange") or {}
ph = s["phases"]
f = lambda v: "NA" if v is None else f"{v:.4f}"
print(f"{sys.argv[3]}\tK={s['topics']}\t{s['iterations']} it\tworkers {s['workers']}\t{s['device']}"
      f"\t{s['tokens_per_second']/1e6:.0f}M tok/s\tloop {s['seconds']:.2f} s\texchange {ph.get('exchange', 0):.2f} s"
      f"\tnccl {x.get('nccl', '-')} sparse {x.get('nccl_sparse', '-')} host {x.get('dense', '-')}\twall {float(wall):.1f} s"
      f"\theld-out {f(s['heldout_ll'])}\ttrain {f(s['train_ll'])}\tmodel crc {crc:08x}")
PY
}

for k in ${K:-1000 10000}; do
  iters=${ITERS:-100}
  [ "$k" -gt 5000 ] && iters=${ITERS_LARGE_K:-30}
  train "k$k-one" "$k" "$iters" topos -- --device cuda
  [ "${AGAIN:-1}" = 1 ] && train "k$k-one-again" "$k" "$iters" topos -- --device cuda
  train "k$k-all" "$k" "$iters" topos -- --device cuda:all
  # NCCL's dense all-reduce every iteration, beside the run above that goes sparse when the
  # non-zeros are few (the A/B of the two ways in one call); DENSE=0 skips it.
  [ "${DENSE:-1}" = 1 ] && TOPOS_EXCHANGE=dense train "k$k-all-dense" "$k" "$iters" topos -- --device cuda:all
  train "k$k-mpi" "$k" "$iters" mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE topos-mpi -- --device cuda
  # The host-staged exchange (the fallback without NCCL): minutes at K = 10,000; HOST=0 skips it.
  if [ "${HOST:-1}" = 1 ]; then
    TOPOS_GPU_EXCHANGE=host train "k$k-all-host" "$k" 20 topos -- --device cuda:all
  fi
done
# Every other sampler on one GPU, on every GPU of the process and as one MPI process per GPU
# (ALGOS="fcgs esca ezlda mh mfm", ALGO_K, ITERS): each must converge, and the deterministic ones
# must write the one GPU's model.
for algo in ${ALGOS:-}; do
  k=${ALGO_K:-1000}
  train "$algo-k$k-one" "$k" "${ITERS:-100}" topos -- --device cuda --algo "$algo"
  train "$algo-k$k-all" "$k" "${ITERS:-100}" topos -- --device cuda:all --algo "$algo"
  train "$algo-k$k-mpi" "$k" "${ITERS:-100}" mpirun --bind-to none -np "$gpus" -x NCCL_NVLS_ENABLE topos-mpi \
    -- --device cuda --algo "$algo"
done
cat "$table"
