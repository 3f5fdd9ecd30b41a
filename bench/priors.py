#!/usr/bin/env python3
"""Learned priors (issue 24, part 1): held-out log-likelihood of symmetric against learned priors,
Topos `--optimize-priors` side by side with Mallet's `--optimize-interval`, on the same tokens and
the same train/held-out split, every model scored by the same evaluator (`topos eval`).

For each corpus: `topos prepare --holdout 0.1` (seed 0), `topos export` (train.txt: the training
documents as space-separated tokens, one per line), and Mallet `import-file` of exactly those
lines (`--keep-sequence --token-regex '\\S+'`, no stop list; token counts are checked to agree).
For each K, four runs back to back, each timed as a whole process by /usr/bin/time -v:
  topos-sym    topos train -k K --algo $ALGO (cgs) --alpha 5/K --beta 0.01 --threads 1 --seed 1 --device cpu
  topos-opt    the same + --optimize-priors INTERVAL --optimize-burn-in BURN_IN
  mallet-sym   TopicTrainer --alpha 5 (Mallet's alpha is the sum) --beta 0.01 --optimize-interval 0
  mallet-opt   the same with --optimize-interval INTERVAL --optimize-burn-in BURN_IN
Mallet's --word-topic-counts-file becomes `word<TAB>topic<TAB>count` lines, imported with the
priors from the `#alpha :` / `#beta :` header of its --output-state (`topos import
--alpha-values ... --beta ...`), then every model, Topos's too, goes through
`topos eval MODEL --corpus C --json -q` (heldout_ll_per_token, default 50 fold-in sweeps, seed 1).

Environment (all optional):
  TOPOS      topos binary                      (default: topos on PATH)
  MALLET     Mallet tree with classes/ and lib/ (default /tmp/priors-bench/mallet)
  DATA       shared data folder                 (default ../shared/data beside the repository)
  WORK       output folder                      (default /tmp/priors-bench/work)
  CORPORA    comma list of 20news,arxiv,kos,reuters (default 20news,arxiv,kos)
  KS         comma list of K                    (default 20,100)
  ITERS      iterations                         (default 200)
  INTERVAL   prior-learning interval            (default 10)
  BURN_IN    iterations before the first update (default 50)
  ALPHA_SUM  starting α summed over topics      (default 5, Mallet's default; α_k = ALPHA_SUM/K)
  BETA       starting β                         (default 0.01)
  SEED       seed of both systems               (default 1)
  ALGO       Topos sampler, cgs or esca         (default cgs)
  SYSTEMS    comma list of topos-sym,topos-opt,mallet-sym,mallet-opt (default all four)
Results: one JSON object per run appended to $WORK/results.jsonl, and a table on stdout.
"""
import gzip, json, os, re, subprocess, sys, time

TOPOS = os.environ.get("TOPOS", "topos")
MALLET = os.environ.get("MALLET", "/tmp/priors-bench/mallet")
DATA = os.environ.get("DATA", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared", "data"))
WORK = os.environ.get("WORK", "/tmp/priors-bench/work")
CORPORA = os.environ.get("CORPORA", "20news,arxiv,kos").split(",")
KS = [int(k) for k in os.environ.get("KS", "20,100").split(",")]
ITERS = int(os.environ.get("ITERS", "200"))
INTERVAL = int(os.environ.get("INTERVAL", "10"))
BURN_IN = int(os.environ.get("BURN_IN", "50"))
ALPHA_SUM = float(os.environ.get("ALPHA_SUM", "5"))
BETA = float(os.environ.get("BETA", "0.01"))
SEED = os.environ.get("SEED", "1")
ALGO = os.environ.get("ALGO", "cgs")
SYSTEMS = os.environ.get("SYSTEMS", "topos-sym,topos-opt,mallet-sym,mallet-opt").split(",")
JAVA = ["java", "-Xmx8g", "-cp", f"{MALLET}/classes:{MALLET}/lib/*"]

INPUTS = {
    "20news": f"{DATA}/20news/train.txt.gz",
    "arxiv": f"{DATA}/arxiv-abstracts/abstracts.txt.gz",
    "kos": f"{DATA}/kos/docword.kos.txt.gz",
    "reuters": f"{DATA}/reuters21578/docs.txt.gz",
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, stdout=None):
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    if stdout:
        with open(stdout, "w") as f:
            f.write(r.stdout)
    return r


def timed(cmd, name, out_dir):
    """Runs cmd under /usr/bin/time -v; returns (stdout, elapsed seconds, max RSS in KiB)."""
    tfile = os.path.join(out_dir, f"{name}.time")
    r = run(["/usr/bin/time", "-v", "-o", tfile] + cmd)
    with open(os.path.join(out_dir, f"{name}.stderr"), "w") as f:
        f.write(r.stderr)
    t = open(tfile).read()
    m = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", t)
    secs = (int(m.group(1) or 0) * 3600) + int(m.group(2)) * 60 + float(m.group(3))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    return r.stdout, secs, rss


def evaluate(model, corpus):
    return json.loads(run([TOPOS, "eval", model, "--corpus", corpus, "--json", "-q"]).stdout)["heldout_ll_per_token"]


def prepare(name):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    corpus = os.path.join(d, f"{name}.tcorp")
    if not os.path.exists(corpus):
        r = run([TOPOS, "prepare", INPUTS[name], "-o", corpus, "--holdout", "0.1", "--json", "-q"])
        open(os.path.join(d, "prepare.json"), "w").write(r.stdout)
    text = os.path.join(d, "text")
    if not os.path.exists(os.path.join(text, "train.txt")):
        run([TOPOS, "export", corpus, "-o", text, "-q"])
    mal = os.path.join(d, f"{name}.mallet")
    if not os.path.exists(mal):
        # Mallet's default line regex is `name label data`: give every line a name and a dummy label.
        with open(os.path.join(text, "train.txt")) as f, open(os.path.join(d, "mallet-input.txt"), "w") as g:
            for i, line in enumerate(f):
                g.write(f"d{i} x {line.strip()}\n")
        run(JAVA + ["cc.mallet.classify.tui.Csv2Vectors", "--input", os.path.join(d, "mallet-input.txt"),
                    "--output", mal, "--keep-sequence", "--token-regex", r"\S+"])
    # Token counts: Topos's training tokens against the exported lines (what Mallet reads).
    prep = json.load(open(os.path.join(d, "prepare.json")))
    docs = toks = 0
    for line in open(os.path.join(text, "train.txt")):
        docs += 1
        toks += len(line.split())
    info = {"corpus": name, "prepare": prep, "exported_train_docs": docs, "exported_train_tokens": toks}
    json.dump(info, open(os.path.join(d, "tokens.json"), "w"), indent=1)
    log(f"{name}: exported {docs} docs, {toks} tokens; prepare said {prep}")
    return d, corpus, mal


def mallet_priors(state):
    with gzip.open(state, "rt") as f:
        f.readline()
        alpha = [float(x) for x in f.readline().replace("#alpha : ", "").split()]
        beta = float(f.readline().replace("#beta : ", ""))
    return alpha, beta


def wtc_to_tsv(wtc, tsv):
    with open(wtc) as f, open(tsv, "w") as g:
        for line in f:
            parts = line.split()
            word = parts[1]
            for tc in parts[2:]:
                t, c = tc.split(":")
                g.write(f"{word}\t{t}\t{c}\n")


def one(name, d, corpus, mal, k, system):
    out = os.path.join(d, f"k{k}" + ("" if SEED == "1" else f"-seed{SEED}"), system)
    os.makedirs(out, exist_ok=True)
    alpha0 = ALPHA_SUM / k
    opt = system.endswith("-opt")
    res = {"corpus": name, "k": k, "system": system, "seed": int(SEED), "algo": ALGO if system.startswith("topos") else "mallet", "iters": ITERS, "alpha0": alpha0, "beta0": BETA,
           "interval": INTERVAL if opt else 0, "burn_in": BURN_IN if opt else None}
    if system.startswith("topos"):
        model = os.path.join(out, "model.tmod")
        cmd = [TOPOS, "train", corpus, "-k", str(k), "--iters", str(ITERS), "--algo", ALGO, "--threads", "1",
               "--seed", SEED, "--device", "cpu", "--alpha", repr(alpha0), "--beta", repr(BETA), "-o", model,
               "--json", "-q"]
        if opt:
            cmd += ["--optimize-priors", str(INTERVAL), "--optimize-burn-in", str(BURN_IN)]
        stdout, secs, rss = timed(cmd, "train", out)
        s = json.loads(stdout)
        open(os.path.join(out, "train.json"), "w").write(stdout)
        a = s["alpha"] if isinstance(s["alpha"], list) else [s["alpha"]] * k
        res.update(alpha=a, beta=s["beta"], train_heldout_ll=s.get("heldout_ll"),
                   priors_s=(s.get("phases") or {}).get("priors"), train_summary_seconds=s.get("seconds"))
    else:
        wtc, state = os.path.join(out, "wtc.txt"), os.path.join(out, "state.gz")
        cmd = JAVA + ["cc.mallet.topics.tui.TopicTrainer", "--input", mal, "--num-topics", str(k),
                      "--num-iterations", str(ITERS), "--alpha", repr(ALPHA_SUM), "--beta", repr(BETA),
                      "--random-seed", SEED, "--num-threads", "1", "--word-topic-counts-file", wtc,
                      "--output-state", state]
        cmd += ["--optimize-interval", str(INTERVAL), "--optimize-burn-in", str(BURN_IN)] if opt else \
               ["--optimize-interval", "0"]
        stdout, secs, rss = timed(cmd, "train", out)
        alpha, beta = mallet_priors(state)
        # Mallet logs "total tokens: N": it must read exactly Topos's training tokens.
        m = re.search(r"total tokens: (\d+)", open(os.path.join(out, "train.stderr")).read())
        want = json.load(open(os.path.join(d, "prepare.json")))["train_tokens"]
        res["mallet_tokens"] = int(m.group(1)) if m else None
        if res["mallet_tokens"] != want:
            sys.exit(f"Mallet read {res['mallet_tokens']} tokens, Topos trains on {want}")
        tsv = os.path.join(out, "counts.tsv")
        wtc_to_tsv(wtc, tsv)
        model = os.path.join(out, "model.tmod")
        icmd = [TOPOS, "import", tsv, "--corpus", corpus, "-k", str(k), "--beta", repr(beta), "--name", "mallet",
                "-o", model, "-q"]
        icmd += ["--alpha-values", ",".join(repr(x) for x in alpha)] if opt else ["--alpha", repr(alpha0)]
        run(icmd)
        res.update(alpha=alpha, beta=beta)
    res.update(wall_s=round(secs, 2), max_rss_kib=rss, heldout_ll=evaluate(model, corpus))
    a = res["alpha"]
    res.update(alpha_sum=sum(a), alpha_min=min(a), alpha_max=max(a))
    with open(os.path.join(WORK, "results.jsonl"), "a") as f:
        f.write(json.dumps(res) + "\n")
    log(f"{name} K={k} {system}: heldout {res['heldout_ll']:.4f}, α sum {res['alpha_sum']:.3f} "
        f"[{res['alpha_min']:.4f}, {res['alpha_max']:.4f}], β {res['beta']:.5f}, {secs:.1f} s, {rss // 1024} MiB")
    return res


def main():
    os.makedirs(WORK, exist_ok=True)
    rows = []
    for name in CORPORA:
        d, corpus, mal = prepare(name)
        for k in KS:
            for system in SYSTEMS:
                rows.append(one(name, d, corpus, mal, k, system))
    print("corpus\tK\tsystem\theldout_ll\talpha_sum\talpha_min\talpha_max\tbeta\twall_s\tmax_rss_MiB\tpriors_s")
    for r in rows:
        print(f"{r['corpus']}\t{r['k']}\t{r['system']}\t{r['heldout_ll']:.4f}\t{r['alpha_sum']:.3f}\t"
              f"{r['alpha_min']:.4f}\t{r['alpha_max']:.4f}\t{r['beta']:.5f}\t{r['wall_s']:.1f}\t"
              f"{r['max_rss_kib'] // 1024}\t{r.get('priors_s') or ''}")


if __name__ == "__main__":
    main()
