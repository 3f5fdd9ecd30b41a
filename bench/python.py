#!/usr/bin/env python3
"""The Python package's benchmark (BENCHMARKS.md, "The Python package"): `fit` on 20 Newsgroups
against scikit-learn's LatentDirichletAllocation and tomotopy through their Python APIs, on one
thread and on all threads, and the Python layer's overhead against the CLI on the same run.

Every system's topics are scored by the same evaluator: its topic-word matrix (scikit-learn's
`components_`, tomotopy's topic-word counts plus eta, Topos's counts plus beta, each row
normalized) goes to `topos.heldout_log_likelihood(topic_word, corpus, alpha)`, which is `topos
eval`'s document completion on the corpus's held-out documents in their order, with the system's
own document-topic prior alpha. All three train on the same training documents (the corpus's,
as scipy counts for scikit-learn and as word lists for tomotopy) with the same K.

The figure is the training time to reach the held-out value scikit-learn reaches at its defaults
(batch variational Bayes, 10 iterations, priors 1/K; n_components set to K). Topos's times are
its run's training seconds at each evaluation (`TrainLog.seconds`: evaluations excluded);
tomotopy's the time of its `train` calls between evaluations; scikit-learn's the time of `fit`.

Setup (outside the repository; the wheel from `maturin build --release -m python/Cargo.toml`):
  python3 -m venv /tmp/pybench && /tmp/pybench/bin/pip install numpy scipy scikit-learn tomotopy
  /tmp/pybench/bin/pip install target/wheels/topos-*.whl
  cargo build --release -p topos-cli
usage: /tmp/pybench/bin/python bench/python.py [--k 20] [--iters 200] [--every 5] [--work /tmp/pybench/work]
       /tmp/pybench/bin/python bench/python.py --sklearn-priors --target T --skip sklearn,overhead
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import topos

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOS = os.environ.get("TOPOS", os.path.join(ROOT, "target", "release", "topos"))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "20news", "train.txt.gz")


def score(corpus, topic_word, alpha):
    return topos.heldout_log_likelihood(topic_word, corpus, alpha)["heldout_ll"]


def first_reaching(points, target):
    """(iteration, seconds) of the first point at or above target, or None."""
    for it, secs, ll in points:
        if ll >= target:
            return it, secs
    return None


def sklearn_defaults(corpus, X, k, jobs):
    from sklearn.decomposition import LatentDirichletAllocation

    lda = LatentDirichletAllocation(n_components=k, random_state=0, n_jobs=jobs)
    start = time.perf_counter()
    lda.fit(X)
    secs = time.perf_counter() - start
    return secs, score(corpus, lda.components_, lda.doc_topic_prior_)


def topos_curve(corpus, k, iters, every, threads, algo, alpha=None, beta=0.01):
    pts = []

    def cb(log):
        if log.heldout_ll is not None:
            pts.append((log.iteration, log.seconds, log.heldout_ll))

    topos.train(corpus, k=k, iters=iters, algo=algo, seed=1, threads=threads, device="cpu",
                alpha=alpha, beta=beta, eval_every=every, heldout_every=every, callback=cb)
    return pts


def tomotopy_curve(corpus, X, k, iters, every, threads, alpha=None, eta=0.01):
    import tomotopy as tp

    alpha = 50.0 / k if alpha is None else alpha
    vocab = corpus.vocabulary
    mdl = tp.LDAModel(tw=tp.TermWeight.ONE, k=k, alpha=alpha, eta=eta, seed=1)
    mdl.optim_interval = 0  # keep the symmetric prior the evaluator is given
    for r in range(X.shape[0]):
        row = X.getrow(r)
        words = [vocab[j] for j, c in zip(row.indices, row.data) for _ in range(int(c))]
        mdl.add_doc(words)
    col = {w: i for i, w in enumerate(vocab)}
    pts, secs = [], 0.0
    for it in range(every, iters + 1, every):
        start = time.perf_counter()
        mdl.train(every, workers=threads)
        secs += time.perf_counter() - start
        tw = np.full((k, len(vocab)), eta)  # words tomotopy never saw: the prior alone
        idx = np.array([col[w] for w in mdl.vocabs])
        for t in range(k):
            raw = np.asarray(mdl.get_topic_word_dist(t, normalize=False), dtype=np.float64)
            tw[t, idx] = raw + (eta if raw.min() == 0 else 0.0)
        pts.append((it, secs, score(corpus, tw, alpha)))
    return pts


def overhead(corpus_path, k, iters, threads, reps, work):
    """Wall and CPU seconds of `topos train` (the whole process) and of `topos.train` (open the
    corpus, run, read the model back) on the same run, alternated, `reps` times each. CPU time
    (user + system, all threads) is the steadier figure on a shared machine: other people's
    work stretches wall time but not the CPU time a run spends."""
    import resource

    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    cli, py = [], []
    for r in range(reps):
        out = os.path.join(work, "overhead-cli.tmod")
        c0, start = cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([TOPOS, "train", corpus_path, "-k", str(k), "--iters", str(iters), "--threads", str(threads),
                        "--seed", "1", "--device", "cpu", "-o", out, "-q"], check=True, stdout=subprocess.DEVNULL)
        cli.append((time.perf_counter() - start, cpu(resource.RUSAGE_CHILDREN) - c0))
        c0, start = cpu(resource.RUSAGE_SELF), time.perf_counter()
        topos.train(topos.Corpus.open(corpus_path), k=k, iters=iters, threads=threads, seed=1, device="cpu",
                    output=os.path.join(work, "overhead-py.tmod"))
        py.append((time.perf_counter() - start, cpu(resource.RUSAGE_SELF) - c0))
    same = open(os.path.join(work, "overhead-cli.tmod"), "rb").read() == open(os.path.join(work, "overhead-py.tmod"), "rb").read()
    return cli, py, same


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--threads", default="1,0", help="thread counts (0: all)")
    p.add_argument("--overhead-iters", type=int, default=50)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--work", default="/tmp/pybench/work")
    p.add_argument("--skip", default="", help="comma list of parts to skip: sklearn,topos,tomotopy,overhead")
    p.add_argument("--target", type=float, help="held-out value to reach (default: scikit-learn's, 1 thread)")
    p.add_argument("--sklearn-priors", action="store_true",
                   help="train Topos and tomotopy with scikit-learn's default priors, alpha = beta = 1/K "
                        "(default: Topos's, alpha = 50/K, beta = 0.01)")
    a = p.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    os.makedirs(a.work, exist_ok=True)
    corpus_path = os.path.join(a.work, "20news.tcorp")
    if not os.path.exists(corpus_path):
        subprocess.run([TOPOS, "prepare", DATA, "-o", corpus_path, "--holdout", "0.1", "-q"], check=True)
    corpus = topos.Corpus.open(corpus_path)
    X = corpus.to_csr()
    print(f"# {corpus!r}; K = {a.k}", flush=True)
    results = {"k": a.k, "corpus": repr(corpus)}
    ncpu = os.cpu_count()
    threads = [int(t) for t in a.threads.split(",")]
    target = a.target
    alpha, beta = (1.0 / a.k, 1.0 / a.k) if a.sklearn_priors else (None, 0.01)
    results["priors"] = "scikit-learn's (1/K)" if a.sklearn_priors else "Topos's (50/K, 0.01)"
    if "sklearn" not in skip:
        for t in threads:
            secs, ll = sklearn_defaults(corpus, X, a.k, 1 if t == 1 else -1)
            results[f"sklearn_threads_{t or ncpu}"] = {"seconds": secs, "heldout_ll": ll}
            print(f"scikit-learn defaults, {t or ncpu} thread(s): fit {secs:.1f} s, held-out {ll:.4f}", flush=True)
            if target is None:
                target = ll
    results["target"] = target
    for name, fn in [("topos-cgs", lambda t: topos_curve(corpus, a.k, a.iters, a.every, t, "cgs", alpha, beta)),
                     ("topos-esca", lambda t: topos_curve(corpus, a.k, a.iters, a.every, t, "esca", alpha, beta)),
                     ("tomotopy", lambda t: tomotopy_curve(corpus, X, a.k, a.iters, a.every, t, alpha, beta))]:
        if name.split("-")[0] in skip:
            continue
        for t in threads:
            pts = fn(t)
            hit = first_reaching(pts, target) if target is not None else None
            results[f"{name}_threads_{t or ncpu}"] = {"curve": pts, "reaches_target": hit}
            last = pts[-1]
            reach = f"reaches {target:.4f} at iteration {hit[0]} after {hit[1]:.2f} s" if hit else "never reaches the target"
            print(f"{name}, {t or ncpu} thread(s): {reach}; at {last[0]} iterations {last[2]:.4f} after {last[1]:.2f} s", flush=True)
    if "overhead" not in skip:
        for t in threads:
            cli, py, same = overhead(corpus_path, a.k, a.overhead_iters, t, a.reps, a.work)
            results[f"overhead_threads_{t or ncpu}"] = {"cli_wall_cpu": cli, "python_wall_cpu": py, "same_bytes": same}
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            print(f"overhead, {t or ncpu} thread(s), {a.overhead_iters} iterations, medians of {a.reps}: "
                  f"wall CLI {med(cli, 0):.2f} s, Python {med(py, 0):.2f} s ({100 * (med(py, 0) - med(cli, 0)) / med(cli, 0):+.1f}%); "
                  f"CPU CLI {med(cli, 1):.2f} s, Python {med(py, 1):.2f} s ({100 * (med(py, 1) - med(cli, 1)) / med(cli, 1):+.1f}%); "
                  f"same model bytes: {same}", flush=True)
    with open(os.path.join(a.work, "results-sklearn-priors.json" if a.sklearn_priors else "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
