#!/usr/bin/env bash
# Many draws of private training runs at once, one thread each, and their mean and spread
# (issue 25: a private run's noise is keyed by the OS, so one draw says little).
#
#   bash bench/private_draws.sh CORPUS OUT [JOBS] < runs
#
# Each line of `runs` is "TAG EPSILON [NAME=VALUE ...]": one training run of K = 20, T = 50
# (override with K= and T= in the environment) under that environment, e.g. the scratch
# build's switches of bench/tried/private-final-release-experiments.patch. Lines whose tags
# differ only in a trailing _N are draws of one setting. Writes OUT/log (one line a run:
# tag, held-out log-likelihood per token by `topos eval`) and OUT/summary (n, mean, sd, se, min,
# max a setting). `topos` is taken from PATH.
set -euo pipefail
corpus=$(realpath "$1"); out=$(realpath -m "$2"); jobs=${3:-$(nproc)}
mkdir -p "$out/runs"
export corpus out K=${K:-20} T=${T:-50}
one() {
  local tag=$1 eps=$2; shift 2
  local m="$out/runs/$tag"
  if env "$@" topos train "$corpus" -k "$K" --iters "$T" --threads 1 -o "$m.tmod" --json -q \
      --private --epsilon "$eps" > "$m.json" 2> "$m.err"; then
    topos eval "$m.tmod" --corpus "$corpus" --json -q |
      python3 -c 'import json,sys; print(sys.argv[1], round(json.load(sys.stdin)["heldout_ll_per_token"], 4))' "$tag"
  else
    echo "$tag FAILED $(tail -1 "$m.err")"
  fi
}
export -f one
grep -v '^\s*\(#\|$\)' | xargs -P "$jobs" -L 1 bash -c 'one "$@"' _ > "$out/log"
python3 - "$out/log" <<'PY' | tee "$out/summary"
import collections, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tag, value = line.split()[:2]
    if value != "FAILED":
        runs[tag.rsplit("_", 1)[0] if tag.rsplit("_", 1)[-1].isdigit() else tag].append(float(value))
for setting, v in sorted(runs.items()):
    sd = st.stdev(v) if len(v) > 1 else 0.0
    print(f"{setting}: n={len(v)} mean={st.mean(v):.4f} sd={sd:.4f} se={sd / len(v) ** 0.5:.4f} min={min(v):.4f} max={max(v):.4f}")
PY
grep FAILED "$out/log" && exit 1 || true
