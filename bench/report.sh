#!/usr/bin/env bash
# Issue 23's figures: `topos report` (HTML and LDAvis JSON) time, peak memory and size at several
# K, the page's own load and λ-redraw times in headless Chromium (its #selftest), and the time of
# `eval` without and with `--coherence npmi,c_v,umass`. One TSV row per K:
#   K  report_s  report_MiB  html_MB  ldavis_s  ldavis_MB  page_load_ms  slider_ms  eval_s  eval_coherence_s
# usage: bench/report.sh CORPUS.tcorp ITERS "K1 K2 ..."   (a corpus with a held-out split)
set -euo pipefail
TOPOS=${TOPOS:-$(dirname "$0")/../target/release/topos}
corpus=$1; iters=$2; ks=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp "$corpus" "$out/c.tcorp"
for k in $ks; do
  m="$out/c.tmod"
  "$TOPOS" train "$out/c.tcorp" -k "$k" --iters "$iters" --doc-topics --eval-every 0 -o "$m" -q > /dev/null
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$out/rss" "$TOPOS" report "$m" -o "$out/r.html" -q
  t1=$(date +%s.%N)
  "$TOPOS" report "$m" --ldavis-json -o "$out/v.json" -q
  t2=$(date +%s.%N)
  "$TOPOS" eval "$m" -q > /dev/null
  t3=$(date +%s.%N)
  "$TOPOS" eval "$m" --coherence npmi,c_v,umass --top 10 -q > /dev/null
  t4=$(date +%s.%N)
  page="-"; slider="-"
  if command -v chromium > /dev/null; then
    dom=$(chromium --headless --no-sandbox --disable-gpu --no-first-run \
      --host-resolver-rules='MAP * ~NOTFOUND' --proxy-server=127.0.0.1:9 \
      --user-data-dir="$out/profile" --dump-dom "file://$out/r.html#selftest" 2>/dev/null)
    read -r page slider < <(python3 -c '
import json, sys, html, re
m = re.search(r"<pre id=\"selftest\">(.*?)</pre>", sys.stdin.read(), re.S)
r = json.loads(html.unescape(m.group(1)))
assert r["circles"] == r["k"] and r["requests"] == 0 and not r["errors"], r
print("%.0f %.1f" % (r["loadMs"], r["sliderMs"]))' <<< "$dom")
  fi
  python3 - "$k" "$t0" "$t1" "$t2" "$t3" "$t4" "$out" "$page" "$slider" <<'PY'
import os, sys
k, t0, t1, t2, t3, t4, out, page, slider = sys.argv[1:]
t0, t1, t2, t3, t4 = map(float, (t0, t1, t2, t3, t4))
rss = int(open(os.path.join(out, "rss")).read().split()[-1]) / 1024
html = os.path.getsize(os.path.join(out, "r.html")) / 1e6
vis = os.path.getsize(os.path.join(out, "v.json")) / 1e6
print(f"{k}\t{t1-t0:.2f}\t{rss:.0f}\t{html:.2f}\t{t2-t1:.2f}\t{vis:.2f}\t{page}\t{slider}\t{t3-t2:.2f}\t{t4-t3:.2f}")
PY
done
