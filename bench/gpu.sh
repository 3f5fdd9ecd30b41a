#!/usr/bin/env bash
# The one GPU script: checks and benchmarks of the GPU engine on the device machine, a short
# table last. Two halves:
#
#   here (no GPU):   bench/gpu.sh build     builds the release binary and the GPU test binary,
#                                           strips them into .devbin/, copies the 20news corpus
#                                           into .devdata/ (both ignored by git, carried)
#   device machine:  bench/gpu.sh check     GPU tests (--ignored), compute-sanitizer, 20news
#                                           held-out LL of GPU vs CPU
#                    bench/gpu.sh formats [K...]  word-topic counts dense against hybrid
#                    bench/gpu.sh knn [METRICS]  sparse k-NN (issue 5): the GPU k-NN tests, then
#                                           10-NN of every row of random, Zipf-degree and 20news
#                                           matrices, Topos's GPU engine and CuPy side by side
#                    bench/gpu.sh bench [K...]   NYTimes-shaped synthetic corpus made there,
#                                           tokens/s (mean of iterations 1-100 and steady state)
#                                           and held-out LL at each K; CuLDA_CGS side by side when
#                                           .peers/culda is carried
#                    bench/gpu.sh peer      CuLDA_CGS (two builds) and Topos at K = 1,024, one call
#                    bench/gpu.sh profile [K...]  Nsight Compute on the sampler (SOURCE=1: the
#                                           per-instruction source view too)
#                    bench/gpu.sh memory     device memory of whole runs (nvidia-smi) under
#                                           --gpu-memory budgets, PubMed-shaped K = 32,768
#                    bench/gpu.sh mfm       Mean-for-Mode beside cgs and esca: speed, device
#                                           memory, held-out LL (CORPUS, K, ITERS, RUNS)
#                    bench/gpu.sh tune [K...]    40-iteration A/B of compile-time shapes (TUNE) and
#                                           kernel switches (DEFINES)
#
# The device call (the `device` tool's run, carry [".devbin", ".devdata"] and ".peers" for the
# peer):  bash bench/gpu.sh check   (or bench). Results go to $OUT (logs, JSON, table.tsv).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
shift || true
OUT=${OUT:-/tmp/topos-gpu-out}
# Logs and JSON summaries go to $WORK; $OUT gets the table and one tarball of $WORK (the device
# tool brings back at most 8 files).
WORK=/tmp/topos-gpu-work
mkdir -p "$OUT" "$WORK"
trap 'tar -czf "$OUT/logs.tar.gz" --exclude=./culda/data -C "$WORK" . 2>/dev/null || true' EXIT

if [ "$mode" = build ]; then
  cargo build --release -p topos-cli
  # The GPU tests of the LDA engine (topos-train) and of the k-NN engine (topos-distance).
  cargo test --release -p topos-train --test gpu --no-run 2>&1 | tee /tmp/gpu-build.log
  train_bin=$(grep -o 'target/release/deps/gpu-[0-9a-f]*' /tmp/gpu-build.log | tail -1)
  cargo test --release -p topos-distance --test gpu --no-run 2>&1 | tee /tmp/gpu-build.log
  knn_bin=$(grep -o 'target/release/deps/gpu-[0-9a-f]*' /tmp/gpu-build.log | tail -1)
  # The unit tests that need NVRTC (kernels compile for every row shape, the PTX cache): they
  # return early where NVRTC is missing, as in CI, so they are run here.
  cargo test --release -p topos-train -p topos-cuda -p topos-distance --lib --no-run 2>&1 | tee /tmp/gpu-build.log
  unit_bins=$(grep -o 'target/release/deps/topos_\(train\|cuda\|distance\)-[0-9a-f]*' /tmp/gpu-build.log | sort -u)
  rm -rf .devbin && mkdir -p .devbin .devdata
  cargo build --release -p topos-distance --example knn_gpu --example random_csr --example corpus_csr
  cp target/release/topos .devbin/topos
  cp "$train_bin" .devbin/gpu-tests
  cp "$knn_bin" .devbin/knn-gpu-tests
  for b in $unit_bins; do cp "$b" ".devbin/unit-$(basename "$b" | cut -d- -f1)"; done
  cp target/release/examples/{knn_gpu,random_csr,corpus_csr} .devbin/
  strip .devbin/*
  data=${TOPOS_20NEWS:-/tmp/bench/20news.tcorp}
  if [ ! -f .devdata/20news.tcorp ]; then
    if [ -f "$data" ]; then cp "$data" .devdata/20news.tcorp; else
      target/release/topos prepare ../shared/data/20news/train.txt.gz -o .devdata/20news.tcorp --holdout 0.1 --quiet
    fi
  fi
  ls -la .devbin .devdata
  exit 0
fi

export PATH=$PWD/.devbin:$PATH
table=$OUT/table.tsv
: > "$table"
row() { printf '%s\n' "$*" | tee -a "$table"; }

# One train run; prints its JSON summary to $WORK/$name.json.
train() {
  local name=$1; shift
  topos train "$@" --json -q > "$WORK/$name.json" 2> "$WORK/$name.err" || {
    echo "FAILED: topos train $*"; cat "$WORK/$name.err"; return 1; }
}
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); v=d; 
for k in sys.argv[2].split('.'): v=v[k]
print(v if not isinstance(v,float) else f'{v:.4f}')" "$1" "$2"; }

nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.mem --format=csv
topos devices

if [ "$mode" = check ]; then
  echo "== GPU tests"
  .devbin/gpu-tests --ignored --test-threads 1 --nocapture 2>&1 | tee "$WORK/tests.log"
  grep -q "test result: ok" "$WORK/tests.log"
  row "tests	$(grep 'test result' "$WORK/tests.log")"
  # The exact samplers' conditional tests again with every document row read from memory, the
  # path of rows too long for registers, which their short documents do not reach otherwise.
  TOPOS_GPU_DEFINES=ROWS_IN_MEMORY=1 .devbin/gpu-tests --ignored --test-threads 1 --nocapture \
    draws_each_token_from_the_collapsed_conditional 2>&1 | tee "$WORK/tests-rows-in-memory.log"
  grep -q "test result: ok. 2 passed" "$WORK/tests-rows-in-memory.log"
  row "conditional tests, rows in memory	$(grep 'test result' "$WORK/tests-rows-in-memory.log")"
  # The streamed runs again in pageable host memory (the fallback where page-locking is
  # refused): the same models; and a CLI run says so in its plan and writes the pinned run's model.
  TOPOS_GPU_PAGEABLE=1 .devbin/gpu-tests --ignored --test-threads 1 --nocapture \
    streamed_and_partitioned_runs_equal_the_resident_run gpu_mfm_gives_the_same_model_for_any_chunking_and_run \
    gpu_mh_recovers_known_topics_and_streams_to_the_resident_model 2>&1 | tee "$WORK/tests-pageable.log"
  grep -q "test result: ok. 3 passed" "$WORK/tests-pageable.log"
  row "streamed tests, pageable host memory	$(grep 'test result' "$WORK/tests-pageable.log")"
  topos synth -o /tmp/pg.tcorp --docs 3000 --vocab 5000 --topics 20 --doc-len 100 --quiet
  for algo in cgs mfm; do
    sums=""
    for pageable in 0 1; do
      TOPOS_GPU_PAGEABLE=$pageable topos train /tmp/pg.tcorp -k 50 --iters 5 --algo $algo --device cuda \
        --gpu-stream --json -q -o /tmp/pg.tmod > "$WORK/pageable-$algo-$pageable.json"
      python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['gpu_plan']; assert p['host_memory_pageable'] == (sys.argv[2] == '1'), p" \
        "$WORK/pageable-$algo-$pageable.json" $pageable
      sums="$sums $(cksum < /tmp/pg.tmod | cut -d' ' -f1)"
    done
    set -- $sums; [ "$1" = "$2" ] || { echo "pageable $algo wrote another model: $sums"; exit 1; }
    row "streamed $algo, pinned and pageable	same model ($1)"
  done
  .devbin/knn-gpu-tests --ignored --test-threads 1 2>&1 | tee "$WORK/knn-tests.log"
  grep -q "test result: ok" "$WORK/knn-tests.log"
  row "k-NN tests	$(grep 'test result' "$WORK/knn-tests.log")"
  for u in .devbin/unit-*; do
    "$u" compile 2>&1 | tee "$WORK/$(basename "$u").log"
    grep -q "test result: ok" "$WORK/$(basename "$u").log"
    row "$(basename "$u") (NVRTC)	$(grep 'test result' "$WORK/$(basename "$u").log")"
  done

  echo "== compute-sanitizer (memcheck, racecheck) on small runs, resident and streamed"
  topos synth -o /tmp/small.tcorp --docs 1500 --vocab 3000 --topics 20 --doc-len 120 --quiet
  for algo in esca cgs ezlda mh; do
    for extra in "" "--gpu-stream"; do
      compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
        topos train /tmp/small.tcorp -k 50 --iters 3 --algo $algo --device cuda $extra -q -o /tmp/s.tmod \
        > "$WORK/sanitizer-$algo$extra.log" 2>&1 || { cat "$WORK/sanitizer-$algo$extra.log"; exit 1; }
      row "memcheck	$algo $extra	$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$WORK/sanitizer-$algo$extra.log")"
    done
  done
  # Hybrid word-topic rows (hashed rows: probes and CAS inserts), every GPU kernel.
  for algo in esca cgs ezlda mh; do
    TOPOS_GPU_WORD_TOPICS=hybrid compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      topos train /tmp/small.tcorp -k 500 --iters 3 --algo $algo --device cuda -q -o /tmp/s.tmod \
      > "$WORK/sanitizer-$algo-hybrid.log" 2>&1 || { cat "$WORK/sanitizer-$algo-hybrid.log"; exit 1; }
    row "memcheck	$algo hybrid	$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$WORK/sanitizer-$algo-hybrid.log")"
  done
  # One copy of the word-topic counts (the recount after each sweep), resident and streamed.
  for extra in "" "--gpu-stream"; do
    TOPOS_GPU_COUNT_COPIES=1 TOPOS_GPU_WORD_TOPICS=hybrid compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      topos train /tmp/small.tcorp -k 500 --iters 3 --algo ezlda --device cuda $extra -q -o /tmp/s.tmod \
      > "$WORK/sanitizer-one-copy$extra.log" 2>&1 || { cat "$WORK/sanitizer-one-copy$extra.log"; exit 1; }
    row "memcheck	ezlda hybrid, one copy $extra	$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$WORK/sanitizer-one-copy$extra.log")"
  done
  # mfm's own kernels (samplers/mfm/gpu.cu), exact and 1-byte registers, and their shared memory,
  # resident and streamed (two streams, a slot and half the histograms each).
  for counters in exact approx8; do
    for extra in "" "--gpu-stream"; do
      compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
        topos train /tmp/small.tcorp -k 50 --iters 3 --algo mfm --counters $counters --device cuda $extra -q -o /tmp/s.tmod \
        > "$WORK/sanitizer-mfm-$counters$extra.log" 2>&1 || { cat "$WORK/sanitizer-mfm-$counters$extra.log"; exit 1; }
      row "memcheck	mfm $counters $extra	$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$WORK/sanitizer-mfm-$counters$extra.log")"
    done
  done
  compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
    topos train /tmp/small.tcorp -k 50 --iters 2 --algo mfm --counters approx8 --device cuda -q -o /tmp/s.tmod \
    > "$WORK/racecheck-mfm.log" 2>&1 || { tail -40 "$WORK/racecheck-mfm.log"; exit 1; }
  row "racecheck	mfm	$(grep -o 'ERROR SUMMARY: [0-9]* errors\|RACECHECK SUMMARY: [0-9]* hazards[^\n]*' "$WORK/racecheck-mfm.log" | head -1)"
  compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
    topos train /tmp/small.tcorp -k 50 --iters 1 --device cuda -q -o /tmp/s.tmod > "$WORK/racecheck.log" 2>&1 \
    || { tail -40 "$WORK/racecheck.log"; exit 1; }
  row "racecheck	cgs (default)	$(grep -o 'RACECHECK SUMMARY: [0-9]* hazard[s]* displayed[^)]*)' "$WORK/racecheck.log" || echo none)"
  compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
    topos train /tmp/small.tcorp -k 50 --iters 2 --algo ezlda --device cuda -q -o /tmp/s.tmod > "$WORK/racecheck-ezlda.log" 2>&1 \
    || { tail -40 "$WORK/racecheck-ezlda.log"; exit 1; }
  row "racecheck	ezlda	$(grep -o 'RACECHECK SUMMARY: [0-9]* hazard[s]* displayed[^)]*)' "$WORK/racecheck-ezlda.log" || echo none)"

  echo "== 20news, K = 100, 200 iterations: GPU against the CPU reference"
  # mh: another chain on the GPU (its own proposals), so listed but not held to the CPU's value.
  for run in "cpu cgs" "cpu fcgs" "cpu esca" "cpu ezlda" "cpu mh" "cuda esca" "cuda cgs" "cuda fcgs" "cuda ezlda" "cuda mh"; do
    set -- $run
    train "20news-$1-$2" .devdata/20news.tcorp -k 100 --iters 200 --device "$1" --algo "$2" -o "/tmp/20news-$1-$2.tmod"
    row "20news K=100	$1 $2	heldout $(field "$WORK/20news-$1-$2.json" heldout_ll)	train $(field "$WORK/20news-$1-$2.json" train_ll)	$(field "$WORK/20news-$1-$2.json" tokens_per_second) tok/s	$(field "$WORK/20news-$1-$2.json" seconds) s"
  done
  topos eval /tmp/20news-cuda-esca.tmod --corpus .devdata/20news.tcorp --json > "$WORK/eval-gpu.json" || true
  python3 - "$WORK" <<'PY'
import json, sys
out = sys.argv[1]
bad = []
for algo in ["esca", "cgs", "fcgs", "ezlda"]:
    ref = json.load(open(f"{out}/20news-cpu-{algo}.json"))["heldout_ll"]
    ll = json.load(open(f"{out}/20news-cuda-{algo}.json"))["heldout_ll"]
    print(f"{algo}: GPU held-out {ll:.4f} vs CPU {ref:.4f} (diff {ll-ref:+.4f}; tolerance -0.03)")
    if ll < ref - 0.03: bad.append(algo)
sys.exit(1 if bad else 0)
PY
fi

# The NYTimes- or PubMed-shaped synthetic corpus /tmp/$1.tcorp (nyt or pubmed), made once per
# machine (see the bench mode below).
shaped_corpus() {
  local corpus=$1
  case $corpus in
    nyt) synth_args=(--docs 303000 --vocab 100000 --doc-len 332) ;;
    pubmed) synth_args=(--docs 8282000 --vocab 141043 --doc-len 90) ;;
    # PubMed's documents and vocabulary at NYTimes-shaped size (99M tokens, the same partitions):
    # for profiles and A/B runs of the short-document path.
    pubmed-small) synth_args=(--docs 1100000 --vocab 141043 --doc-len 90) ;;
    *) echo "unknown CORPUS=$corpus"; exit 2 ;;
  esac
  if [ ! -f "/tmp/$corpus.tcorp" ]; then
    echo "== $corpus-shaped synthetic corpus: ${synth_args[*]}"
    /usr/bin/time -f "synth %e s" topos synth -o "/tmp/$corpus.tcorp" "${synth_args[@]}" --topics 100 \
      --holdout "${HOLDOUT:-0.01}" --json > "$WORK/synth-$corpus.json"
  fi
  row "$corpus corpus	$(cat "$WORK/synth-$corpus.json" 2>/dev/null)"
}

if [ "$mode" = bench ]; then
  # CORPUS=nyt (default): 300K docs, 100K words, ~100M tokens; CORPUS=pubmed: 8.2M docs, 141K
  # words, ~740M tokens. Both made here by `topos synth` (100 true topics, each a Dirichlet around
  # its own permutation of a Zipf profile), 1% of the documents held out (HOLDOUT: another
  # fraction; 0.001 keeps PubMed's evaluation inside a call). RUNS picks the runs
  # (default "esca cgs stream"; stream = esca through --gpu-memory 2GiB, at K = 1024 only;
  # old:ALGO = ALGO run by .devbin/topos-old, an older build carried beside the current one,
  # for a side-by-side of two commits in one call).
  ks=${*:-"1024 10000 32768"}
  iters=${ITERS:-100}
  corpus=${CORPUS:-nyt}
  shaped_corpus "$corpus"
  for k in $ks; do
    for algo in ${RUNS:-esca cgs stream}; do
      extra=(); bin=topos; name=
      if [ "${algo#old:}" != "$algo" ]; then
        bin=topos-old; algo=${algo#old:}; name=$corpus-old-$algo-$k
      fi
      if [ "$algo" = stream ]; then
        # The same ESCA run with the corpus streamed through a 2 GiB budget (chunks, two slots).
        [ "$k" = 1024 ] || continue
        algo=esca; extra=(--gpu-memory 2GiB); name=$corpus-esca-$k-streamed
      fi
      [ -n "$name" ] || name=$corpus-$algo-$k
      rm -f "$WORK/$name.log"  # --log appends
      /usr/bin/time -f "$name wall %e s, peak host memory %M KiB" \
        "$bin" train "/tmp/$corpus.tcorp" -k "$k" --iters "$iters" --algo "$algo" --device cuda "${extra[@]}" \
        --eval-every ${EVERY:-$((iters / 5))} --heldout-every ${EVERY:-$((iters / 5))} ${BENCH_EXTRA:-} --log "$WORK/$name.log" \
        -o "/tmp/$name.tmod" --json -q > "$WORK/$name.json" 2> "$WORK/$name.err" \
        || { echo "FAILED: $name"; tail -5 "$WORK/$name.err"; continue; }
      tail -1 "$WORK/$name.err"
      python3 - "$WORK/$name.json" "$WORK/$name.log" "$k" "$name" "$iters" "$corpus" <<'PY' | tee -a "$table"
import json, sys
s = json.load(open(sys.argv[1])); log = [json.loads(l) for l in open(sys.argv[2])]
k, algo, iters, corpus = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
mean = s["tokens_per_second"]
# Steady state: after the first logged point (iteration iters/5) to the end.
a, b = log[0], log[-1]
steady = (b["iteration"] - a["iteration"]) * s["train_tokens"] / max(b["seconds"] - a["seconds"], 1e-9)
print(f"{corpus} K={k}\t{algo}\tmean 1-{iters} {mean/1e6:.0f}M tok/s\tsteady {steady/1e6:.0f}M tok/s\theldout {s['heldout_ll'] or float('nan'):.4f}\ttrain {s['train_ll'] or float('nan'):.4f}\t{s['gpu_plan'].get('mode', '')} {s['gpu_plan'].get('chunks', '')}")
print("  curve (iteration, training seconds, held-out LL): " + ", ".join(f"{d['iteration']} {d['seconds']:.2f}s {d.get('heldout_ll') or float('nan'):.4f}" for d in log))
PY
    done
  done
fi

if [ "$mode" = memory ]; then
  # Device memory of whole runs (issue 19's K = 32,768 target): nvidia-smi samples the GPU's used
  # memory every 100 ms and the peak less the idle figure is the run's (CUDA context included).
  # CORPUS (default pubmed), K (default 32768), ALGO (default ezlda), ITERS (default 20);
  # BUDGETS: --gpu-memory values, "-" for none (default "6000000000 -": 6 GB, which keeps one
  # copy of the word-topic counts, and the whole GPU, which keeps two). Every run writes its
  # model; their CRC32s must agree (one copy recounts the same integer sums).
  corpus=${CORPUS:-pubmed}
  shaped_corpus "$corpus"
  k=${K:-32768} algo=${ALGO:-ezlda} iters=${ITERS:-20}
  idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  for budget in ${BUDGETS:-6000000000 -}; do
    extra=(); [ "$budget" = - ] || extra=(--gpu-memory "$budget")
    name=$corpus-$algo-$k-${budget/-/all}
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$WORK/$name.smi" &
    smi=$!
    /usr/bin/time -f "$name wall %e s, peak host memory %M KiB" \
      topos train "/tmp/$corpus.tcorp" -k "$k" --iters "$iters" --algo "$algo" --device cuda "${extra[@]}" \
      --skip-heldout -o "/tmp/$name.tmod" --json -q > "$WORK/$name.json" 2> "$WORK/$name.err" \
      || { kill $smi; echo "FAILED: $name"; tail -5 "$WORK/$name.err"; continue; }
    kill $smi; wait $smi 2>/dev/null || true
    tail -1 "$WORK/$name.err"
    peak=$(sort -n "$WORK/$name.smi" | tail -1)
    python3 - "$WORK/$name.json" "$name" "$peak" "$idle" "/tmp/$name.tmod" <<'PY' | tee -a "$table"
import json, sys, zlib
s = json.load(open(sys.argv[1])); name, peak, idle = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
crc = 0
with open(sys.argv[5], "rb") as f:
    for block in iter(lambda: f.read(1 << 24), b""):
        crc = zlib.crc32(block, crc)
p = s["gpu_plan"]
print(f"{name}\t{s['tokens_per_second']/1e6:.0f}M tok/s\ttrain {s['train_ll'] or float('nan'):.4f}\t"
      f"device peak {(peak - idle) / 1024:.2f} GiB ({(peak - idle) * 1048576 / 1e9:.2f} GB; nvidia-smi {peak} MiB, idle {idle})\t"
      f"{p['copies']} cop{'y' if p['copies'] == 'one' else 'ies'}: {p['summary']}\tmodel crc32 {crc:08x}")
PY
  done
fi

if [ "$mode" = mfm ]; then
  # Mean-for-Mode on the GPU (issue 17 part 3) beside cgs and esca in the same call: tokens/s,
  # whole-process wall (/usr/bin/time), peak device memory (nvidia-smi every 100 ms, less the
  # idle figure: the CUDA context included), the plan's device bytes, held-out LL at the end.
  # CORPUS (default nyt), K (default 1000), ITERS (default 100), RUNS (default: cgs esca
  # mfm:exact mfm:approx8 mfm:approx4; mfm:exact:kept for --own-draw kept; GPU_MEMORY for a
  # device budget).
  corpus=${CORPUS:-nyt}
  shaped_corpus "$corpus"
  idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  # DEVICES (default cuda): e.g. "cuda cuda:all" for one GPU and every GPU in the same call; the
  # model's CRC32 is printed, so runs that must agree can be compared.
  for k in ${K:-1000}; do
    for run in ${RUNS:-cgs esca mfm:exact mfm:approx8 mfm:approx4}; do
    for dev in ${DEVICES:-cuda}; do
      # A run is ALGO, or mfm:COUNTERS[:OWN] (OWN: --own-draw, removed by default).
      IFS=: read -r algo counters own <<< "$run"; extra=()
      [ -n "${counters:-}" ] && extra+=(--counters "$counters")
      [ -n "${own:-}" ] && extra+=(--own-draw "$own")
      # GPU_MEMORY: a device budget (--gpu-memory), e.g. 1.6GB to stream mfm's corpus.
      [ -n "${GPU_MEMORY:-}" ] && extra+=(--gpu-memory "$GPU_MEMORY")
      name=$corpus-${run//:/-}-$k-${dev/:/-}${GPU_MEMORY:+-$GPU_MEMORY}
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$WORK/$name.smi" &
      smi=$!
      /usr/bin/time -f "%e %M" -o "$WORK/$name.time" \
        topos train "/tmp/$corpus.tcorp" -k "$k" --iters "${ITERS:-100}" --algo "$algo" "${extra[@]}" \
        --device "$dev" -o "/tmp/$name.tmod" --json -q > "$WORK/$name.json" 2> "$WORK/$name.err" \
        || { kill $smi; echo "FAILED: $name"; tail -5 "$WORK/$name.err"; continue; }
      kill $smi; wait $smi 2>/dev/null || true
      peak=$(sort -n "$WORK/$name.smi" | tail -1)
      python3 - "$WORK/$name.json" "$name" "$peak" "$idle" "$WORK/$name.time" "/tmp/$name.tmod" <<'PY' | tee -a "$table"
import json, sys, zlib
s = json.load(open(sys.argv[1])); name, peak, idle = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
crc = zlib.crc32(open(sys.argv[6], "rb").read())
wall, rss = open(sys.argv[5]).read().split()[-2:]
p = s.get("gpu_plan") or {}
dev = (peak - idle) * 1048576
print(f"{name}\t{s['tokens_per_second']/1e6:.0f}M tok/s\tloop {s['seconds']:.2f} s\twall {float(wall):.1f} s\t"
      f"host peak {int(rss)/1048576:.2f} GiB\tdevice peak {dev/1e9:.2f} GB ({dev/s['train_tokens']:.1f} B/token)\t"
      f"heldout {s['heldout_ll'] or float('nan'):.4f}\ttrain {s['train_ll'] or float('nan'):.4f}\tmodel crc32 {crc:08x}\t{p.get('summary', '')}")
PY
    done
    done
  done
fi

# NYTimes-shaped corpus, made once per machine.
nyt() {
  [ -f /tmp/nyt.tcorp ] || topos synth -o /tmp/nyt.tcorp --docs 303000 --vocab 100000 --topics 100 \
    --doc-len 332 --holdout 0.01 --quiet
}

if [ "$mode" = peer ]; then
  # CuLDA_CGS (K fixed at 1024) and Topos at K = 1024 in the same call on the same GPU. The peer's
  # source is carried in .peers/culda (never committed; see its NOTES.md for the patches). Two
  # builds: the patch set the issue lists (sm_90 intrinsics, worker constants; plus the warp-sync
  # fixes, without which it samples wrongly) and that set plus __launch_bounds__(1024, 2), which
  # is faster. Each run dumps its final counts, which `topos import` turns into a model scored by
  # the same `topos eval` as Topos's own models.
  iters=${ITERS:-100}
  nyt
  [ -f /tmp/nyt-txt/train.txt ] || topos export /tmp/nyt.tcorp -o /tmp/nyt-txt --quiet
  for variant in issue bounded; do
    extra=""; [ $variant = issue ] && extra=-DCULDA_NO_LAUNCH_BOUNDS
    CULDA_CLEAN=1 CULDA_NVCC_EXTRA="$extra" bash .peers/culda/run.sh /tmp/nyt-txt/train.txt "$iters" "$WORK/culda" 2>&1 | tail -3
    for f in summary.txt summary.json culda.log culda_iters.csv build.log; do
      cp "$WORK/culda/$f" "$WORK/culda-$variant-$f" 2>/dev/null || true
    done
    heldout=NA
    if [ -s "$WORK/culda/counts.tsv" ]; then
      topos import "$WORK/culda/counts.tsv" --corpus /tmp/nyt.tcorp -k 1024 --alpha 0.048828125 \
        --beta 0.01 --name culda_cgs -o /tmp/culda.tmod -q
      topos eval /tmp/culda.tmod --corpus /tmp/nyt.tcorp --json -q > "$WORK/culda-$variant-eval.json"
      heldout=$(field "$WORK/culda-$variant-eval.json" heldout_ll_per_token)
      rm -f "$WORK/culda/counts.tsv"
    fi
    row "culda $variant	$(cat "$WORK/culda/summary.txt" 2>/dev/null || tail -1 "$WORK/culda/culda.log")	heldout $heldout"
  done
  for algo in esca cgs; do
    rm -f "$WORK/peer-$algo.log"  # --log appends
    train "peer-$algo" /tmp/nyt.tcorp -k 1024 --iters "$iters" --algo $algo --device cuda \
      --eval-every 10 --heldout-every 10 --log "$WORK/peer-$algo.log" -o /tmp/peer.tmod
    row "topos K=1024 $algo	$(field "$WORK/peer-$algo.json" tokens_per_second) tok/s	heldout $(field "$WORK/peer-$algo.json" heldout_ll)"
    python3 -c "
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); print('  it %4d  %7.2f s  heldout %s' % (d['iteration'], d['seconds'], d.get('heldout_ll')))" "$WORK/peer-$algo.log" | tee -a "$table"
  done
fi

if [ "$mode" = profile ]; then
  # Nsight Compute on the sampler (one launch in iteration AT, default 5) and every kernel's time
  # in that iteration, at each K given (default 1024 10000), on the NYTimes-shaped corpus, with
  # dense word-topic counts (CORPUS: nyt, the default, or another shaped_corpus).
  corpus=${CORPUS:-nyt}
  shaped_corpus "$corpus"
  at=${AT:-5}
  # ALGOS: the samplers profiled (default cgs, whose kernel is fcgs's); files carry the name.
  for algo in ${ALGOS:-cgs}; do
  for k in ${*:-1024 10000}; do
    parts=$([ "$k" -le 2048 ] && echo 7 || echo 1)
    export TOPOS_GPU_WORD_TOPICS=dense
    ncu --clock-control none --kernel-name regex:^sample_ --launch-skip $((parts * (at - 1))) --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --section SchedulerStats \
      --metrics 'dram__bytes_read.sum,dram__bytes_write.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      topos train "/tmp/$corpus.tcorp" -k "$k" --iters $((at + 1)) --algo "$algo" --device cuda --eval-every 0 --skip-train-ll --skip-heldout -q -o /tmp/prof.tmod \
      > "$WORK/ncu-sample-$corpus-$algo-$k.txt" 2>&1 || tail -20 "$WORK/ncu-sample-$corpus-$algo-$k.txt"
    ncu --clock-control none --launch-skip $(((parts * 2 + 2) * (at - 1))) --launch-count $((parts * 2 + 2)) \
      --metrics gpu__time_duration.sum \
      topos train "/tmp/$corpus.tcorp" -k "$k" --iters $((at + 1)) --algo "$algo" --device cuda --eval-every 0 --skip-train-ll --skip-heldout -q -o /tmp/prof.tmod \
      > "$WORK/ncu-times-$corpus-$algo-$k.txt" 2>&1 || tail -20 "$WORK/ncu-times-$corpus-$algo-$k.txt"
    if [ -n "${SOURCE:-}" ]; then
      # Per-instruction counts and stall samples of the sampler (line information compiled in).
      TOPOS_GPU_LINEINFO=1 ncu --clock-control none --kernel-name regex:^sample_ --launch-skip $((parts * (at - 1))) --launch-count 1 \
        --section SourceCounters --section WarpStateStats -o "$WORK/src-$corpus-$algo-$k" -f \
        topos train "/tmp/$corpus.tcorp" -k "$k" --iters $((at + 1)) --algo "$algo" --device cuda --eval-every 0 --skip-train-ll --skip-heldout -q -o /tmp/prof.tmod \
        > "$WORK/ncu-src-$corpus-$algo-$k.log" 2>&1 || tail -5 "$WORK/ncu-src-$corpus-$algo-$k.log"
      ncu -i "$WORK/src-$corpus-$algo-$k.ncu-rep" --page source --csv --print-source sass > "$WORK/src-$corpus-$algo-$k-sass.csv" 2>&1 || true
      ncu -i "$WORK/src-$corpus-$algo-$k.ncu-rep" --page source --csv --print-source cuda,sass > "$WORK/src-$corpus-$algo-$k-cuda.csv" 2>&1 || true
      ls -la "$WORK"/src-$corpus-$algo-$k* | tee -a "$table"
    fi
    python3 - "$WORK/ncu-times-$corpus-$algo-$k.txt" "$k" <<'PY' | tee -a "$table"
import re, sys, collections
t = collections.Counter(); name = None
for line in open(sys.argv[1]):
    m = re.match(r"\s+(\w+)\(.*\)\s*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line) or re.match(r"\s+(\w+)\s*\(\d+, \d+, \d+\)x", line)
    if m: name = m.group(1)
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)", line)
    if m and name:
        v = float(m.group(2).replace(",", "")); unit = m.group(1)
        t[name] += v * {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "nsecond": 1e-6}.get(unit, 1.0)
print(f"K={sys.argv[2]} kernel ms per iteration: " + ", ".join(f"{k} {v:.2f}" for k, v in t.most_common()))
PY
    grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall|Warp Cycles Per Issued|Issued Warp|No Eligible|L1/TEX Hit|L2 Hit|Memory Throughput|dram__bytes|Compute \(SM\)|Block Limit|stalled" \
      "$WORK/ncu-sample-$corpus-$algo-$k.txt" | sed "s/^/$algo K=$k /" | head -70 | tee -a "$table"
    unset TOPOS_GPU_WORD_TOPICS
  done
  done
fi

# One short run for tuning: 40 iterations (ITERS), tokens/s over the second half, no evaluation
# (at large K the host side of each one takes longer than the GPU run). Extra environment (knobs)
# comes in front of the call, extra train arguments after: tune_run NAME K ALGO [ARG...].
tune_run() {
  local name=$1 k=$2 algo=$3 iters=${ITERS:-40}
  shift 3
  rm -f "$WORK/$name.log"  # --log appends
  train "$name" "/tmp/${tune_corpus:-nyt}.tcorp" -k "$k" --iters "$iters" --algo "$algo" --device cuda \
    --eval-every $((iters / 2)) --skip-heldout --skip-train-ll --log "$WORK/$name.log" -o /tmp/tune.tmod "$@"
  echo "mean $(field "$WORK/$name.json" tokens_per_second) tok/s	steady $(python3 -c "
import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; t=json.load(open(sys.argv[2]))['train_tokens']
print(f'{(l[-1][\"iteration\"]-l[0][\"iteration\"])*t/(l[-1][\"seconds\"]-l[0][\"seconds\"])/1e6:.0f}M')" "$WORK/$name.log" "$WORK/$name.json")	$(field "$WORK/$name.json" gpu_plan.format) $(field "$WORK/$name.json" gpu_plan.mode)"
}

if [ "$mode" = tune ]; then
  # Sampler compile settings against K (TOPOS_GPU_ROW_REGS / TOPOS_GPU_MIN_BLOCKS as
  # "regs:blocks" in TUNE, default "8:4 4:6 8:5"; "-" for the engine's own choice), and kernel
  # variants (DEFINES: sets of NAME=VALUE joined by commas, one set per run, default none), on
  # CORPUS (default nyt).
  tune_corpus=${CORPUS:-nyt}
  shaped_corpus "$tune_corpus"
  for k in ${*:-1024}; do
    for cfg in ${TUNE:-8:4 4:6 8:5}; do
      for defs in ${DEFINES:--}; do
        for algo in ${ALGOS:-esca cgs}; do
          name=tune-$k-${cfg/:/-}-${defs//[=,]/-}-$algo
          row "tune K=$k regs:blocks $cfg $defs $algo	$(
            export TOPOS_GPU_DEFINES="${defs#-}"
            [ "$cfg" = - ] || export TOPOS_GPU_ROW_REGS=${cfg%:*} TOPOS_GPU_MIN_BLOCKS=${cfg#*:}
            tune_run "$name" "$k" $algo)"
        done
      done
    done
  done
fi

if [ "$mode" = partitions ]; then
  # Tokens per resident partition (PARTS, default "16000000 4294967295"), FORMATS and ALGOS as
  # below, at each K given (default 10000).
  nyt
  for k in ${*:-10000}; do
    for parts in ${PARTS:-16000000 4294967295}; do
      for fmt in ${FORMATS:-dense hybrid}; do
        for algo in ${ALGOS:-esca}; do
          row "partitions K=$k $parts $fmt $algo	$(TOPOS_GPU_WORD_TOPICS=$fmt tune_run "parts-$k-$parts-$fmt-$algo" "$k" $algo --gpu-partition-tokens "$parts")	$(field "$WORK/parts-$k-$parts-$fmt-$algo.json" gpu_plan.chunks)"
        done
      done
    done
  done
fi

if [ "$mode" = formats ]; then
  # The word-topic counts dense against hybrid (TOPOS_GPU_WORD_TOPICS; FORMATS, default
  # "dense hybrid") at each K given (default 1024 10000), both samplers (ALGOS).
  nyt
  for k in ${*:-1024 10000}; do
    for fmt in ${FORMATS:-dense hybrid}; do
      for algo in ${ALGOS:-esca cgs}; do
        row "format K=$k $fmt $algo	$(TOPOS_GPU_WORD_TOPICS=$fmt tune_run "format-$k-$fmt-$algo" "$k" $algo)"
      done
    done
  done
fi

if [ "$mode" = knn ]; then
  echo "== GPU k-NN tests"
  .devbin/knn-gpu-tests --ignored --test-threads 1 --nocapture 2>&1 | tee "$WORK/knn-tests.log"
  grep -q "test result: ok" "$WORK/knn-tests.log"
  row "knn tests	$(grep 'test result' "$WORK/knn-tests.log")"
  # Matrices (raw CSR, made here): random 20,000 × 50,000 and NYTimes-sized 300,000 × 102,000
  # at 0.2% (fixed density per row), the latter with Zipf row degrees too, and 20news counts.
  D=/tmp/knn
  mkdir -p $D
  [ -f $D/random/meta.json ] || random_csr $D/random 20000 50000 0.002 1
  [ -f $D/nyt/meta.json ] || random_csr $D/nyt 300000 102000 0.002 1
  [ -f $D/zipf/meta.json ] || random_csr $D/zipf 300000 102000 0.002 1 zipf
  [ -f $D/20news/meta.json ] || corpus_csr .devdata/20news.tcorp $D/20news
  [ -f $D/small/meta.json ] || random_csr $D/small 3000 5000 0.01 2 zipf
  for m in cosine chebyshev jensen-shannon; do
    compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 knn_gpu $D/small 10 300 $m \
      > "$WORK/sanitizer-knn-$m.log" 2>&1 || { cat "$WORK/sanitizer-knn-$m.log"; exit 1; }
    row "memcheck	knn $m	$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$WORK/sanitizer-knn-$m.log")"
  done
  if [ -n "${KNN_PROFILE:-}" ]; then
    # Nsight Compute on one launch (8,192 queries, after the one-query warm-up) per metric.
    [ -f $D/nyt/meta.json ] || random_csr $D/nyt 300000 102000 0.002 1
    for m in $KNN_PROFILE; do
      ncu --launch-skip 1 --launch-count 1 -k knn_tiles --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section Occupancy --section SchedulerStats \
        knn_gpu $D/nyt 10 8192 $m > "$WORK/ncu-knn-$m.txt" 2>&1 || true
      grep -E "Duration|Throughput|Warp Cycles|Stall|Achieved Occupancy|Issued Warp|No Eligible|L1/TEX Hit|L2 Hit|Registers" "$WORK/ncu-knn-$m.txt" | head -40
    done
  fi
  if [ -n "${KNN_STREAM:-}" ]; then
    # The NYT-sized index streamed through a device-memory budget (bytes), cosine.
    [ -f $D/nyt/meta.json ] || random_csr $D/nyt 300000 102000 0.002 1
    for b in $KNN_STREAM; do
      KNN_GPU_MEMORY=$b knn_gpu $D/nyt 10 300000 cosine | tee -a "$WORK/knn-stream.jsonl"
      row "knn nyt streamed, budget $b B	$(tail -1 "$WORK/knn-stream.jsonl" | python3 -c 'import json,sys; print("{seconds} s\tprepare {prepare_s} s\tchecksum {index_checksum}".format(**json.loads(sys.stdin.read())))')"
    done
  fi
  # End to end: the CLI on both devices writes the same neighbours.
  for m in cosine jensen-shannon chebyshev; do
    topos knn .devdata/20news.tcorp -k 10 --metric $m --weighting tfidf --device cpu -q -o /tmp/nn-cpu.jsonl
    topos knn .devdata/20news.tcorp -k 10 --metric $m --weighting tfidf --device cuda -q -o /tmp/nn-cuda.jsonl
    cmp /tmp/nn-cpu.jsonl /tmp/nn-cuda.jsonl
    # The index streamed through 4 MiB of device memory, in row chunks.
    topos knn .devdata/20news.tcorp -k 10 --metric $m --weighting tfidf --device cuda --gpu-memory 4MiB -q -o /tmp/nn-cuda-small.jsonl
    cmp /tmp/nn-cpu.jsonl /tmp/nn-cuda-small.jsonl
    row "topos knn 20news $m	cpu, cuda and cuda --gpu-memory 4MiB outputs identical ($(wc -l < /tmp/nn-cuda.jsonl) lines)"
  done
  topos train .devdata/20news.tcorp -k 50 --iters 50 --device cuda --doc-topics -q -o /tmp/20news-sim.tmod
  for dev in cpu cuda; do
    topos similar /tmp/20news-sim.tmod --corpus .devdata/20news.tcorp --heldout -k 10 --device $dev -q -o /tmp/sim-$dev.jsonl
    topos similar /tmp/20news-sim.tmod --corpus .devdata/20news.tcorp --text "space shuttle launch orbit" -k 10 --device $dev -q > /tmp/simtext-$dev.jsonl
  done
  cmp /tmp/sim-cpu.jsonl /tmp/sim-cuda.jsonl && cmp /tmp/simtext-cpu.jsonl /tmp/simtext-cuda.jsonl
  row "topos similar 20news --heldout, --text	cpu and cuda outputs identical ($(wc -l < /tmp/sim-cuda.jsonl) + 1 lines)"
  metrics=${*:-all}
  for data in ${DATA-random 20news nyt zipf}; do
    knn_gpu $D/$data 10 1000000000 $metrics | tee -a "$WORK/knn-$data.jsonl"
    while read -r line; do
      row "knn $data	$(python3 -c 'import json,sys; print("{engine}\t{metric}\t{queries} q\t{seconds} s\tprepare {prepare_s} s\tchecksum {index_checksum}".format(**json.loads(sys.argv[1])))' "$line")"
    done < <(grep '^{' "$WORK/knn-$data.jsonl")
    if [ -z "${NO_CUPY:-}" ]; then
      python3 bench/knn_cupy.py $D/$data --k 10 --queries 1000000000 --metrics cosine euclidean \
        --batch ${CUPY_BATCH:-2048} | tee "$WORK/cupy-$data.jsonl" || echo "CuPy failed"
      while read -r line; do
        row "knn $data	$(python3 -c 'import json,sys; print("cupy\t{metric}\t{queries} q\t{seconds} s\tbatch {batch}\tchecksum {index_checksum}".format(**json.loads(sys.argv[1])))' "$line")"
      done < <(grep '^{' "$WORK/cupy-$data.jsonl" 2>/dev/null)
    fi
  done
fi

echo
echo "== table"
cat "$table"
