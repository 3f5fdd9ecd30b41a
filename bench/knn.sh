#!/usr/bin/env bash
# The k-NN benchmark of BENCHMARKS.md ("Sparse k-nearest neighbours"): Topos against
# scikit-learn's brute-force NearestNeighbors on a 20,000 x 50,000 random CSR matrix (0.2%
# density) and the 20 Newsgroups bag of words, then Topos alone for all 15 metrics.
#
# usage: bench/knn.sh [WORK_DIR]   (needs PYTHON with numpy, scipy, scikit-learn; default
#                                   /tmp/venv-sk/bin/python, a throwaway venv)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-/tmp/knnbench}
PYTHON=${PYTHON:-/tmp/venv-sk/bin/python}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK"
cargo build --release -p topos-cli -p topos-distance --examples --bins
EX=$CARGO_TARGET_DIR/release/examples
[ -f "$WORK/random/meta.json" ] || "$EX/random_csr" "$WORK/random" 20000 50000 0.002 1
[ -f "$WORK/20news.tcorp" ] || "$CARGO_TARGET_DIR/release/topos" prepare \
    "$ROOT/../shared/data/20news/train.txt.gz" -o "$WORK/20news.tcorp" --holdout 0.1 -q
[ -f "$WORK/20news/meta.json" ] || "$EX/corpus_csr" "$WORK/20news.tcorp" "$WORK/20news"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
# Alternating runs, medians: single runs on a shared machine vary by +-30%.
"$PYTHON" "$ROOT/bench/knn_peers.py" "$WORK/random" --queries 20000 --metrics cosine euclidean --repeat 5
"$PYTHON" "$ROOT/bench/knn_peers.py" "$WORK/20news" --queries 20000 --metrics cosine euclidean --repeat 9
"$PYTHON" "$ROOT/bench/knn_peers.py" "$WORK/random" --queries 2000 --metrics manhattan --repeat 3
"$PYTHON" "$ROOT/bench/knn_peers.py" "$WORK/20news" --queries 2000 --metrics manhattan --repeat 3
for d in random 20news; do
    "$EX/knn_bench" "$WORK/$d" 10 20000 all
done
# End to end through the command line (reading the corpus, TF-IDF, writing JSONL).
/usr/bin/time -f "topos knn 20news cosine tfidf: %e s wall, %M KB peak" \
    "$CARGO_TARGET_DIR/release/topos" knn "$WORK/20news.tcorp" -k 10 --metric cosine \
    --weighting tfidf -o "$WORK/20news-nn.jsonl" -q
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
