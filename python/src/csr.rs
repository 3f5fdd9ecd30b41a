//! scipy.sparse CSR matrices in and out. The Python layer hands over the three arrays of a
//! canonical CSR matrix (`indptr` int64, `indices` int32, `data` int64 counts or float32
//! values) already checked for shape and dtype; they are read in place (`PyReadonlyArray1`
//! borrows NumPy's memory, no copy) and turned into the documents or the distance engine's
//! matrix, with the GIL released.

use crate::errors::value_error;
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use topos_corpus::{Docs, OwnedDocs};
use topos_sampling::{CounterRng, Stream};

/// The three arrays of a CSR matrix, borrowed from NumPy.
pub struct CsrArrays<'py> {
    pub indptr: PyReadonlyArray1<'py, i64>,
    pub indices: PyReadonlyArray1<'py, i32>,
    pub n_cols: usize,
}

/// Borrowed slices of a CSR matrix (what crosses into code run without the GIL).
#[derive(Clone, Copy)]
pub struct CsrSlices<'a> {
    pub indptr: &'a [i64],
    pub indices: &'a [i32],
    pub n_cols: usize,
}

impl<'py> CsrArrays<'py> {
    pub fn slices(&self) -> PyResult<CsrSlices<'_>> {
        let indptr = self
            .indptr
            .as_slice()
            .map_err(|_| value_error("indptr must be contiguous"))?;
        let indices = self
            .indices
            .as_slice()
            .map_err(|_| value_error("indices must be contiguous"))?;
        let s = CsrSlices {
            indptr,
            indices,
            n_cols: self.n_cols,
        };
        s.check()?;
        Ok(s)
    }
}

impl CsrSlices<'_> {
    pub fn n_rows(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    /// The structure the rest relies on: offsets from 0, non-decreasing, ending at nnz; column
    /// indices below the number of columns.
    fn check(&self) -> PyResult<()> {
        if self.indptr.first() != Some(&0) {
            return Err(value_error("indptr must start at 0"));
        }
        if self.indptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(value_error("indptr must be non-decreasing"));
        }
        if *self.indptr.last().unwrap_or(&0) != self.indices.len() as i64 {
            return Err(value_error(
                "indptr must end at the number of stored values",
            ));
        }
        if let Some(&c) = self
            .indices
            .iter()
            .find(|&&c| c < 0 || c as usize >= self.n_cols)
        {
            return Err(value_error(format!(
                "column index {c} is outside the {} columns",
                self.n_cols
            )));
        }
        Ok(())
    }

    fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        self.indptr[r] as usize..self.indptr[r + 1] as usize
    }
}

/// Count rows as documents: row r becomes the word ids of its columns, each repeated as often as
/// its count, in column order. `counts` is beside `indices` and already checked non-negative.
/// Rows in `keep` only (all when `None`), in order.
pub fn rows_to_docs(m: CsrSlices<'_>, counts: &[i64], keep: Option<&[usize]>) -> OwnedDocs {
    let mut docs = OwnedDocs::new();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut push = |r: usize| {
        runs.clear();
        for i in m.row_range(r) {
            if counts[i] > 0 {
                runs.push((m.indices[i] as u32, counts[i] as u32));
            }
        }
        docs.push_runs(runs.iter().copied());
    };
    match keep {
        Some(rows) => rows.iter().for_each(|&r| push(r)),
        None => (0..m.n_rows()).for_each(&mut push),
    }
    docs
}

/// Bag-of-words counts of `docs` as CSR arrays (indptr, indices, counts), columns sorted.
pub fn docs_to_rows(docs: Docs<'_>) -> (Vec<i64>, Vec<i32>, Vec<i64>) {
    let mut indptr = Vec::with_capacity(docs.len() + 1);
    indptr.push(0i64);
    let (mut indices, mut counts) = (Vec::new(), Vec::new());
    let mut ids: Vec<u32> = Vec::new();
    for doc in docs.iter() {
        ids.clear();
        ids.extend_from_slice(doc);
        ids.sort_unstable();
        for run in ids.chunk_by(|a, b| a == b) {
            indices.push(run[0] as i32);
            counts.push(run.len() as i64);
        }
        indptr.push(indices.len() as i64);
    }
    (indptr, indices, counts)
}

/// The distance engine's matrix of `m` with `values` beside its indices.
pub fn to_distance_matrix(
    m: CsrSlices<'_>,
    values: &[f32],
) -> Result<topos_distance::CsrMatrix, topos_distance::DistanceError> {
    topos_distance::CsrMatrix::new(
        m.n_cols,
        m.indptr.iter().map(|&o| o as u64).collect(),
        m.indices.iter().map(|&c| c as u32).collect(),
        values.to_vec(),
    )
}

/// Puts the tokens of every document in a pseudo-random order keyed by (`seed`, document).
///
/// Document completion scores the second half of each document's tokens given the first. A
/// count row has no token order, and the order it is expanded in (by column: alphabetical for
/// CountVectorizer, by frequency for a Topos vocabulary) would put different kinds of words on
/// each side (frequent words observed, rare ones scored); a fixed shuffle gives each half a fair
/// sample, the same for every system scored, every run and every number of threads.
pub fn shuffle_tokens(docs: OwnedDocs, seed: u64) -> OwnedDocs {
    let (offsets, mut tokens) = docs.into_parts();
    for (d, w) in offsets.windows(2).enumerate() {
        let doc = &mut tokens[w[0] as usize..w[1] as usize];
        // Iteration 1 of the split stream: iteration 0 is the corpus's held-out split.
        let mut rng = CounterRng::new(seed, Stream::Split, 1, d as u64);
        for i in (1..doc.len()).rev() {
            let j = rng.below(i as u32 + 1) as usize;
            doc.swap(i, j);
        }
    }
    OwnedDocs::from_parts(offsets, tokens)
}
