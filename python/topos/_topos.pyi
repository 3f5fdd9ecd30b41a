"""Type hints of the compiled module topos._topos (python/src/). Use the `topos` package: it
checks arguments and converts matrices before calling these."""

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

__version__: str
GPU_SUPPORT: bool
SAMPLERS: List[str]
METRICS: List[str]

class Corpus:
    @staticmethod
    def from_texts(
        texts: List[str],
        *,
        holdout: float = 0.0,
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
    ) -> Corpus: ...
    @staticmethod
    def open(path: str) -> Corpus: ...
    @staticmethod
    def _from_counts(
        indptr: np.ndarray,
        indices: np.ndarray,
        counts: np.ndarray,
        n_cols: int,
        words: List[str],
        holdout: float = 0.0,
        seed: int = 0,
    ) -> Tuple[Corpus, np.ndarray, np.ndarray]: ...
    def save(self, path: str) -> None: ...
    def _counts(self, heldout: bool = False) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    @property
    def num_docs(self) -> int: ...
    @property
    def num_heldout(self) -> int: ...
    @property
    def num_tokens(self) -> int: ...
    @property
    def num_words(self) -> int: ...
    @property
    def vocabulary(self) -> List[str]: ...
    @property
    def train_ids(self) -> np.ndarray: ...
    @property
    def heldout_ids(self) -> np.ndarray: ...
    @property
    def tokenizer(self) -> Optional[str]: ...
    @property
    def _report(self) -> Optional[str]: ...
    @property
    def checksum(self) -> str: ...

class Model:
    @staticmethod
    def load(path: str) -> Model: ...
    def save(self, path: str) -> None: ...
    def _to_bytes(self) -> bytes: ...
    @staticmethod
    def _from_bytes(data: bytes) -> Model: ...
    @property
    def num_topics(self) -> int: ...
    @property
    def num_words(self) -> int: ...
    @property
    def alpha(self) -> Union[float, List[float]]: ...
    @property
    def beta(self) -> float: ...
    @property
    def vocabulary(self) -> List[str]: ...
    @property
    def provenance(self) -> Dict[str, Any]: ...
    @property
    def tokenizer(self) -> Optional[str]: ...
    def topics(self, top: int = 10) -> List[List[Tuple[str, float]]]: ...
    def _word_topic(self) -> np.ndarray: ...
    def _infer_texts(
        self, texts: List[str], sweeps: int = 50, burn_in: int = 10, seed: int = 1, threads: int = 0
    ) -> np.ndarray: ...
    def _infer_counts(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        counts: np.ndarray,
        sweeps: int = 50,
        burn_in: int = 10,
        seed: int = 1,
        threads: int = 0,
    ) -> np.ndarray: ...
    def _heldout(
        self,
        corpus: Optional[Corpus] = None,
        indptr: Optional[np.ndarray] = None,
        indices: Optional[np.ndarray] = None,
        counts: Optional[np.ndarray] = None,
        sweeps: int = 50,
        burn_in: int = 10,
        seed: int = 1,
        threads: int = 0,
    ) -> Dict[str, Any]: ...

def train(
    corpus: Corpus,
    k: int,
    iters: int,
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
    output: Optional[str] = None,
    log: Optional[str] = None,
    doc_topics: bool = False,
    callback: Optional[Callable[[Dict[str, Any]], Any]] = None,
    info: Optional[Callable[[str], Any]] = None,
    optimize_priors: Optional[int] = None,
    optimize_burn_in: int = 50,
    **settings: Union[int, str, None],
) -> Tuple[Model, str, Optional[np.ndarray]]: ...
def knn(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    n_cols: int,
    q_indptr: Optional[np.ndarray] = None,
    q_indices: Optional[np.ndarray] = None,
    q_values: Optional[np.ndarray] = None,
    *,
    k: int = 10,
    metric_name: str = "jensen-shannon",
    p: Optional[float] = None,
    include_self: bool = False,
    threads: int = 0,
    batch: int = 1024,
) -> Tuple[np.ndarray, np.ndarray]: ...
def _heldout_topic_word(
    topic_word: np.ndarray,
    alpha: float,
    corpus: Optional[Corpus] = None,
    indptr: Optional[np.ndarray] = None,
    indices: Optional[np.ndarray] = None,
    counts: Optional[np.ndarray] = None,
    sweeps: int = 50,
    burn_in: int = 10,
    seed: int = 1,
    threads: int = 0,
) -> Dict[str, Any]: ...
