export PATH=$PWD/.devbin:$PATH
nvidia-smi -L
(cd .devbin && timeout 200 ./gpu-tests --ignored --test-threads 1 2>&1 | grep -E 'test result|FAILED|panicked' )
c=/tmp/pubmed.tcorp
topos synth -o $c --docs 8282000 --vocab 141043 --topics 100 --doc-len 90 --holdout 0.001 -q
for spec in "10000 old" "10000 new" "1000 new" "1000 old"; do
  set -- $spec; k=$1; b=.devbin/topos-$2-prof
  /usr/bin/time -f "%e %M" -o /tmp/t $b train $c -k $k --iters 30 --heldout-every 0 --json -q -o /tmp/m.tmod --device cuda > /tmp/r.json 2>/tmp/r.err || tail /tmp/r.err
  grep prof /tmp/r.err
  python3 - "$2" "$k" "$(cksum < /tmp/m.tmod | cut -d' ' -f1)" <<'PY'
import json,sys
d=json.load(open('/tmp/r.json')); wall,kb=open('/tmp/t').read().split()
print(sys.argv[1], 'K', sys.argv[2], 'wall', wall, 'host MiB', int(kb)//1024, 'loop', round(d['seconds'],3), 'crc', sys.argv[3], 'heldout', d.get('heldout_ll'))
print('  phases', {k: round(v,3) for k,v in d['phases'].items() if isinstance(v,(int,float)) and v})
PY
done
