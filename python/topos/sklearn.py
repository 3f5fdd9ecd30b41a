"""``topos.LDA``: scikit-learn's estimator conventions over a Topos training run.

It subclasses scikit-learn's ``BaseEstimator`` and ``TransformerMixin`` when scikit-learn is
installed (so ``clone``, ``Pipeline``, grid search and ``repr`` work as for any estimator), and
otherwise provides ``get_params``/``set_params`` itself; Topos does not require scikit-learn.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Dict, Optional

import numpy as np

from . import _matrix, _topos

try:  # scikit-learn is optional: only its base classes are used.
    from sklearn.base import BaseEstimator, TransformerMixin
except ImportError:  # pragma: no cover - exercised only without scikit-learn

    class BaseEstimator:  # type: ignore[no-redef]
        """get_params/set_params as scikit-learn defines them: the __init__ arguments."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep: bool = True) -> Dict[str, Any]:
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params: Any):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"invalid parameter {key!r} for estimator {type(self).__name__}; valid parameters are {valid}")
                setattr(self, key, value)
            return self

        def __repr__(self) -> str:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:  # type: ignore[no-redef]
        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)


class NotFittedError(ValueError, AttributeError):
    """Raised when an unfitted LDA is used (scikit-learn's exception when it is installed)."""


try:
    from sklearn.exceptions import NotFittedError  # type: ignore[no-redef]  # noqa: F811
except ImportError:  # pragma: no cover
    pass


class LDA(TransformerMixin, BaseEstimator):
    """Latent Dirichlet Allocation trained by Topos, with scikit-learn's conventions.

    Parameters
    ----------
    n_components : int, default 10
        Number of topics K (2 to 65,535).
    algo : str, default "cgs"
        Sampler (``topos.SAMPLERS``): ``cgs`` (sparse collapsed Gibbs, exact) or ``esca``.
    device : str, default "auto"
        ``auto`` (a GPU when one is usable, else the CPU), ``cpu``, ``cuda``, ``cuda:N``.
    random_state : int, numpy RandomState or None
        The seed of Topos's counter-based random numbers: an int is the seed itself (so
        ``random_state=1`` is ``topos train --seed 1``); None draws one from NumPy's global
        generator, as scikit-learn does.
    max_iter : int, default 200
        Gibbs iterations.
    doc_topic_prior : float or None
        α (default 50/K, as ``topos train``).
    topic_word_prior : float or None
        β (default 0.01).
    n_jobs : int or None
        Threads (None or -1: all cores). The model does not depend on it.
    partitions : int or None
        Document partitions of a CPU run (``cgs`` results depend on it; default as the CLI).
    evaluate_every : int, default 0
        Training log-likelihood every N iterations, reported with ``verbose`` (0: at the end).
    verbose : int, default 0
        Print the run's status and evaluation lines.

    Attributes
    ----------
    components_ : ndarray (K, V)
        Word-topic counts plus β (pseudo-counts, as scikit-learn's): normalize the rows for φ.
    model_ : topos.Model
        The trained model (``save`` it for ``topos topics``/``infer``/``eval``).
    summary_ : dict
        What the run reported (``topos train --json``).
    n_iter_ : int
    n_features_in_ : int
    """

    def __init__(
        self,
        n_components: int = 10,
        *,
        algo: str = "cgs",
        device: str = "auto",
        random_state: Any = None,
        max_iter: int = 200,
        doc_topic_prior: Optional[float] = None,
        topic_word_prior: Optional[float] = None,
        n_jobs: Optional[int] = None,
        partitions: Optional[int] = None,
        evaluate_every: int = 0,
        verbose: int = 0,
    ) -> None:
        self.n_components = n_components
        self.algo = algo
        self.device = device
        self.random_state = random_state
        self.max_iter = max_iter
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.n_jobs = n_jobs
        self.partitions = partitions
        self.evaluate_every = evaluate_every
        self.verbose = verbose

    def _seed(self) -> int:
        rs = self.random_state
        if rs is None:
            return int(np.random.randint(0, 2**31 - 1))
        if isinstance(rs, (int, np.integer)) and not isinstance(rs, bool):
            if rs < 0:
                raise ValueError(f"random_state must be a non-negative int, got {rs}")
            return int(rs)
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(0, 2**31 - 1))
        raise ValueError(f"random_state must be None, an int or a numpy RandomState, got {rs!r}")

    def _threads(self) -> int:
        if self.n_jobs is None or self.n_jobs == -1:
            return 0
        if self.n_jobs < 1:
            raise ValueError(f"n_jobs must be a positive number of threads, -1 or None, got {self.n_jobs}")
        return int(self.n_jobs)

    def _fit(self, X: Any) -> np.ndarray:
        """Trains on the rows of X; returns θ of every row (the prior's uniform mixture for an
        empty row)."""
        if not isinstance(self.n_components, (int, np.integer)) or isinstance(self.n_components, bool):
            raise ValueError(f"n_components must be an int, got {self.n_components!r}")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 0:
            raise ValueError(f"max_iter must be a non-negative int, got {self.max_iter!r}")
        indptr, indices, data, n_rows, n_cols = _matrix.counts(X)
        words = [str(i) for i in range(n_cols)]
        corpus, rows, _ = _topos.Corpus._from_counts(indptr, indices, data, n_cols, words)
        beta = 0.01 if self.topic_word_prior is None else float(self.topic_word_prior)
        info = (lambda msg: print(msg, flush=True)) if self.verbose else None
        callback = None
        if self.verbose:
            def callback(d: Dict[str, Any]) -> None:
                print(f"iteration {d['iteration']}: training log-likelihood per token {d['train_ll']}", flush=True)
        model, summary, theta = _topos.train(
            corpus,
            int(self.n_components),
            int(self.max_iter),
            algo=self.algo,
            seed=self._seed(),
            threads=self._threads(),
            alpha=None if self.doc_topic_prior is None else float(self.doc_topic_prior),
            beta=beta,
            partitions=self.partitions,
            device=self.device,
            eval_every=int(self.evaluate_every),
            doc_topics=True,
            callback=callback,
            info=info,
        )
        from . import Model

        self.model_ = Model(model, json.loads(summary))
        self.summary_ = self.model_.summary
        self.components_ = self.model_.word_topic().T.astype(np.float64) + self.model_.beta
        self.n_iter_ = int(self.max_iter)
        self.n_features_in_ = n_cols
        k = int(self.n_components)
        full = np.full((n_rows, k), 1.0 / k)
        full[rows] = theta
        return full

    def fit(self, X: Any, y: Any = None) -> "LDA":
        """Trains on the count matrix X (documents x words; scipy.sparse or dense)."""
        self._fit(X)
        return self

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Trains on X and returns θ (n_docs, K) of its rows from the run's final topic
        assignments, (A_dk + α) / (n_d + Kα); rows sum to 1. (``transform(X)`` would instead
        fold each row in again with the topics fixed.)"""
        return self._fit(X)

    def _check_fitted(self, X: Any):
        if not hasattr(self, "model_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first")
        counts = _matrix.counts(X, allow_empty=True)
        if counts[4] != self.n_features_in_:
            raise ValueError(f"X has {counts[4]} features, but {type(self).__name__} was fitted with {self.n_features_in_}")
        return counts

    def transform(self, X: Any) -> np.ndarray:
        """θ (n_docs, K) of new documents by Gibbs fold-in with the topics fixed (``topos
        infer``); rows sum to 1, an empty row gets the uniform mixture."""
        indptr, indices, data, _, _ = self._check_fitted(X)
        return self.model_._inner._infer_counts(indptr, indices, data, threads=self._threads())

    def score(self, X: Any, y: Any = None) -> float:
        """Held-out log-likelihood per token of X by document completion (``topos eval``'s
        evaluator: the first half of each row's tokens, in a fixed pseudo-random order, folded
        in with the topics fixed, the second half scored). Higher is better."""
        indptr, indices, data, _, _ = self._check_fitted(X)
        r = self.model_._inner._heldout(None, indptr, indices, data, threads=self._threads())
        return float(r["heldout_ll"])

    def perplexity(self, X: Any) -> float:
        """exp(−score(X))."""
        return float(np.exp(-self.score(X)))
