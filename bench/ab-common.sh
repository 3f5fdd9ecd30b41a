# Shared by the multi-GPU A/B scripts (exchange-ab.sh, slices-ab.sh, crew-ab.sh): sourced, not run.
# The environment every GPU run of issue 21 needs (NVLink multicast off, as the device tool's
# KINDS.md says; Open MPI allowed to run as root), the synthetic corpora, and `ab_run`, which
# times one run and prints one line of it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name --format=csv,noheader

# ab_corpus NAME BIN: the path of the NYTimes- or PubMed-shaped corpus (made with BIN if absent).
ab_corpus() {
  local c
  case $1 in
    nyt) c=/tmp/nyt.tcorp
      [ -f $c ] || "$2" synth -o $c --docs 303000 --vocab 100000 --topics 100 --doc-len 332 --holdout 0.01 -q >&2 ;;
    pubmed) c=/tmp/pubmed.tcorp
      [ -f $c ] || "$2" synth -o $c --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q >&2 ;;
    *) echo "unknown corpus $1" >&2; exit 2 ;;
  esac
  echo $c
}

# ab_run LABEL COMMAND...: runs a `topos train ... --json -q -o /tmp/ab.tmod` under
# /usr/bin/time and prints LABEL, tokens/s, the loop, the exchange's seconds (not hidden behind
# the sweep), its slices and ways (all-reduce/sparse), the model's CRC32 (every row of a corpus
# and K must agree) and the whole process's wall seconds and peak host memory (under mpirun:
# mpirun's largest waited-for child). A failed run ends the script with its last lines.
ab_run() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o /tmp/ab.time "$@" > /tmp/ab.json 2> /tmp/ab.err || {
    echo "FAILED $label"; tail -3 /tmp/ab.err; exit 1; }
  python3 -c "
import json,sys; d=json.load(open('/tmp/ab.json')); x=d.get('exchange') or {}
ways='/'.join(str(x.get(w,0)) for w in ('nccl','nccl_sparse'))
wall, kb = open('/tmp/ab.time').read().split()
print(sys.argv[1], '%.0fM tok/s'%(d['tokens_per_second']/1e6), 'loop %.3f s'%d['seconds'],
      'exchange %.3f s'%(x.get('seconds') or 0), 'slices', x.get('slices'), 'all-reduce/sparse', ways,
      'crc', sys.argv[2], 'whole %s s %.0f MiB'%(wall, int(kb)/1024))" \
    "$label" "$(cksum < /tmp/ab.tmod | cut -d' ' -f1)"
}
