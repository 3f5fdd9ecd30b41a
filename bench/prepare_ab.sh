#!/usr/bin/env bash
# Interleaved A/B of `topos prepare` between two builds on one input: ROUNDS rounds of old then
# new (every other round new then old), wall seconds and peak memory by /usr/bin/time, and the
# tokens and words each wrote (they must agree). For changes to the tokenizer or the readers
# (BENCHMARKS.md, "Corpus preparation speed").
#
#   bash bench/prepare_ab.sh OLD_TOPOS NEW_TOPOS INPUT [ROUNDS [PREPARE OPTIONS...]]
#   e.g. bash bench/prepare_ab.sh /tmp/old/topos target/release/topos gut.txt 3
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OLD_TOPOS NEW_TOPOS INPUT [ROUNDS [PREPARE OPTIONS...]]" >&2; exit 2; }
old=$1 new=$2 input=$3 rounds=${4:-3}
shift $(( $# >= 4 ? 4 : 3 ))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# run NAME BINARY: one timed prepare; prints "NAME  seconds  peak KiB  tokens  words".
run() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$2" prepare "$input" -o "$work/$1.tcorp" -q --json \
    "${options[@]}" > "$work/$1.json"
  python3 - "$1" "$work/time" "$work/$1.json" <<'PY'
import json, sys
name, t, j = sys.argv[1:]
secs, kib = open(t).read().split()
r = json.load(open(j))
print(f"{name}\t{secs} s\t{kib} KiB\t{r.get('train_tokens', 0) + r.get('heldout_tokens', 0)} tokens\t{r.get('vocab_after_pruning')} words")
PY
}
options=("$@")
for i in $(seq 1 "$rounds"); do
  if [ $((i % 2)) = 1 ]; then run old "$old"; run new "$new"
  else run new "$new"; run old "$old"; fi
done
