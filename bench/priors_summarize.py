#!/usr/bin/env python3
"""Markdown tables from priors.py's results.jsonl: usage summarize.py [RESULTS.jsonl]."""
import json, os, sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("WORK", "/tmp/priors-bench/work"), "results.jsonl")
rows = {}
for line in open(path):
    r = json.loads(line)
    rows[(r["corpus"], r["k"], r.get("seed", 1), r["system"])] = r

keys = sorted({(c, k, s) for c, k, s, _ in rows}, key=lambda x: (x[0], x[1], x[2]))
print("| corpus | K | seed | Topos sym | Topos learned | Topos gain | Mallet sym | Mallet learned | Mallet gain |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for c, k, s in keys:
    g = lambda sy: rows.get((c, k, s, sy))
    cells = []
    for sys_ in ("topos", "mallet"):
        a, b = g(f"{sys_}-sym"), g(f"{sys_}-opt")
        cells += [f"{a['heldout_ll']:.4f}" if a else "–", f"{b['heldout_ll']:.4f}" if b else "–",
                  f"**{b['heldout_ll'] - a['heldout_ll']:+.4f}**" if a and b else "–"]
    print(f"| {c} | {k} | {s} | " + " | ".join(cells) + " |")
print()
print("| corpus | K | seed | system | α sum | α min | α max | β | wall s | max RSS MiB | priors s of train s (share) |")
print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for c, k, s in keys:
    for sy in ("topos-sym", "topos-opt", "mallet-sym", "mallet-opt"):
        r = rows.get((c, k, s, sy))
        if not r:
            continue
        p = r.get("priors_s")
        ts = r.get("train_summary_seconds") or r["wall_s"]
        ps = f"{p:.2f} of {ts:.1f} ({100 * p / ts:.2f}%)" if p else ("0" if p == 0 else "–")
        print(f"| {c} | {k} | {s} | {sy} | {r['alpha_sum']:.3f} | {r['alpha_min']:.4f} | {r['alpha_max']:.4f} | "
              f"{r['beta']:.4f} | {r['wall_s']:.1f} | {r['max_rss_kib'] // 1024} | {ps} |")

# Gains over seeds: mean and range per (corpus, K, system).
print()
print("| corpus | K | seeds | Topos gain mean [min, max] | Mallet gain mean [min, max] | Topos learned − Mallet learned, mean |")
print("| --- | ---: | ---: | --- | --- | ---: |")
for c, k in sorted({(c, k) for c, k, _ in keys}):
    seeds = sorted(s for cc, kk, s in keys if (cc, kk) == (c, k))
    gains, diff = {"topos": [], "mallet": []}, []
    for s in seeds:
        for sy in gains:
            a, b = rows.get((c, k, s, f"{sy}-sym")), rows.get((c, k, s, f"{sy}-opt"))
            if a and b:
                gains[sy].append(b["heldout_ll"] - a["heldout_ll"])
        a, b = rows.get((c, k, s, "topos-opt")), rows.get((c, k, s, "mallet-opt"))
        if a and b:
            diff.append(a["heldout_ll"] - b["heldout_ll"])
    f = lambda g: f"{sum(g) / len(g):+.4f} [{min(g):+.4f}, {max(g):+.4f}] (n={len(g)})" if g else "–"
    d = f"{sum(diff) / len(diff):+.4f}" if diff else "–"
    print(f"| {c} | {k} | {','.join(map(str, seeds))} | {f(gains['topos'])} | {f(gains['mallet'])} | {d} |")

# Per (corpus, K), means over seeds: the symmetric baselines' gap, time ratios, learned priors, cost.
print()
print("| corpus | K | Topos sym − Mallet sym | Topos learned/sym wall | Mallet learned/sym wall | Mallet/Topos wall, sym | Mallet/Topos wall, learned | α sum learned, Topos / Mallet | β learned, Topos / Mallet | Topos priors share | max RSS MiB, Topos / Mallet |")
print("| --- | ---: | ---: | --- | --- | ---: | ---: | --- | --- | --- | --- |")
mean = lambda v: sum(v) / len(v)
for c, k in sorted({(c, k) for c, k, _ in keys}):
    seeds = [s for cc, kk, s in keys if (cc, kk) == (c, k) and all((c, k, s, sy) in rows for sy in
             ("topos-sym", "topos-opt", "mallet-sym", "mallet-opt"))]
    if not seeds:
        continue
    R = lambda s, sy: rows[(c, k, s, sy)]
    gap = [R(s, "topos-sym")["heldout_ll"] - R(s, "mallet-sym")["heldout_ll"] for s in seeds]
    ro = [R(s, "topos-opt")["wall_s"] / R(s, "topos-sym")["wall_s"] for s in seeds]
    rm = [R(s, "mallet-opt")["wall_s"] / R(s, "mallet-sym")["wall_s"] for s in seeds]
    ts = [R(s, "mallet-sym")["wall_s"] / R(s, "topos-sym")["wall_s"] for s in seeds]
    tl = [R(s, "mallet-opt")["wall_s"] / R(s, "topos-opt")["wall_s"] for s in seeds]
    at = [R(s, "topos-opt")["alpha_sum"] for s in seeds]
    am = [R(s, "mallet-opt")["alpha_sum"] for s in seeds]
    bt = [R(s, "topos-opt")["beta"] for s in seeds]
    bm = [R(s, "mallet-opt")["beta"] for s in seeds]
    sh = [R(s, "topos-opt")["priors_s"] / R(s, "topos-opt")["train_summary_seconds"] for s in seeds]
    mt = [R(s, sy)["max_rss_kib"] // 1024 for s in seeds for sy in ("topos-sym", "topos-opt")]
    mm = [R(s, sy)["max_rss_kib"] // 1024 for s in seeds for sy in ("mallet-sym", "mallet-opt")]
    rng = lambda v: f"{mean(v):.2f} [{min(v):.2f}, {max(v):.2f}]"
    print(f"| {c} | {k} | {mean(gap):+.4f} | {rng(ro)} | {rng(rm)} | {mean(ts):.2f} | {mean(tl):.2f} | "
          f"{mean(at):.2f} / {mean(am):.2f} | {mean(bt):.4f} / {mean(bm):.4f} | "
          f"{100 * min(sh):.2f}–{100 * max(sh):.2f}% | {min(mt)}–{max(mt)} / {min(mm)}–{max(mm)} |")
