#!/usr/bin/env python3
"""GPU side-by-side for `topos knn --device cuda`: brute-force k-NN with CuPy's cuSPARSE sparse
products, what a user would reach for on a GPU (issue 5). For each batch of query rows:
S = Q·Xᵀ (SpGEMM), dense distances from S and the row norms (cosine 1 − S/(‖q‖‖x‖), Euclidean
√(‖q‖² + ‖x‖² − 2S)), argpartition for the k smallest, then a sort of those k. Timed from the
matrix on the GPU to the neighbours on the host; the sum of neighbour indices is printed as a
check against Topos's (ties may be ordered differently: CuPy does not break them by index).

usage: bench/knn_cupy.py DIR --k 10 --queries Q --metrics cosine euclidean [--batch 2048]
Reads the raw CSR directory written by topos-distance's random_csr / corpus_csr examples.
"""
import argparse, json, os, time

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np

from knn_peers import load_raw  # the same reader as the CPU side (bench/knn_peers.py)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--metrics", nargs="*", default=["cosine", "euclidean"])
    ap.add_argument("--batch", type=int, default=2048)
    a = ap.parse_args()
    rows, cols, off, idx, val = load_raw(a.dir)
    X = csp.csr_matrix((cp.asarray(val), cp.asarray(idx), cp.asarray(off.astype(np.int32))), shape=(rows, cols))
    XT = X.T.tocsr()
    sq = cp.asarray(X.multiply(X).sum(axis=1)).ravel()
    q = min(a.queries, rows)
    # Warm-up (untimed): cuSPARSE handles and CuPy's kernel compilation.
    (X[0:16] @ XT).toarray()
    cp.argpartition(cp.zeros((16, 64)), 10, axis=1)
    for metric in a.metrics:
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        checksum = 0
        for s in range(0, q, a.batch):
            e = min(s + a.batch, q)
            S = (X[s:e] @ XT).toarray()
            if metric == "cosine":
                n = cp.sqrt(sq)
                D = 1.0 - S / (n[s:e, None] * n[None, :])
            else:
                D = cp.sqrt(cp.maximum(sq[s:e, None] + sq[None, :] - 2.0 * S, 0.0))
            part = cp.argpartition(D, a.k, axis=1)[:, : a.k]
            pd = cp.take_along_axis(D, part, axis=1)
            order = cp.argsort(pd, axis=1)
            nn = cp.take_along_axis(part, order, axis=1)
            checksum += int(nn.sum().get())
        cp.cuda.Device().synchronize()
        secs = time.perf_counter() - t
        print(json.dumps({"engine": "cupy", "metric": metric, "rows": rows, "cols": cols, "nnz": int(len(val)),
                          "queries": q, "k": a.k, "batch": a.batch, "seconds": round(secs, 4),
                          "index_checksum": checksum}), flush=True)


if __name__ == "__main__":
    main()
