#!/usr/bin/env bash
# Utility of differentially private training (BENCHMARKS.md, "Utility of differentially private
# training"): trains one model per setting on one thread and scores it with `topos eval`.
# Prints one TSV row per run:
#   label  L  T  R  epsilon  delta  accountant  noise_scale  heldout_ll  umass_mean  train_s
# usage: bench/dp_utility.sh CORPUS.tcorp OUTDIR "SETTING..."
#   a SETTING is nonprivate:T or L:T:R:EPSILON[:DELTA] (R "d" = the default releases,
#   DELTA default: train's default). DP_EXTRA adds flags to every private run, e.g.
#   DP_EXTRA=--no-word-release for the V x K releases of before issue 25.
set -euo pipefail
TOPOS=${TOPOS:-$(dirname "$0")/../target/release/topos}
corpus=$1; outdir=$2; settings=$3
mkdir -p "$outdir"
for s in $settings; do
  IFS=: read -r a b c d e <<<"$s"
  if [ "$a" = nonprivate ]; then
    m="$outdir/nonprivate-T$b.tmod"
    "$TOPOS" train "$corpus" -k 20 --iters "$b" --threads 1 -o "$m" --json -q > "$m.train.json"
  else
    m="$outdir/L$a-T$b-R$c-e$d${e:+-d$e}.tmod"
    extra=()
    [ "$c" != d ] && extra+=(--releases "$c")
    [ -n "${e:-}" ] && extra+=(--delta "$e")
    [ -n "${DP_EXTRA:-}" ] && extra+=($DP_EXTRA)
    "$TOPOS" train "$corpus" -k 20 --iters "$b" --threads 1 -o "$m" --json -q \
      --private --epsilon "$d" --max-doc-tokens "$a" "${extra[@]}" > "$m.train.json"
  fi
  "$TOPOS" eval "$m" --corpus "$corpus" --json -q > "$m.eval.json"
  python3 - "$s" "$m" <<'PY'
import json, sys
label, m = sys.argv[1:]
t = json.load(open(m + ".train.json")); e = json.load(open(m + ".eval.json"))
g = t.get("privacy")
if g:
    acc = "renyi@%.3g" % g["accountant"]["renyi_order"] if g["accountant"].get("renyi_order") else "basic"
    row = [label, g["max_doc_tokens"], t["iterations"], g["accountant"]["releases"], g["epsilon"],
           g["delta"] if g["delta"] is not None else 0, acc, "%.4g" % t["noise_scale"]]
else:
    row = [label, "-", t["iterations"], "-", "-", "-", "-", 0]
row += ["%.4f" % e["heldout_ll_per_token"], "%.1f" % e["coherence_mean"], "%.1f" % t["seconds"]]
print("\t".join(map(str, row)), flush=True)
PY
done
