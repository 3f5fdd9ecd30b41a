"""Issue 23's exports read back with pandas and pyarrow equal the CLI's own outputs.

`topos export` writes topic keys, φ and θ of the training documents as CSV, JSON Lines, `.npy` and
Parquet; these tests read every one of them back with the tools people hand them to (pandas,
pyarrow, numpy) and compare with `topos topics --json` (words, counts, φ), with each other and
with the counts of the long layout (θ), and with `topos infer --json` on the same documents. A
word with a comma and a double quote must come back from CSV unchanged.

Parquet needs a binary built with `--features parquet`; without it those cases are skipped, unless
TOPOS_REQUIRE_PARQUET=1 (set by .ci/run) turns the missing support into a failure.
"""

import json
import os
import random

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from conftest import cli, cli_json

# Words the CSV writer must quote (comma, double quote, both), and markup.
TRICKY = ['a,"b', "x,y", '"quoted"', "<script>"]
THEMES = [
    ["river", "water", "fish", "boat", "lake", "stream", "flood", TRICKY[0]],
    ["stock", "market", "price", "trade", "money", "invest", TRICKY[1], TRICKY[2]],
    ["game", "team", "player", "score", "match", "season", "coach", TRICKY[3]],
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, topos_bin):
    """A 3-topic model with its side file, trained on themed documents of tricky words."""
    d = tmp_path_factory.mktemp("exports")
    rng = random.Random(23)
    lines = []
    for i in range(150):
        theme = THEMES[i % 3]
        other = THEMES[(i + 1) % 3]
        words = [rng.choice(theme) for _ in range(18)] + [rng.choice(other) for _ in range(2)]
        rng.shuffle(words)
        lines.append(" ".join(words))
    text = d / "docs.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = d / "c.tcorp"
    cli(topos_bin, "prepare", text, "-o", corpus, "--tokenizer", "whitespace", "--holdout", "0.2")
    model = d / "c.tmod"
    cli(topos_bin, "train", corpus, "-k", 3, "--iters", 40, "--seed", 5, "--alpha", 0.2,
        "--doc-topics", "-o", model)
    topics = cli_json(topos_bin, "topics", model, "--top", 8)
    vocab_size = topics["num_words"]
    return {"dir": d, "corpus": corpus, "model": model, "topics": topics, "V": vocab_size}


def export(topos_bin, trained, name, *args):
    out = trained["dir"] / name
    cli(topos_bin, "export", trained["model"], "-o", out, *args)
    return out


@pytest.fixture(scope="module")
def parquet(topos_bin, trained):
    """`parquet(name, *args)`: exports to Parquet and reads the file back with pyarrow; skips the
    test where this binary has no Parquet support, unless TOPOS_REQUIRE_PARQUET=1."""

    def read(name, *args):
        out = trained["dir"] / name
        r = cli(topos_bin, "export", trained["model"], "-o", out, "--format", "parquet", *args,
                check=False)
        if r.returncode != 0:
            if "no Parquet support" in r.stderr and os.environ.get("TOPOS_REQUIRE_PARQUET") != "1":
                pytest.skip("this topos binary was built without --features parquet")
            raise AssertionError(f"export to parquet failed: {r.stderr}")
        return pq.read_table(out).to_pandas()

    return read


def read_csv(path):
    # Numbers must come back as the exact f64 written (pandas 3 parses them so by default, older
    # pandas with float_precision="round_trip"); keep_default_na=False: words are words.
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(path, keep_default_na=False, **exact)


def read_jsonl(path):
    return pd.read_json(path, lines=True, precise_float=True)


def keys_from_topics(topics):
    """`topics --json` as rows (topic, rank from 1, word, count, phi)."""
    rows = []
    for t in topics["topics"]:
        for rank, w in enumerate(t["top_words"]):
            rows.append((t["topic"], rank + 1, w["word"], w["count"], w["probability"]))
    return rows


def check_keys(df, topics):
    assert list(df.columns) == ["topic", "rank", "word", "count", "phi"]
    got = [(int(a), int(b), c, int(d), float(e)) for a, b, c, d, e in df.itertuples(index=False)]
    assert got == keys_from_topics(topics)


def test_topic_keys_equal_topics_json(topos_bin, trained):
    words = {w for _, _, w, _, _ in keys_from_topics(trained["topics"])}
    assert words >= set(TRICKY), "the tricky words are top words"
    check_keys(read_csv(export(topos_bin, trained, "keys.csv", "--what", "topic-keys", "--top", 8)),
               trained["topics"])
    check_keys(read_jsonl(export(topos_bin, trained, "keys.jsonl", "--what", "topic-keys", "--top", 8)),
               trained["topics"])


def test_csv_quotes_a_word_with_comma_and_quote(topos_bin, trained):
    path = export(topos_bin, trained, "keys-raw.csv", "--what", "topic-keys", "--top", 8)
    raw = path.read_text(encoding="utf-8")
    assert '"a,""b"' in raw and '"""quoted"""' in raw and '"x,y"' in raw
    words = set(read_csv(path)["word"])
    assert set(TRICKY) <= words
    # φ's wide header is the vocabulary, one column per word, tricky words included.
    header = read_csv(export(topos_bin, trained, "phi-header.csv", "--what", "phi")).columns
    assert set(TRICKY) <= set(header[1:])


def check_phi_wide(df, npy):
    assert list(df["topic"]) == list(range(npy.shape[0]))
    assert np.array_equal(df.iloc[:, 1:].to_numpy(dtype=np.float64), npy)


def check_phi_long(df, topics):
    assert list(df.columns) == ["topic", "word", "count", "phi"]
    cells = {(int(t), w): (int(c), float(p)) for t, w, c, p in df.itertuples(index=False)}
    for t in topics["topics"]:
        for w in t["top_words"]:
            assert cells[(t["topic"], w["word"])] == (w["count"], w["probability"])


def test_phi_equals_topics_json(topos_bin, trained):
    topics = trained["topics"]
    K, V = topics["hyperparameters"]["num_topics"], trained["V"]
    npy = np.load(export(topos_bin, trained, "phi.npy", "--what", "phi"))
    assert npy.shape == (K, V) and npy.dtype == np.float64
    assert np.allclose(npy.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    wide = read_csv(export(topos_bin, trained, "phi.csv", "--what", "phi"))
    check_phi_wide(wide, npy)
    words = list(wide.columns[1:])
    for t in topics["topics"]:
        for w in t["top_words"]:
            # φ of a top word: the same f64 as `topics --json`, in the word's own column.
            assert npy[t["topic"], w["id"]] == w["probability"]
            assert words[w["id"]] == w["word"]
    jsonl = [json.loads(line) for line in export(topos_bin, trained, "phi.jsonl", "--what", "phi")
             .read_text(encoding="utf-8").splitlines()]
    assert all(list(r) == ["topic", "phi"] for r in jsonl), "keys in column order"
    assert [r["topic"] for r in jsonl] == list(range(K))
    assert np.array_equal(np.array([r["phi"] for r in jsonl]), npy)
    check_phi_long(read_csv(export(topos_bin, trained, "phi-long.csv", "--what", "phi",
                                   "--layout", "long")), topics)


def test_doc_topics_equal_each_other_the_counts_and_infer(topos_bin, trained):
    topics = trained["topics"]
    K = topics["hyperparameters"]["num_topics"]
    alpha = topics["hyperparameters"]["alpha"]
    D = topics["provenance"]["num_docs"]
    npy = np.load(export(topos_bin, trained, "theta.npy", "--what", "doc-topics"))
    assert npy.shape == (D, K)
    wide = read_csv(export(topos_bin, trained, "theta.csv"))
    jsonl = read_jsonl(export(topos_bin, trained, "theta.jsonl"))
    long_df = read_csv(export(topos_bin, trained, "theta-long.csv", "--layout", "long"))
    # Keyed by training position and by input record (the corpus is beside the model): the
    # record is the input line, which skips the held-out documents' lines.
    assert list(wide.columns) == ["doc", "record"] + [f"topic_{k}" for k in range(K)]
    assert list(jsonl.columns) == ["doc", "record", "theta"]
    assert list(wide["doc"]) == list(range(D)) and list(jsonl["doc"]) == list(range(D))
    records = list(wide["record"])
    assert records == list(jsonl["record"]) and records == sorted(set(records))
    assert records[-1] < 150 and records != list(range(D))
    assert np.array_equal(wide.iloc[:, 2:].to_numpy(dtype=np.float64), npy)
    assert np.array_equal(np.array(jsonl["theta"].tolist(), dtype=np.float64), npy)
    # θ from the long layout's counts: (A_dk + α) / (n_d + Kα), α as `topics --json` reports it.
    counts = np.zeros((D, K))
    for d, _record, k, c, theta in long_df.itertuples(index=False):
        counts[d, k] = c
        assert theta == npy[d, k]
    a = np.full(K, alpha) if np.isscalar(alpha) else np.array(alpha)
    expected = (counts + a) / (counts.sum(axis=1, keepdims=True) + a.sum())
    assert np.allclose(npy, expected, rtol=0, atol=1e-15)
    assert counts.sum() == sum(t["tokens"] for t in topics["topics"])
    # `topos infer` folds the same documents in afresh (its own Gibbs chain, so not the same
    # numbers), and must find the same mixtures row by row: row d of the export is document d.
    text_dir = trained["dir"] / "text"
    cli(topos_bin, "export", trained["corpus"], "-o", text_dir)
    inferred = cli_json(topos_bin, "infer", trained["model"], text_dir / "train.txt", "--top", 0)
    assert len(inferred["documents"]) == D
    theta_infer = np.zeros((D, K))
    for row in inferred["documents"]:
        for tw in row["topics"]:
            theta_infer[row["doc"], tw["topic"]] = tw["probability"]
    assert (theta_infer.argmax(axis=1) == npy.argmax(axis=1)).mean() > 0.95
    matched = np.abs(theta_infer - npy).sum(axis=1).mean()
    shifted = np.abs(np.roll(theta_infer, 1, axis=0) - npy).sum(axis=1).mean()
    assert matched < 0.2 and matched < shifted / 4, (matched, shifted)


def test_parquet_equals_topics_json_and_the_other_formats(topos_bin, trained, parquet):
    topics = trained["topics"]
    check_keys(parquet("keys.parquet", "--what", "topic-keys", "--top", 8), topics)
    phi = np.load(export(topos_bin, trained, "phi-p.npy", "--what", "phi"))
    wide = parquet("phi.parquet", "--what", "phi")
    check_phi_wide(wide, phi)
    assert set(TRICKY) <= set(wide.columns[1:])
    check_phi_long(parquet("phi-long.parquet", "--what", "phi", "--layout", "long"), topics)
    theta = np.load(export(topos_bin, trained, "theta-p.npy", "--what", "doc-topics"))
    tw = parquet("theta.parquet")
    assert list(tw.columns) == ["doc", "record"] + [f"topic_{k}" for k in range(theta.shape[1])]
    assert list(tw["doc"]) == list(range(theta.shape[0]))
    assert np.array_equal(tw.iloc[:, 2:].to_numpy(dtype=np.float64), theta)
    tl = parquet("theta-long.parquet", "--layout", "long")
    long_csv = read_csv(export(topos_bin, trained, "theta-long-p.csv", "--layout", "long"))
    assert list(tl.columns) == list(long_csv.columns) == ["doc", "record", "topic", "count",
                                                          "theta"]
    ints = ["doc", "record", "topic", "count"]
    assert np.array_equal(tl[ints].to_numpy(dtype=np.int64), long_csv[ints].to_numpy(dtype=np.int64))
    assert np.array_equal(tl["theta"].to_numpy(), long_csv["theta"].to_numpy())
