"""Topos: LDA topic models on every CPU core or a GPU, from Python.

Two ways in, over the same Rust library as the ``topos`` command (same corpora, same models,
byte for byte):

* scikit-learn style: :class:`LDA` (``fit``/``transform``/``score``, ``components_``), usable in
  a ``Pipeline`` and with ``clone``, on count matrices such as CountVectorizer's output.
* tomotopy style: :class:`Corpus` (``Corpus.from_texts`` with Topos's tokenizer), :func:`train`
  with a per-evaluation ``callback``, :class:`Model` (``topics``, ``infer``, ``save``),
  :func:`load`, and :func:`knn` for nearest documents.

Training, inference and k-NN release the GIL; Ctrl-C stops a training run between iterations.
Errors are Python exceptions with the CLI's messages: ValueError for bad arguments and data,
OSError (FileNotFoundError, ...) for files, MemoryError for a run that would not fit.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.sparse as sp

from . import _matrix
from . import _topos

__version__: str = _topos.__version__
GPU_SUPPORT: bool = _topos.GPU_SUPPORT
SAMPLERS: List[str] = list(_topos.SAMPLERS)
METRICS: List[str] = list(_topos.METRICS)

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "Corpus",
    "Model",
    "TrainLog",
    "train",
    "load",
    "knn",
    "heldout_log_likelihood",
    "LDA",
    "SAMPLERS",
    "METRICS",
    "GPU_SUPPORT",
]


def _whole(name: str, value: Any, *, optional: bool = False) -> Optional[int]:
    """``value`` as a whole number of at least 0 (``None`` passes where ``optional``), else a
    ``ValueError`` naming the parameter: ``k=2.7`` is not silently 2, and ``k=-3`` not an
    ``OverflowError`` from the conversion to an unsigned integer."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, got {value}")
    return int(value)


def _texts(texts: Any, what: str = "texts") -> List[str]:
    if isinstance(texts, (str, bytes)):
        raise ValueError(f"{what} must be a sequence of strings, not one string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ValueError(f"{what}[{i}] is {type(t).__name__}, not str")
    return out


class Corpus:
    """Documents over a vocabulary, split into training and held-out documents (a ``.tcorp``).

    Make one with :meth:`from_texts` (Topos's tokenizer, as ``topos prepare``), :meth:`from_csr`
    (a count matrix) or :meth:`open` (a ``.tcorp`` file).
    """

    def __init__(self, inner: "_topos.Corpus") -> None:
        self._inner = inner

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        holdout: float = 0.0,
        *,
        seed: int = 0,
        min_df: int = 5,
        max_df: float = 0.5,
        max_vocab: Optional[int] = None,
        tokenizer: str = "words",
        language: str = "english",
        min_len: Optional[int] = None,
        stem: bool = False,
        keep_stopwords: bool = False,
        keep_numbers: bool = False,
        keep_case: bool = False,
    ) -> "Corpus":
        """Prepares texts as ``topos prepare`` prepares a JSONL file of them, with the same
        defaults: Unicode words, lower-cased, English stop words and numbers dropped, tokens of
        at least 3 characters, words in at least ``min_df`` documents and at most ``max_df`` of
        them. ``holdout`` is the fraction of documents held out for evaluation (split by
        ``seed``, as ``--holdout``/``--seed``); documents left empty are dropped.
        """
        inner = _topos.Corpus.from_texts(
            _texts(texts),
            holdout=float(holdout),
            seed=int(seed),
            min_df=int(min_df),
            max_df=float(max_df),
            max_vocab=max_vocab,
            tokenizer=tokenizer,
            language=language,
            min_len=min_len,
            stem=bool(stem),
            keep_stopwords=bool(keep_stopwords),
            keep_numbers=bool(keep_numbers),
            keep_case=bool(keep_case),
        )
        return cls(inner)

    @classmethod
    def from_csr(
        cls,
        X: Any,
        vocabulary: Optional[Sequence[str]] = None,
        holdout: float = 0.0,
        *,
        seed: int = 0,
    ) -> "Corpus":
        """A corpus of a count matrix (documents x words, e.g. CountVectorizer's output).

        ``vocabulary`` names the columns (default ``"0"``, ``"1"``, ...); rows are held out by
        the same deterministic split as ``topos prepare --holdout`` (by row index and ``seed``);
        empty rows are dropped (:attr:`train_ids` and :attr:`heldout_ids` give the rows kept).
        """
        indptr, indices, data, _, n_cols = _matrix.counts(X)
        words = [str(i) for i in range(n_cols)] if vocabulary is None else [str(w) for w in vocabulary]
        inner, _, _ = _topos.Corpus._from_counts(
            indptr, indices, data, n_cols, words, holdout=float(holdout), seed=int(seed)
        )
        return cls(inner)

    @classmethod
    def open(cls, path: PathLike) -> "Corpus":
        """Opens a ``.tcorp`` file (memory-mapped)."""
        return cls(_topos.Corpus.open(os.fspath(path)))

    def save(self, path: PathLike) -> None:
        """Writes the corpus to a ``.tcorp`` file that ``topos train`` reads."""
        self._inner.save(os.fspath(path))

    def to_csr(self, heldout: bool = False) -> sp.csr_matrix:
        """The training (or held-out) documents as a scipy CSR matrix of counts (int64)."""
        indptr, indices, data = self._inner._counts(heldout=heldout)
        return _matrix.to_scipy(indptr, indices, data, self.num_words)

    @property
    def num_docs(self) -> int:
        """Training documents."""
        return self._inner.num_docs

    @property
    def num_heldout(self) -> int:
        """Held-out documents."""
        return self._inner.num_heldout

    @property
    def num_tokens(self) -> int:
        """Training tokens."""
        return self._inner.num_tokens

    @property
    def num_words(self) -> int:
        """Vocabulary size."""
        return self._inner.num_words

    @property
    def vocabulary(self) -> List[str]:
        """Words by id."""
        return self._inner.vocabulary

    @property
    def train_ids(self) -> np.ndarray:
        """For each training document, its index in the input."""
        return self._inner.train_ids

    @property
    def heldout_ids(self) -> np.ndarray:
        """For each held-out document, its index in the input."""
        return self._inner.heldout_ids

    @property
    def tokenizer(self) -> Optional[str]:
        """The tokenizer options recorded in the corpus, in words (None for a count matrix)."""
        return self._inner.tokenizer

    @property
    def report(self) -> Optional[Dict[str, Any]]:
        """What preparing the texts kept and dropped (``topos prepare --json``), if prepared."""
        r = self._inner._report
        return None if r is None else json.loads(r)

    @property
    def checksum(self) -> str:
        """The corpus's payload checksum (hex), which a model trained on it records."""
        return self._inner.checksum

    def __repr__(self) -> str:
        return repr(self._inner)


@dataclass(frozen=True)
class TrainLog:
    """One evaluation point of a training run (a line of ``topos train --log``)."""

    iteration: int
    """Iterations done."""
    seconds: float
    """Training seconds so far (evaluations excluded)."""
    tokens_per_second: float
    train_ll: Optional[float]
    """Training log-likelihood per token, when computed at this iteration."""
    heldout_ll: Optional[float]
    """Held-out log-likelihood per token (document completion), when computed."""


class Model:
    """A trained LDA model (a ``.tmod`` file): topic-word counts and their priors."""

    def __init__(self, inner: "_topos.Model", summary: Optional[Dict[str, Any]] = None) -> None:
        self._inner = inner
        self.summary: Optional[Dict[str, Any]] = summary
        """What the training run reported (``topos train --json``); None for a loaded model."""

    @property
    def num_topics(self) -> int:
        return self._inner.num_topics

    @property
    def num_words(self) -> int:
        return self._inner.num_words

    @property
    def alpha(self) -> Union[float, List[float]]:
        """Document-topic prior: a float, or one value per topic when it was learned."""
        return self._inner.alpha

    @property
    def beta(self) -> float:
        """Topic-word prior."""
        return self._inner.beta

    @property
    def vocabulary(self) -> List[str]:
        return self._inner.vocabulary

    @property
    def provenance(self) -> Dict[str, Any]:
        """Sampler, iterations, seed, corpus checksum and sizes, as the model file records."""
        return self._inner.provenance

    @property
    def tokenizer(self) -> Optional[str]:
        """How :meth:`infer` cuts text (the corpus's recorded options); None for a count model."""
        return self._inner.tokenizer

    def topics(self, top: int = 10) -> List[List[Tuple[str, float]]]:
        """The ``top`` most probable words of each topic with their probability φ_kw."""
        if top < 1:
            raise ValueError(f"top must be at least 1, got {top}")
        return self._inner.topics(top)

    def word_topic(self) -> np.ndarray:
        """Word-topic counts B as a (num_words, num_topics) uint32 array."""
        return self._inner._word_topic()

    def topic_word(self) -> np.ndarray:
        """φ as a (num_topics, num_words) float64 array whose rows sum to 1: (B + β) / (n_k + Vβ)."""
        c = self.word_topic().T.astype(np.float64) + self.beta
        return c / c.sum(axis=1, keepdims=True)

    def infer(
        self,
        docs: Union[Sequence[str], Any],
        *,
        sweeps: int = 50,
        burn_in: int = 10,
        seed: int = 1,
        threads: int = 0,
    ) -> np.ndarray:
        """Topic mixtures θ (n_docs, num_topics) of new documents, as ``topos infer``: texts
        (cut as the model's corpus was cut; unknown words dropped) or a count matrix over the
        model's vocabulary. Rows sum to 1; a document with no known word gets the prior's mean
        mixture (uniform for a symmetric α), and a ``RuntimeWarning`` counts such documents.
        """
        sweeps, burn_in, seed, threads = (
            _whole(n, v) for n, v in [("sweeps", sweeps), ("burn_in", burn_in), ("seed", seed), ("threads", threads)]
        )
        if sp.issparse(docs) or isinstance(docs, np.ndarray):
            indptr, indices, data, _, n_cols = _matrix.counts(docs, "docs", allow_empty=True)
            if n_cols != self.num_words:
                raise ValueError(f"docs has {n_cols} columns but the model has {self.num_words} words")
            theta = self._inner._infer_counts(indptr, indices, data, sweeps, burn_in, seed, threads)
            n = len(indptr) - 1
            rows = np.repeat(np.arange(n), np.diff(indptr))
            sums = np.bincount(rows, weights=np.asarray(data, dtype=np.float64), minlength=n)
            unknown = int(np.sum(sums == 0))
        else:
            theta, unknown = self._inner._infer_texts(_texts(docs, "docs"), sweeps, burn_in, seed, threads)
        if unknown:
            # As `topos infer` says it: a row that is only the prior is not an inferred mixture.
            warnings.warn(
                f"{unknown} of {theta.shape[0]} documents have no word known to the model: "
                "their rows are the prior's mean mixture, not inferred",
                RuntimeWarning,
                stacklevel=2,
            )
        return theta

    def heldout_log_likelihood(
        self,
        X: Union[Corpus, Any],
        *,
        sweeps: int = 50,
        burn_in: int = 10,
        seed: int = 1,
        threads: int = 0,
    ) -> Dict[str, Any]:
        """Held-out log-likelihood per token by document completion, ``topos eval``'s
        evaluator: each document's first half of tokens folded in with the topics fixed, the
        second half scored. ``X`` is a :class:`Corpus` (its held-out documents, in their order:
        exactly ``topos eval``) or a count matrix over the model's vocabulary (a row has no
        token order, so its tokens are put in a fixed pseudo-random order keyed by ``seed``
        before the halves are cut). Returns a dict with ``heldout_ll``, ``perplexity`` and the
        documents and tokens scored.
        """
        return self._inner._heldout(*_heldout_args(X, self.num_words), sweeps, burn_in, seed, threads)

    def evaluate(self, corpus: Corpus, **kw: Any) -> Dict[str, Any]:
        """:meth:`heldout_log_likelihood` of the corpus's held-out documents (``topos eval``)."""
        return self.heldout_log_likelihood(corpus, **kw)

    def save(self, path: PathLike) -> None:
        """Writes the model to a ``.tmod`` file (the bytes ``topos train`` writes)."""
        self._inner.save(os.fspath(path))

    def __reduce__(self):
        # Pickled as the model file's bytes (checked again when unpickled), so an LDA in a
        # Pipeline can be pickled, copied to joblib workers and saved with joblib.dump.
        return (_model_from_bytes, (self._inner._to_bytes(), self.summary))

    def __repr__(self) -> str:
        return repr(self._inner)


def _model_from_bytes(data: bytes, summary: Optional[Dict[str, Any]]) -> Model:
    return Model(_topos.Model._from_bytes(data), summary)


def load(path: PathLike) -> Model:
    """Reads a ``.tmod`` model file (written by :meth:`Model.save` or ``topos train``)."""
    return Model(_topos.Model.load(os.fspath(path)))


def train(
    corpus: Corpus,
    k: int = 100,
    iters: int = 200,
    *,
    algo: Optional[str] = None,
    seed: int = 1,
    threads: int = 0,
    alpha: Optional[float] = None,
    beta: float = 0.01,
    partitions: Optional[int] = None,
    device: str = "auto",
    eval_every: int = 10,
    heldout_every: Optional[int] = None,
    callback: Optional[Callable[[TrainLog], Any]] = None,
    output: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    verbose: bool = False,
    optimize_priors: Optional[int] = None,
    optimize_burn_in: int = 50,
    **settings: Union[int, str, None],
) -> Model:
    """Trains an LDA model of ``k`` topics for ``iters`` iterations: ``topos train`` with the
    same arguments (and defaults), giving the same model file for the same corpus and seed.

    ``callback(log)`` is called with a :class:`TrainLog` after every evaluation (every
    ``eval_every`` iterations and at the end); with a callback and held-out documents the
    held-out log-likelihood is computed at every evaluation too (``heldout_every`` overrides).
    An exception raised by the callback, or Ctrl-C, stops the run between iterations and is
    raised here; no model is written. ``output`` also keeps the model file (else it lives in a
    temporary directory), ``log`` appends the JSON lines ``--log`` writes, ``verbose`` prints
    the run's status lines. ``algo``: a sampler of ``topos algos`` (``cgs`` by default), or
    ``"auto"`` to choose by device, K and document length as ``topos train --algo auto`` does
    (``model.summary["algorithm"]`` names the choice). ``device``: ``auto`` (a GPU when one is usable), ``cpu``, ``cuda``,
    ``cuda:N`` or ``cuda:all``. ``optimize_priors=N`` learns an asymmetric α and a symmetric β
    every N iterations after ``optimize_burn_in`` (``topos train --optimize-priors``; CPU only
    for now): the model's ``alpha`` is then one value per topic.

    Sampler settings are keywords, one per ``topos train`` flag that a sampler declares (the
    flag's name with ``_``: ``topos algos`` lists them): ``ezlda_g`` (``algo="ezlda"`` only, 1 to
    16, default 2): the bound depth g of ``--ezlda-g``, a speed knob (the same model for every
    g; the GPU kernel implements g = 2). ``mh_steps`` (``algo="mh"`` only, 1 to 64, default 4 on
    the GPU, 2 on the CPU): proposal pairs per token and iteration (``--mh-steps``), which
    change the model and are recorded in it. ``counters`` (``algo="mfm"`` only): ``"exact"``
    (the default), ``"approx8"`` or ``"approx4"``, the width of Mean-for-Mode's counts
    (``--counters``), recorded in the model. ``own_draw`` (``algo="mfm"`` only):
    ``"balanced"`` (the default: collapsed Gibbs's conditional in expectation over where the
    token's own earlier draw was, out of its document's and its word's counts, that posterior
    balanced over the document's tokens where its counts are small: ``cgs``'s model),
    ``"removed"`` (the same, each token's posterior alone), ``"document"`` (out of the
    document's counts only) or ``"kept"`` (the paper's conditional, ``--own-draw``), recorded in
    the model. A setting given for another sampler, or a bad
    value, raises ``ValueError``; an unknown keyword ``TypeError``.
    """
    if not isinstance(corpus, Corpus):
        raise ValueError(f"corpus must be a topos.Corpus, got {type(corpus).__name__}")
    k, iters, seed, threads, eval_every, optimize_burn_in = (
        _whole(n, v)
        for n, v in [
            ("k", k),
            ("iters", iters),
            ("seed", seed),
            ("threads", threads),
            ("eval_every", eval_every),
            ("optimize_burn_in", optimize_burn_in),
        ]
    )
    heldout_every = _whole("heldout_every", heldout_every, optional=True)
    partitions = _whole("partitions", partitions, optional=True)
    optimize_priors = _whole("optimize_priors", optimize_priors, optional=True)
    if heldout_every is None and callback is not None and corpus.num_heldout > 0:
        heldout_every = eval_every
    cb = None if callback is None else (lambda d: callback(TrainLog(**d)))
    info = (lambda msg: print(msg, flush=True)) if verbose else None
    inner, summary, _ = _topos.train(
        corpus._inner,
        int(k),
        int(iters),
        algo=algo,
        seed=int(seed),
        threads=int(threads),
        alpha=alpha,
        beta=float(beta),
        partitions=partitions,
        device=device,
        eval_every=int(eval_every),
        heldout_every=heldout_every,
        output=None if output is None else os.fspath(output),
        log=None if log is None else os.fspath(log),
        doc_topics=False,
        callback=cb,
        info=info,
        optimize_priors=None if optimize_priors is None else int(optimize_priors),
        optimize_burn_in=int(optimize_burn_in),
        **settings,
    )
    return Model(inner, json.loads(summary))


def knn(
    X: Any,
    k: int = 10,
    metric: str = "jensen-shannon",
    *,
    queries: Any = None,
    p: Optional[float] = None,
    include_self: bool = False,
    threads: int = 0,
    batch: int = 1024,
) -> Tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``X`` to each row of ``queries`` (default: each row of ``X``,
    not counting itself unless ``include_self``), by one of the 15 metrics of ``topos knn``
    (:data:`METRICS`; ``minkowski`` takes ``p``), on the CPU. Returns ``(distances, indices)``,
    both (n_queries, k), nearest first (for ``dot-product`` the distances are dot products,
    largest first); a query row with no value gets indices -1 and distances NaN.
    """
    indptr, indices, values, _, n_cols = _matrix.values(X)
    q: Tuple[Any, Any, Any] = (None, None, None)
    if queries is not None:
        qi, qj, qv, _, q_cols = _matrix.values(queries, "queries")
        if q_cols != n_cols:
            raise ValueError(f"queries have {q_cols} columns but X has {n_cols}")
        q = (qi, qj, qv)
    distances, neighbours = _topos.knn(
        indptr,
        indices,
        values,
        n_cols,
        *q,
        k=int(k),
        metric_name=metric,
        p=p,
        include_self=bool(include_self),
        threads=int(threads),
        batch=int(batch),
    )
    # Scores that rank nothing are said, as `topos knn` says them (its refusal of KL divergence
    # is for bag-of-words rows only: on smoothed rows, such as topic mixtures, KL is finite).
    undefined = int(np.count_nonzero(~np.isfinite(distances) & (neighbours >= 0)))
    if undefined:
        why = {
            "kl-divergence": "KL divergence is infinite where a query has a word the other row lacks; use jensen-shannon or hellinger on sparse rows",
            "correlation": "correlation is undefined when a row's values are all equal; use cosine for such rows",
        }.get(metric, "the metric is not finite for those pairs of rows")
        warnings.warn(f"{undefined} neighbour distances are not finite: {why}", RuntimeWarning, stacklevel=2)
    return distances, neighbours


def _heldout_args(X: Any, n_words: int) -> Tuple[Any, Any, Any, Any]:
    """(corpus, indptr, indices, counts) for the Rust evaluator: a corpus or count rows."""
    if isinstance(X, Corpus):
        if X.num_words != n_words:
            raise ValueError(f"the corpus has {X.num_words} words but the model has {n_words}")
        return (X._inner, None, None, None)
    indptr, indices, data, _, n_cols = _matrix.counts(X)
    if n_cols != n_words:
        raise ValueError(f"X has {n_cols} columns but the model has {n_words} words")
    return (None, indptr, indices, data)


def heldout_log_likelihood(
    topic_word: Any,
    X: Union[Corpus, Any],
    alpha: float,
    *,
    sweeps: int = 50,
    burn_in: int = 10,
    seed: int = 1,
    threads: int = 0,
) -> Dict[str, Any]:
    """Held-out log-likelihood per token under any topic-word matrix (K, V) (rows are
    normalized to sum to 1, so scikit-learn's ``components_`` and tomotopy's topic-word
    distributions both do), by ``topos eval``'s document completion with document-topic prior
    ``alpha``: scores other systems' topics with Topos's evaluator. ``X`` is a :class:`Corpus`
    (its held-out documents) or a count matrix, as in :meth:`Model.heldout_log_likelihood`.
    """
    tw = np.asarray(topic_word, dtype=np.float64)
    if tw.ndim != 2:
        raise ValueError(f"topic_word must be (K, V), got {tw.ndim} dimensions")
    if not np.all(np.isfinite(tw)) or tw.min() < 0:
        raise ValueError("topic_word must hold finite non-negative values")
    tw = np.ascontiguousarray(tw / tw.sum(axis=1, keepdims=True))
    args = _heldout_args(X, tw.shape[1])
    return _topos._heldout_topic_word(tw, float(alpha), *args, sweeps, burn_in, seed, threads)


from .sklearn import LDA  # noqa: E402  (needs the names above)
