"""The Python package against the issue's list (issue 22) and against the CLI built beside it."""

import json
import os
import pathlib
import pickle
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import Pipeline

import topos
from conftest import cli, cli_error, cli_json


@pytest.fixture(scope="module")
def demo_corpus(abstracts):
    return topos.Corpus.from_texts(abstracts, holdout=0.1, min_df=3)


@pytest.fixture(scope="module")
def counts(abstracts):
    vec = CountVectorizer(min_df=5, stop_words="english")
    X = vec.fit_transform(abstracts)
    return X, vec


# -- demo-corpus topics (the tomotopy-style API) ------------------------------------------------


def test_demo_corpus_topics(demo_corpus):
    c = demo_corpus
    assert c.num_docs + c.num_heldout == 2000
    assert 150 < c.num_heldout < 250
    logs = []
    model = topos.train(c, k=20, iters=60, seed=1, callback=logs.append)
    assert [log.iteration for log in logs] == [10, 20, 30, 40, 50, 60]
    # With a callback and held-out documents every evaluation has the held-out value, and 60
    # iterations of Gibbs sampling improve on 10.
    assert all(log.heldout_ll is not None and log.heldout_ll < 0 for log in logs)
    assert logs[-1].heldout_ll > logs[0].heldout_ll
    assert model.summary["iterations"] == 60 and model.summary["algorithm"] == "cgs"
    assert model.summary["heldout_ll"] == logs[-1].heldout_ll
    topics = model.topics(top=10)
    assert len(topics) == 20 and all(len(t) == 10 for t in topics)
    vocab = set(c.vocabulary)
    for t in topics:
        probs = [p for _, p in t]
        assert probs == sorted(probs, reverse=True) and 0 < probs[-1] and probs[0] < 1
        assert all(w in vocab for w, _ in t)
    # The abstracts include physics and astronomy: topics about them must emerge.
    tops = [{w for w, _ in t} for t in topics]
    assert any("quantum" in t for t in tops)
    assert any("stars" in t or "galaxies" in t for t in tops)
    # Inference of new text: rows are distributions, and a quantum text lands on the topic whose
    # top word is "quantum".
    theta = model.infer(["quantum entanglement of states in a quantum system", "stars and galaxies"])
    assert theta.shape == (2, 20)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-9)
    quantum = next(i for i, t in enumerate(tops) if "quantum" in t)
    assert theta[0].argmax() == quantum


def test_corpus_is_the_one_cli_prepare_makes(abstracts, demo_corpus, tmp_path, topos_bin):
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in abstracts), encoding="utf-8")
    cli(topos_bin, "prepare", jsonl, "-o", tmp_path / "cli.tcorp", "--holdout", "0.1", "--min-df", "3")
    demo_corpus.save(tmp_path / "py.tcorp")
    assert (tmp_path / "py.tcorp").read_bytes() == (tmp_path / "cli.tcorp").read_bytes()
    assert demo_corpus.report["train_documents"] == demo_corpus.num_docs


# -- determinism: byte-identical to the CLI ----------------------------------------------------


def test_model_is_byte_identical_to_the_clis(demo_corpus, tmp_path, topos_bin):
    corpus_path = tmp_path / "demo.tcorp"
    demo_corpus.save(corpus_path)
    cli(topos_bin, "train", corpus_path, "-k", 12, "--iters", 25, "--seed", 7, "--threads", 1,
        "--device", "cpu", "-o", tmp_path / "cli.tmod")
    # Another thread count on the Python side: the model does not depend on it.
    model = topos.train(topos.Corpus.open(corpus_path), k=12, iters=25, seed=7, threads=2,
                        device="cpu", output=tmp_path / "py.tmod")
    cli_bytes = (tmp_path / "cli.tmod").read_bytes()
    assert (tmp_path / "py.tmod").read_bytes() == cli_bytes
    model.save(tmp_path / "saved.tmod")
    assert (tmp_path / "saved.tmod").read_bytes() == cli_bytes
    # The in-memory corpus (not reopened from the file) gives the same model too.
    topos.train(demo_corpus, k=12, iters=25, seed=7, device="cpu", output=tmp_path / "mem.tmod")
    assert (tmp_path / "mem.tmod").read_bytes() == cli_bytes
    # And the evaluator is `topos eval`'s, to the last bit.
    e = cli_json(topos_bin, "eval", tmp_path / "cli.tmod", "--corpus", corpus_path)
    assert model.evaluate(demo_corpus)["heldout_ll"] == e["heldout_ll_per_token"]
    # A different seed gives a different model (the comparison above can fail).
    other = topos.train(demo_corpus, k=12, iters=25, seed=8, device="cpu")
    assert not np.array_equal(other.word_topic(), model.word_topic())


def test_learned_priors_are_the_clis(demo_corpus, tmp_path, topos_bin):
    corpus_path = tmp_path / "demo.tcorp"
    demo_corpus.save(corpus_path)
    cli(topos_bin, "train", corpus_path, "-k", 12, "--iters", 25, "--alpha", 0.3,
        "--optimize-priors", 5, "--optimize-burn-in", 5, "--device", "cpu",
        "-o", tmp_path / "cli.tmod")
    model = topos.train(demo_corpus, k=12, iters=25, alpha=0.3, optimize_priors=5,
                        optimize_burn_in=5, device="cpu", output=tmp_path / "py.tmod")
    assert (tmp_path / "py.tmod").read_bytes() == (tmp_path / "cli.tmod").read_bytes()
    assert isinstance(model.alpha, list) and len(model.alpha) == 12
    assert len(set(model.alpha)) > 1 and all(a > 0 for a in model.alpha)
    with pytest.raises(ValueError, match="at least 1 iteration"):
        topos.train(demo_corpus, k=12, iters=2, optimize_priors=0, device="cpu")
    # Sixth attack: a schedule whose first update comes after the last iteration learns nothing.
    with pytest.raises(ValueError, match="after iteration 52, but iters=5 ends the run"):
        topos.train(demo_corpus, k=12, iters=5, optimize_priors=2, device="cpu")


def test_lda_on_a_matrix_is_the_clis_model_of_that_matrix(counts, tmp_path, topos_bin):
    X, _ = counts
    lda = topos.LDA(n_components=6, random_state=3, max_iter=15, device="cpu").fit(X)
    topos.Corpus.from_csr(X).save(tmp_path / "x.tcorp")
    cli(topos_bin, "train", tmp_path / "x.tcorp", "-k", 6, "--iters", 15, "--seed", 3,
        "--device", "cpu", "-o", tmp_path / "cli.tmod")
    lda.model_.save(tmp_path / "py.tmod")
    assert (tmp_path / "py.tmod").read_bytes() == (tmp_path / "cli.tmod").read_bytes()


# -- scikit-learn conventions ------------------------------------------------------------------


def test_fit_on_countvectorizer_output(counts):
    X, _ = counts
    train, test = X[:1800], X[1800:]
    lda = topos.LDA(n_components=10, random_state=1, max_iter=40, device="cpu")
    theta = lda.fit_transform(train)
    assert theta.shape == (1800, 10)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-9)
    assert lda.components_.shape == (10, X.shape[1]) and lda.n_features_in_ == X.shape[1]
    # components_ are counts plus beta: they add up to the training tokens plus K*V*beta.
    np.testing.assert_allclose(lda.components_.sum(), train.sum() + 10 * X.shape[1] * 0.01)
    new = lda.transform(test)
    assert new.shape == (test.shape[0], 10)
    np.testing.assert_allclose(new.sum(axis=1), 1.0, rtol=1e-9)
    score = lda.score(test)
    # Better than every word equally likely, and better than a model trained for one iteration.
    assert -np.log(X.shape[1]) < score < 0
    barely = topos.LDA(n_components=10, random_state=1, max_iter=1, device="cpu").fit(train)
    assert score > barely.score(test) + 0.05
    assert lda.perplexity(test) == pytest.approx(np.exp(-score))
    # Dense input and float counts are accepted and give the same model.
    dense = topos.LDA(n_components=10, random_state=1, max_iter=40, device="cpu").fit(train.toarray().astype(float))
    np.testing.assert_array_equal(dense.components_, lda.components_)


def test_pipeline_and_clone(abstracts):
    pipe = Pipeline([
        ("vec", CountVectorizer(min_df=5, stop_words="english")),
        ("lda", topos.LDA(n_components=5, random_state=2, max_iter=20, device="cpu")),
    ])
    theta = pipe.fit_transform(abstracts)
    assert theta.shape == (len(abstracts), 5)
    assert pipe.transform(abstracts[:4]).shape == (4, 5)
    assert pipe.get_params()["lda__n_components"] == 5
    twin = clone(pipe)
    assert not hasattr(twin.named_steps["lda"], "model_")
    assert twin.named_steps["lda"].get_params() == pipe.named_steps["lda"].get_params()
    twin.set_params(lda__n_components=4)
    assert twin.named_steps["lda"].n_components == 4
    # Same random_state, same model.
    again = clone(pipe).fit(abstracts)
    np.testing.assert_array_equal(again.named_steps["lda"].components_, pipe.named_steps["lda"].components_)
    # Pickling (joblib workers, joblib.dump) keeps the fitted model.
    thawed = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(thawed.transform(abstracts[:4]), pipe.transform(abstracts[:4]))
    assert thawed.named_steps["lda"].model_.summary == pipe.named_steps["lda"].model_.summary
    with pytest.raises(ValueError, match="not fitted"):
        topos.LDA().transform(sp.csr_matrix(np.ones((2, 3))))


# -- the GIL and Ctrl-C ------------------------------------------------------------------------


def _counts_during(work):
    """How far a pure-Python counter thread gets while `work()` runs in this thread."""
    count = 0
    stop = threading.Event()

    def spin():
        nonlocal count
        while not stop.is_set():
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        start = time.perf_counter()
        work()
        seconds = time.perf_counter() - start
    finally:
        stop.set()
        t.join()
    return count, seconds


def test_gil_is_released_during_fit_transform_and_knn(counts):
    X, _ = counts
    lda = topos.LDA(n_components=20, random_state=1, max_iter=150, n_jobs=1, device="cpu")
    count, seconds = _counts_during(lambda: lda.fit(X))
    assert seconds > 0.5, "fit too short to tell"
    # A thread that held the GIL for the whole fit would let the counter run only at the
    # interpreter's switch interval (5 ms), a few hundred increments per second at most.
    assert count > 100_000 * seconds, f"counter advanced {count} times in {seconds:.2f} s of fit"
    count, seconds = _counts_during(lambda: [lda.transform(X) for _ in range(3)])
    assert count > 100_000 * seconds, f"counter advanced {count} times in {seconds:.2f} s of transform"
    count, seconds = _counts_during(lambda: [topos.knn(X, k=10, threads=1) for _ in range(3)])
    assert count > 100_000 * seconds, f"counter advanced {count} times in {seconds:.2f} s of knn"


def test_ctrl_c_interrupts_a_long_fit(tmp_path):
    script = textwrap.dedent(f"""
        import gzip, os, signal, sys, threading, time
        import topos
        texts = gzip.open({str(pathlib.Path(__file__).resolve().parents[2] / "crates/topos-cli/data/arxiv-abstracts.txt.gz")!r}, "rt").read().splitlines()
        c = topos.Corpus.from_texts(texts, min_df=3)
        # A process started in the background by a non-interactive shell (as CI may be)
        # inherits SIGINT ignored, and Python then leaves it ignored: put back the handler an
        # interactive session has, the one that raises KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        start = time.time()
        try:
            topos.train(c, k=50, iters=1_000_000, device="cpu", output={str(tmp_path / "m.tmod")!r})
        except KeyboardInterrupt:
            print("interrupted after %.2f s" % (time.time() - start))
            sys.exit(0)
        sys.exit("the fit ran to the end")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    seconds = float(r.stdout.split()[2])
    assert 1.0 <= seconds < 10.0, r.stdout
    assert not (tmp_path / "m.tmod").exists(), "an interrupted run must not write a model"


def test_callback_exception_stops_the_run(demo_corpus):
    seen = []

    def callback(log):
        seen.append(log.iteration)
        raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        topos.train(demo_corpus, k=5, iters=1000, eval_every=1, device="cpu", callback=callback)
    assert seen == [1]


# -- errors ------------------------------------------------------------------------------------


def test_bad_input_raises_value_error(counts):
    X, _ = counts
    lda = topos.LDA(n_components=5, max_iter=2, device="cpu")
    with pytest.raises(ValueError, match="empty"):
        lda.fit(sp.csr_matrix((0, 0)))
    with pytest.raises(ValueError, match="no non-zero count"):
        lda.fit(sp.csr_matrix((3, 4)))
    negative = X[:50].astype(np.int64).tolil()
    negative[0, 0] = -1
    with pytest.raises(ValueError, match="negative count"):
        lda.fit(negative.tocsr())
    with pytest.raises(ValueError, match="whole counts"):
        lda.fit(X[:50].astype(float) * 0.5)
    with pytest.raises(ValueError, match="dtype"):
        lda.fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="dtype"):
        lda.fit(np.array([[1, None]], dtype=object))
    with pytest.raises(ValueError, match="must be between 2 and 65535, got 1"):
        topos.LDA(n_components=1).fit(X[:50])
    with pytest.raises(ValueError, match="unknown sampler"):
        topos.LDA(algo="nope").fit(X[:50])
    with pytest.raises(ValueError, match="sequence of strings"):
        topos.Corpus.from_texts("one string")


def test_errors_have_the_clis_messages(demo_corpus, tmp_path, topos_bin):
    corpus_path = tmp_path / "c.tcorp"
    demo_corpus.save(corpus_path)
    with pytest.raises(ValueError) as e:
        topos.train(demo_corpus, k=1)
    assert str(e.value) == cli_error(topos_bin, "train", corpus_path, "-k", 1)
    with pytest.raises(ValueError) as e:
        topos.train(demo_corpus, k=5, alpha=-1.0)
    assert str(e.value) == cli_error(topos_bin, "train", corpus_path, "-k", 5, "--alpha=-1")
    missing = tmp_path / "missing.tmod"
    with pytest.raises(FileNotFoundError) as e:
        topos.load(missing)
    assert str(e.value) == cli_error(topos_bin, "topics", missing)
    garbage = tmp_path / "garbage.tmod"
    garbage.write_bytes(b"not a model at all, but long enough to have a header.....")
    with pytest.raises(OSError) as e:
        topos.load(garbage)
    assert str(e.value) == cli_error(topos_bin, "topics", garbage)
    with pytest.raises(FileNotFoundError):
        topos.Corpus.open(tmp_path / "missing.tcorp")
    with pytest.raises(OSError):
        topos.train(demo_corpus, k=5, iters=1, output=tmp_path / "no" / "such" / "dir" / "m.tmod")


# -- save/load and k-NN ------------------------------------------------------------------------


def test_save_load_round_trip(demo_corpus, tmp_path):
    model = topos.train(demo_corpus, k=8, iters=10, seed=5, device="cpu")
    model.save(tmp_path / "m.tmod")
    back = topos.load(tmp_path / "m.tmod")
    assert back.topics(5) == model.topics(5)
    np.testing.assert_array_equal(back.word_topic(), model.word_topic())
    assert (back.num_topics, back.num_words, back.alpha, back.beta) == (8, model.num_words, model.alpha, model.beta)
    assert back.provenance == model.provenance and back.provenance["seed"] == 5
    assert back.tokenizer == demo_corpus.tokenizer is not None
    texts = ["a galaxy of stars", "quantum states"]
    np.testing.assert_array_equal(back.infer(texts), model.infer(texts))
    back.save(tmp_path / "again.tmod")
    assert (tmp_path / "again.tmod").read_bytes() == (tmp_path / "m.tmod").read_bytes()


@pytest.mark.parametrize("metric", ["jensen-shannon", "cosine"])
def test_knn_equals_the_clis_neighbours(abstracts, tmp_path, topos_bin, metric):
    corpus = topos.Corpus.from_texts(abstracts[:600], min_df=3)
    corpus.save(tmp_path / "c.tcorp")
    out = cli_json(topos_bin, "knn", tmp_path / "c.tcorp", "-k", 5, "--metric", metric, "--device", "cpu")
    X = corpus.to_csr()
    distances, indices = topos.knn(X, k=5, metric=metric)
    ids = corpus.train_ids
    assert indices.shape == distances.shape == (corpus.num_docs, 5)
    results = {r["query"]: r["neighbors"] for r in out["results"]}
    assert len(results) == corpus.num_docs
    for row in range(corpus.num_docs):
        expected = results[int(ids[row])]
        assert [int(ids[j]) for j in indices[row]] == [n["doc"] for n in expected]
        np.testing.assert_allclose(distances[row], [n["distance"] for n in expected], rtol=1e-6)
    # Queries against the index: a row is then its own nearest neighbour.
    d, i = topos.knn(X, k=1, metric=metric, queries=X[:10])
    assert list(i[:, 0]) == list(range(10))
    with pytest.raises(ValueError, match="unknown metric"):
        topos.knn(X, metric="nope")


def test_algo_auto_chooses_like_the_cli(demo_corpus):
    # The rule of `topos train --algo auto`: long documents (the demo abstracts) get cgs at any
    # K on the CPU; documents under 20 tokens at K >= 1,000 get ezlda. The choice is recorded.
    for k in (20, 1000):
        model = topos.train(demo_corpus, k=k, iters=2, algo="auto", device="cpu")
        assert model.summary["algorithm"] == "cgs"
    words = ["river", "water", "fish", "boat", "lake", "stock", "market", "price", "trade", "bank"]
    short = topos.Corpus.from_texts(
        [" ".join(words[(i + j * 3) % len(words)] for j in range(6)) for i in range(300)],
        max_df=1.0,
    )
    assert short.num_tokens / short.num_docs < 20
    model = topos.train(short, k=1000, iters=2, algo="auto", device="cpu")
    assert model.summary["algorithm"] == "ezlda"
    assert topos.train(short, k=20, iters=2, algo="auto", device="cpu").summary["algorithm"] == "cgs"


def test_sampler_settings_like_the_cli(demo_corpus):
    # ezlda_g is a speed knob (the same model for every g); mh_steps changes the chain and is
    # recorded; each is refused with another sampler or out of its range.
    def model_bytes(**kw):
        return topos.train(demo_corpus, k=10, iters=3, device="cpu", **kw)._inner._to_bytes()

    assert model_bytes(algo="ezlda", ezlda_g=1) == model_bytes(algo="ezlda", ezlda_g=3)
    m = topos.train(demo_corpus, k=10, iters=3, algo="mh", mh_steps=2, device="cpu")
    assert m.summary["sampler_settings"] == {"mh_steps": 2}
    assert m.provenance["sampler_settings"] == {"mh_steps": 2}
    assert model_bytes(algo="mh", mh_steps=2) != model_bytes(algo="mh")
    m = topos.train(demo_corpus, k=10, iters=3, algo="mfm", counters="approx8", device="cpu")
    assert m.provenance["sampler_settings"] == {"counter_bits": 8}
    m = topos.train(demo_corpus, k=10, iters=3, algo="mfm", own_draw="kept", device="cpu")
    assert m.provenance["sampler_settings"] == {"own_draw": 0}
    assert model_bytes(algo="mfm", own_draw="kept") != model_bytes(algo="mfm")
    m = topos.train(demo_corpus, k=10, iters=3, algo="mfm", own_draw="document", device="cpu")
    assert m.provenance["sampler_settings"] == {"own_draw": 1}
    assert model_bytes(algo="mfm", own_draw="document") != model_bytes(algo="mfm")
    m = topos.train(demo_corpus, k=10, iters=3, algo="mfm", own_draw="removed", device="cpu")
    assert m.provenance["sampler_settings"] == {"own_draw": 2}
    with pytest.raises(ValueError, match="own_draw must be balanced, removed, document or kept"):
        topos.train(demo_corpus, k=10, iters=1, algo="mfm", own_draw="maybe", device="cpu")
    with pytest.raises(ValueError, match="counters must be exact, approx8 or approx4"):
        topos.train(demo_corpus, k=10, iters=1, algo="mfm", counters="approx2", device="cpu")
    with pytest.raises(ValueError, match="mh_steps applies to algo=mh only"):
        topos.train(demo_corpus, k=10, iters=1, mh_steps=2, device="cpu")
    with pytest.raises(ValueError, match="ezlda_g must be a whole number from 1 to 16"):
        topos.train(demo_corpus, k=10, iters=1, algo="ezlda", ezlda_g=0, device="cpu")
    # The keywords are the registry's: an unknown one names those there are; a value is a
    # number or a name, as on the command line.
    with pytest.raises(TypeError, match="unexpected keyword argument 'mh_step'.*mh_steps"):
        topos.train(demo_corpus, k=10, iters=1, algo="mh", mh_step=2, device="cpu")
    with pytest.raises(ValueError, match="mh_steps must be a whole number from 1 to 64"):
        topos.train(demo_corpus, k=10, iters=1, algo="mh", mh_steps=2.5, device="cpu")
    assert model_bytes(algo="mh", mh_steps="2") == model_bytes(algo="mh", mh_steps=2)


def test_whole_number_parameters_are_checked_by_name(demo_corpus):
    # A third new-user attack: k=2.7 trained 2 topics, k=-3 raised an OverflowError.
    for kw, match in [
        ({"k": 2.7}, "k must be a whole number"),
        ({"k": -3}, "k must be 0 or more"),
        ({"iters": -1}, "iters must be 0 or more"),
        ({"threads": True}, "threads must be a whole number"),
        ({"seed": -1}, "seed must be 0 or more"),
        ({"partitions": 1.5}, "partitions must be a whole number"),
    ]:
        args = {"k": 3, "iters": 1, "device": "cpu", **kw}
        with pytest.raises(ValueError, match=match):
            topos.train(demo_corpus, **args)
    model = topos.train(demo_corpus, k=np.int64(3), iters=1, device="cpu")
    with pytest.raises(ValueError, match="sweeps must be 0 or more"):
        model.infer(["a b"], sweeps=-2)


def test_knn_says_when_distances_rank_nothing():
    X = sp.csr_matrix(np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
    with pytest.warns(RuntimeWarning, match="correlation is undefined"):
        topos.knn(X, k=1, metric="correlation")
    B = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    with pytest.warns(RuntimeWarning, match="KL divergence is infinite"):
        topos.knn(B, k=1, metric="kl-divergence")


def test_from_texts_errors_speak_of_the_texts():
    with pytest.raises(ValueError) as e:
        topos.Corpus.from_texts(["", "the and of"])
    msg = str(e.value)
    assert "the texts" in msg and "texts.jsonl" not in msg and "--text-field" not in msg, msg


def test_infer_says_which_documents_it_knew_nothing_of(demo_corpus):
    # Sixth attack: `topos infer` warns about documents without a known word; Model.infer gave
    # them the prior's mixture without a word.
    model = topos.train(demo_corpus, k=4, iters=5, device="cpu")
    with pytest.warns(RuntimeWarning, match="2 of 3 documents have no word known to the model"):
        theta = model.infer(["", "zzzzqx qqqqzx", "quantum states of a system"])
    np.testing.assert_allclose(theta[0], np.full(4, 0.25))
    rows = sp.csr_matrix(([3], ([1], [0])), shape=(2, model.num_words), dtype=np.int64)
    with pytest.warns(RuntimeWarning, match="1 of 2 documents"):
        model.infer(rows)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.infer(["quantum states of a system"])
        model.infer([])
