# Topos's window coherences (NPMI, UCI, C_V) against gensim's CoherenceModel on the same tokens,
# with both ways of counting a window's words (docs/report.md, "Coherence"). The default corpus
# is the demo's abstracts; any text file of one document per line can be given instead.
# usage: python bench/coherence_gensim.py [TOPOS_BINARY [TEXT_FILE [K]]]
#   in a virtual environment with gensim (4.4.0 was used): pip install gensim
import json, os, shutil, subprocess, sys, tempfile, time
from gensim.corpora import Dictionary
from gensim.models.coherencemodel import CoherenceModel
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
T = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "topos")
SRC = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "crates", "topos-cli", "data", "arxiv-abstracts.txt.gz")
K = int(sys.argv[3]) if len(sys.argv) > 3 else 20
d = tempfile.mkdtemp()
def run(*a):
    return subprocess.run([T, *map(str, a)], check=True, capture_output=True, text=True).stdout
run("prepare", SRC, "-o", f"{d}/demo.tcorp", "--holdout", "0.1", "-q")
run("train", f"{d}/demo.tcorp", "-k", K, "--iters", 50, "--seed", 1, "-o", f"{d}/demo.tmod", "-q")
run("export", f"{d}/demo.tcorp", "-o", f"{d}/text", "-q")
texts = [l.split() for l in open(f"{d}/text/train.txt")]
topics = [[w["word"] for w in t["top_words"] if w["count"] > 0] for t in json.loads(run("topics", f"{d}/demo.tmod", "--top", 10, "--json"))["topics"]]
print("docs", len(texts), "tokens", sum(map(len, texts)), "repeats within docs", sum(len(t) - len(set(t)) for t in texts))
dictionary = Dictionary(texts)
for counting in ["gensim", "exact"]:
    t0 = time.time()
    e = json.loads(run("eval", f"{d}/demo.tmod", "--coherence", "npmi,uci,c_v", "--top", 10, "--window-counting", counting, "--json"))
    print(counting, "topos eval %.1fs" % (time.time() - t0))
    for c in e["coherence"]:
        name = {"npmi": "c_npmi", "uci": "c_uci", "c_v": "c_v"}[c["measure"]]
        t0 = time.time()
        cm = CoherenceModel(topics=topics, texts=texts, dictionary=dictionary, coherence=name, window_size=c["window"], processes=1)
        g = cm.get_coherence_per_topic()
        diff = max(abs(a - b) for a, b in zip(c["per_topic"], g))
        print("  %-6s window %3d  topos mean %.9f  gensim mean %.9f  max |diff| per topic %.3g  (gensim %.1fs)" % (name, c["window"], c["mean"], sum(g) / len(g), diff, time.time() - t0))
shutil.rmtree(d)
