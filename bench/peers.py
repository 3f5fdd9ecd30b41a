#!/usr/bin/env python3
"""Side-by-side CPU benchmark: Topos against WarpLDA, Mallet and tomotopy on the same corpus, the
same train/held-out split, the same K, alpha, beta and thread count.

Every system's model is scored by the same evaluator: its word-topic counts at each checkpoint are
imported into a Topos model (`topos import`) and `topos eval` computes the held-out log-likelihood
per token by document completion. The figure that counts is the wall time to reach a fixed
held-out log-likelihood (by default what Mallet reaches at its last checkpoint).

The peers are built outside the repository (see BENCHMARKS.md) and driven by runner scripts in
$PEERS (default /tmp/peers): run_warplda.py, run_mallet.py, run_tomotopy.py, each taking
  <data_dir> <out_dir> --k K --alpha A --beta B --iters N --checkpoint-every C --threads T --seed S
and writing checkpoints.tsv (iteration, seconds) and counts-<iteration>.tsv (word, topic, count).

usage: bench/peers.py CORPUS.tcorp --k 100 --iters 200 --every 20 --threads 1 [--systems ...]
       [--target LL | --target-from SYSTEM:ITER]
"""
import argparse, json, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOS = os.environ.get("TOPOS", os.path.join(ROOT, "target", "release", "topos"))
PEERS = os.environ.get("PEERS", "/tmp/peers")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


def heldout(corpus, model):
    out = run([TOPOS, "eval", model, "--corpus", corpus, "--json", "-q"])
    return json.loads(out)["heldout_ll_per_token"]


def topos_curve(a, algo, work):
    log = os.path.join(work, f"topos-{algo}.jsonl")
    if os.path.exists(log):
        os.remove(log)
    run([TOPOS, "train", a.corpus, "-k", str(a.k), "--alpha", str(a.alpha), "--beta", str(a.beta),
         "--iters", str(a.iters), "--algo", algo, "--threads", str(a.threads), "--seed", "1",
         "--eval-every", str(a.every), "--heldout-every", str(a.every), "--log", log,
         "-o", os.path.join(work, f"topos-{algo}.tmod"), "-q"])
    pts = []
    for line in open(log):
        d = json.loads(line)
        if d.get("heldout_ll") is not None:
            pts.append((d["iteration"], d["seconds"], d["heldout_ll"]))
    return pts


def peer_curve(a, peer, work, data):
    out = os.path.join(work, peer)
    os.makedirs(out, exist_ok=True)
    runner = os.path.join(PEERS, f"run_{peer}.py")
    py = os.path.join(PEERS, "venv", "bin", "python") if peer == "tomotopy" else sys.executable
    run([py, runner, data, out, "--k", str(a.k), "--alpha", str(a.alpha), "--beta", str(a.beta),
         "--iters", str(a.iters), "--checkpoint-every", str(a.every), "--threads", str(a.threads), "--seed", "1"])
    pts = []
    rows = [l.split("\t") for l in open(os.path.join(out, "checkpoints.tsv")).read().split("\n")[1:] if l.strip()]
    for it, secs in rows:
        model = os.path.join(out, f"model-{it}.tmod")
        run([TOPOS, "import", os.path.join(out, f"counts-{it}.tsv"), "--corpus", a.corpus, "-k", str(a.k),
             "--alpha", str(a.alpha), "--beta", str(a.beta), "--name", peer, "-o", model, "-q"])
        pts.append((int(it), float(secs), heldout(a.corpus, model)))
    return pts


def main():
    p = argparse.ArgumentParser()
    p.add_argument("corpus")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--alpha", type=float)
    p.add_argument("--beta", type=float, default=0.01)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--every", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--systems", default="topos-esca,topos-cgs,warplda,mallet,tomotopy")
    p.add_argument("--target", type=float, help="held-out LL to reach (default: Mallet's last)")
    p.add_argument("--target-from", metavar="SYSTEM:ITER",
                   help="the target is what SYSTEM reaches at iteration ITER (e.g. warplda:100)")
    p.add_argument("--work", default="/tmp/topos-bench")
    p.add_argument("--out", help="append results (TSV) here")
    a = p.parse_args()
    a.alpha = a.alpha if a.alpha is not None else 50.0 / a.k
    work = os.path.join(a.work, f"{os.path.basename(a.corpus)}-k{a.k}-t{a.threads}")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "text")
    run([TOPOS, "export", a.corpus, "-o", data, "-q"])
    curves = {}
    for s in a.systems.split(","):
        t0 = time.time()
        curves[s] = topos_curve(a, s.split("-")[1], work) if s.startswith("topos-") else peer_curve(a, s, work, data)
        print(f"# {s}: {len(curves[s])} checkpoints, {time.time() - t0:.0f} s wall", file=sys.stderr)
    target = a.target if a.target is not None else (curves["mallet"][-1][2] if "mallet" in curves else None)
    if a.target_from:
        system, at = a.target_from.split(":")
        target = next(ll for it, secs, ll in curves[system] if it == int(at))
    lines = []
    for s, pts in curves.items():
        for it, secs, ll in pts:
            lines.append(f"curve\t{os.path.basename(a.corpus)}\t{a.k}\t{a.threads}\t{s}\t{it}\t{secs:.3f}\t{ll:.5f}")
    print("# system\titers\tseconds\tfinal_heldout_ll\tseconds_to_target\ttarget")
    for s, pts in curves.items():
        reach = next((secs for it, secs, ll in pts if target is not None and ll >= target), None)
        it, secs, ll = pts[-1]
        row = f"summary\t{os.path.basename(a.corpus)}\t{a.k}\t{a.threads}\t{s}\t{it}\t{secs:.2f}\t{ll:.4f}\t" \
              f"{'' if reach is None else f'{reach:.2f}'}\t{'' if target is None else f'{target:.4f}'}"
        lines.append(row)
        print(row)
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
