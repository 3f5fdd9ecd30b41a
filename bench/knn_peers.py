#!/usr/bin/env python3
"""Side-by-side CPU benchmark of brute-force k-NN on sparse rows: Topos (topos-distance) against
scikit-learn's NearestNeighbors(algorithm="brute", n_jobs=-1), on the same CSR matrices.

Both sides read the same raw CSR directory (meta.json, offsets.u64, indices.u32, values.f32,
written by the topos-distance examples random_csr / corpus_csr), fit on all rows, and query
the first Q rows for their k nearest rows (each row's own row included, as sklearn's
kneighbors(X) does). Only the query is timed on the sklearn side; the Topos time includes
preparing the index (transpose, row aggregates). The sums of the neighbour indices are printed
for both sides as a check that they found the same neighbours.

usage: bench/knn_peers.py DIR --k 10 --queries 20000 --metrics cosine euclidean
                          [--topos-only METRIC...] [--repeat N]
With --repeat N both sides run N times, alternating; the medians and the median ratio (with
its range) are printed.
Requires numpy, scipy, scikit-learn in the running Python (a throwaway venv, not the repo).
"""
import argparse, json, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.environ.get("KNN_BENCH", os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "examples", "knn_bench"))
SKLEARN_NAME = {"cosine": "cosine", "euclidean": "euclidean", "manhattan": "manhattan"}


def load_raw(d):
    """The raw CSR directory as (rows, cols, offsets int64, indices int32, values float32)."""
    import numpy as np
    meta = json.load(open(os.path.join(d, "meta.json")))
    off = np.fromfile(os.path.join(d, "offsets.u64"), dtype="<u8").astype(np.int64)
    idx = np.fromfile(os.path.join(d, "indices.u32"), dtype="<u4").astype(np.int32)
    val = np.fromfile(os.path.join(d, "values.f32"), dtype="<f4")
    return meta["rows"], meta["cols"], off, idx, val


def load(d):
    import scipy.sparse as sp
    rows, cols, off, idx, val = load_raw(d)
    return sp.csr_matrix((val, idx, off), shape=(rows, cols))


def topos(d, k, q, metric):
    out = subprocess.run([BENCH, d, str(k), str(q), metric], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"knn_bench failed: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def sklearn(X, k, q, metric):
    from sklearn.neighbors import NearestNeighbors
    nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric=SKLEARN_NAME[metric], n_jobs=-1).fit(X)
    t = time.perf_counter()
    dist, ind = nn.kneighbors(X[:q])
    return time.perf_counter() - t, ind


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--metrics", nargs="*", default=["cosine", "euclidean"])
    ap.add_argument("--topos-only", nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=1,
                    help="run both sides this many times, alternating, and report medians: "
                         "on a shared machine single runs vary by +-30%%")
    a = ap.parse_args()
    X = load(a.dir)
    q = min(a.queries, X.shape[0])
    print(f"# {a.dir}: {X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros; k = {a.k}, {q} queries; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}", flush=True)
    for m in a.metrics:
        runs = []
        for _ in range(a.repeat):
            ours = topos(a.dir, a.k, q, m)
            theirs, ind = sklearn(X, a.k, q, m)
            runs.append((ours["seconds"], theirs))
        ratios = sorted(t / o for o, t in runs)
        med = lambda xs: sorted(xs)[len(xs) // 2]
        # Sum of all neighbour indices on both sides: equal sums mean (barring ties ordered
        # differently) the same neighbours.
        row = {"data": os.path.basename(a.dir.rstrip("/")), "metric": m, "queries": q,
               "topos_s": med([o for o, _ in runs]), "sklearn_s": round(med([t for _, t in runs]), 3),
               "speedup": round(med(ratios), 1),
               "sklearn_index_checksum": int(ind.sum()),
               "topos_index_checksum": ours["index_checksum"]}
        if a.repeat > 1:
            row["runs"] = a.repeat
            row["speedup_range"] = [round(ratios[0], 1), round(ratios[-1], 1)]
        print(json.dumps(row), flush=True)
    for m in a.topos_only:
        ours = topos(a.dir, a.k, q, m)
        print(json.dumps({"data": os.path.basename(a.dir.rstrip("/")), "metric": ours["metric"],
                          "queries": q, "topos_s": ours["seconds"]}), flush=True)


if __name__ == "__main__":
    main()
