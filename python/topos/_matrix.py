"""Count matrices in: scipy.sparse or NumPy arrays checked and put in canonical CSR form.

Every check here raises ValueError (TypeError only for something that is not a matrix at all)
before the Rust side sees the data, which reads the three CSR arrays in place.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import scipy.sparse as sp

Csr = Tuple[np.ndarray, np.ndarray, np.ndarray, int, int]


def as_csr(X: Any, what: str = "X") -> sp.csr_matrix:
    """X as a canonical scipy CSR matrix (sorted indices, duplicates summed), not yet checked."""
    if sp.issparse(X):
        m = X.tocsr()
    else:
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"{what} must be a 2-d matrix (documents x words), got {arr.ndim} dimensions")
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{what} must hold numbers, got dtype {arr.dtype}")
        m = sp.csr_matrix(arr)
    if m.dtype.kind not in "biuf":
        raise ValueError(f"{what} must hold numbers, got dtype {m.dtype}")
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    return m


def counts(X: Any, what: str = "X", allow_empty: bool = False) -> Csr:
    """(indptr int64, indices int32, counts int64, n_rows, n_cols) of a count matrix.

    Counts must be finite, non-negative whole numbers (bool and integer dtypes, or floats that
    hold whole numbers, as CountVectorizer's output after astype(float)).
    """
    m = as_csr(X, what)
    n_rows, n_cols = m.shape
    if not allow_empty:
        if n_rows == 0 or n_cols == 0:
            raise ValueError(f"{what} is empty ({n_rows} x {n_cols}): give at least one document and one word")
        if m.nnz == 0 or not np.any(m.data):
            raise ValueError(f"{what} has no non-zero count: every document is empty")
    data = m.data
    if data.dtype.kind == "f":
        if not np.all(np.isfinite(data)):
            raise ValueError(f"{what} has a count that is not finite (NaN or infinity)")
        if np.any(data != np.floor(data)):
            raise ValueError(f"{what} must hold whole counts (LDA counts words); got fractional values such as {data[data != np.floor(data)][0]!r}: give counts, not TF-IDF or normalized rows")
    if data.size and data.min() < 0:
        raise ValueError(f"{what} has a negative count ({data.min()!r}): counts must be non-negative")
    if data.size and data.max() > np.iinfo(np.uint32).max:
        raise ValueError(f"{what} has a count above {np.iinfo(np.uint32).max}")
    if n_cols > np.iinfo(np.int32).max:
        raise ValueError(f"{what} has too many columns ({n_cols})")
    return (
        np.ascontiguousarray(m.indptr, dtype=np.int64),
        np.ascontiguousarray(m.indices, dtype=np.int32),
        np.ascontiguousarray(data, dtype=np.int64),
        n_rows,
        n_cols,
    )


def values(X: Any, what: str = "X") -> Tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """(indptr int64, indices int32, values float32, n_rows, n_cols) of any numeric matrix (k-NN)."""
    m = as_csr(X, what)
    n_rows, n_cols = m.shape
    if n_rows == 0 or n_cols == 0:
        raise ValueError(f"{what} is empty ({n_rows} x {n_cols})")
    return (
        np.ascontiguousarray(m.indptr, dtype=np.int64),
        np.ascontiguousarray(m.indices, dtype=np.int32),
        np.ascontiguousarray(m.data, dtype=np.float32),
        n_rows,
        n_cols,
    )


def to_scipy(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_cols: int) -> sp.csr_matrix:
    """A scipy CSR matrix over the arrays (no copy)."""
    return sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_cols))
