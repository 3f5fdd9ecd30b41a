#!/usr/bin/env python3
"""Interleaved A/B timing of two or more builds of the CPU k-NN engine (the per-change figures
of BENCHMARKS.md, "Each pair of a self-join once"): runs each `knn_bench` binary in turn, ROUNDS
times, on the same matrix, and prints per binary the fastest and the median time and the set of
neighbour checksums (one value: every round and, compared across binaries, the same neighbours).
Alternating the builds spreads a shared machine's slow minutes over both.

usage: bench/knn_ab.py DIR METRIC QUERIES ROUNDS BIN...   (THREADS=1 by default)
  e.g. cp target/release/examples/knn_bench /tmp/knn_old   # before the change
       ... change, cargo build --release -p topos-distance --example knn_bench ...
       THREADS=2 bench/knn_ab.py /tmp/knnbench/20news cosine 20000 5 /tmp/knn_old \\
           target/release/examples/knn_bench
"""
import json, os, statistics, subprocess, sys


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    d, metric, queries, rounds, bins = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    env = dict(os.environ, RAYON_NUM_THREADS=os.environ.get("THREADS", "1"))
    times = {b: [] for b in bins}
    checksums = {b: set() for b in bins}
    for _ in range(rounds):
        for b in bins:
            out = subprocess.run([b, d, "10", queries, metric], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                sys.exit(f"{b} failed: {out.stderr}")
            j = json.loads(out.stdout.strip().splitlines()[-1])
            times[b].append(j["seconds"])
            checksums[b].add(j["index_checksum"])
    for b in bins:
        print(f"{b}: min {min(times[b]):.4f} s, median {statistics.median(times[b]):.4f} s, "
              f"checksums {sorted(checksums[b])}")


if __name__ == "__main__":
    main()
