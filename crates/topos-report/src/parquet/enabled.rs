//! Parquet export (the `parquet` feature): the same tables as the text formats, one row group per
//! 65,536 rows, uncompressed, written with the `parquet` crate's column writers (no Arrow).
//! Integers are INT64, numbers DOUBLE, words UTF-8 strings; a wide table has a column per topic
//! or word, named as in CSV.

use crate::export::{Cell, ExportError, Kind};
use parquet::basic::{ConvertedType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;
use topos_io::AtomicFile;

pub const AVAILABLE: bool = true;
pub const MISSING: &str = "";

const ROWS_PER_GROUP: usize = 65_536;

enum Column {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Text(Vec<ByteArray>),
}

pub struct ParquetSink<'p> {
    writer: SerializedFileWriter<AtomicFile>,
    columns: Vec<Column>,
    rows: usize,
    path: &'p Path,
}

fn err(path: &Path, e: impl std::fmt::Display) -> ExportError {
    ExportError::Invalid(format!("cannot write {}: {e}", path.display()))
}

impl<'p> ParquetSink<'p> {
    pub fn create(path: &'p Path, columns: Vec<(String, Kind)>) -> Result<Self, ExportError> {
        let fields = columns
            .iter()
            .map(|(name, kind)| {
                let b = match kind {
                    Kind::Int => Type::primitive_type_builder(name, PhysicalType::INT64),
                    Kind::Float => Type::primitive_type_builder(name, PhysicalType::DOUBLE),
                    Kind::Text => Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                        .with_converted_type(ConvertedType::UTF8),
                };
                b.with_repetition(Repetition::REQUIRED)
                    .build()
                    .map(Arc::new)
                    .map_err(|e| err(path, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(|e| err(path, e))?;
        let file = AtomicFile::create(path)?;
        let props = Arc::new(WriterProperties::builder().build());
        let writer =
            SerializedFileWriter::new(file, Arc::new(schema), props).map_err(|e| err(path, e))?;
        let columns = columns
            .iter()
            .map(|(_, kind)| match kind {
                Kind::Int => Column::Int(Vec::new()),
                Kind::Float => Column::Float(Vec::new()),
                Kind::Text => Column::Text(Vec::new()),
            })
            .collect();
        Ok(ParquetSink {
            writer,
            columns,
            rows: 0,
            path,
        })
    }

    pub fn row(&mut self, cells: &[Cell]) -> Result<(), ExportError> {
        for (col, cell) in self.columns.iter_mut().zip(cells) {
            match (col, cell) {
                (Column::Int(v), Cell::Int(x)) => v.push(*x as i64),
                (Column::Float(v), Cell::Float(x)) => v.push(*x),
                (Column::Text(v), Cell::Text(s)) => v.push(ByteArray::from(*s)),
                _ => unreachable!("cells follow the columns"),
            }
        }
        self.end_row()
    }

    pub fn wide(&mut self, keys: &[u64], values: &[f64]) -> Result<(), ExportError> {
        for (col, &key) in self.columns.iter_mut().zip(keys) {
            if let Column::Int(v) = col {
                v.push(key as i64);
            }
        }
        for (col, &x) in self.columns[keys.len()..].iter_mut().zip(values) {
            if let Column::Float(v) = col {
                v.push(x);
            }
        }
        self.end_row()
    }

    fn end_row(&mut self) -> Result<(), ExportError> {
        self.rows += 1;
        if self.rows == ROWS_PER_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 {
            return Ok(());
        }
        let path = self.path;
        let mut group = self.writer.next_row_group().map_err(|e| err(path, e))?;
        for col in self.columns.iter_mut() {
            let mut w = group
                .next_column()
                .map_err(|e| err(path, e))?
                .expect("one column writer per column");
            match col {
                Column::Int(v) => {
                    w.typed::<Int64Type>()
                        .write_batch(v, None, None)
                        .map_err(|e| err(path, e))?;
                    v.clear();
                }
                Column::Float(v) => {
                    w.typed::<DoubleType>()
                        .write_batch(v, None, None)
                        .map_err(|e| err(path, e))?;
                    v.clear();
                }
                Column::Text(v) => {
                    w.typed::<ByteArrayType>()
                        .write_batch(v, None, None)
                        .map_err(|e| err(path, e))?;
                    v.clear();
                }
            }
            w.close().map_err(|e| err(path, e))?;
        }
        group.close().map_err(|e| err(path, e))?;
        self.rows = 0;
        Ok(())
    }

    pub fn finish(mut self) -> Result<(), ExportError> {
        self.flush()?;
        let path = self.path;
        let file = self.writer.into_inner().map_err(|e| err(path, e))?;
        file.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::export::{export, Format, Layout, What};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use topos_corpus::Vocabulary;
    use topos_model::{DocTopics, Hyperparameters, Provenance, TopicModel};

    #[test]
    fn tables_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let vocab = Vocabulary::new(["a,b", "q\"x", "c"].map(String::from).into());
        let hyper = Hyperparameters::new(2, Some(0.5), Some(0.1)).unwrap();
        let m =
            TopicModel::from_counts(vocab, hyper, vec![3, 0, 1, 2, 0, 4], Provenance::default());
        let mut a = DocTopics::new(2);
        a.push_dense(&[2, 1]);
        a.push_dense(&[0, 3]);
        let p = dir.path().join("theta.parquet");
        export(
            &m,
            Some(crate::export::DocRows {
                counts: &a,
                records: Some(&[4, 9]),
            }),
            What::DocTopics,
            Format::Parquet,
            Layout::Wide,
            10,
            &p,
        )
        .unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        let rows: Vec<_> = r.get_row_iter(None).unwrap().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        let cols: Vec<(String, Field)> = rows[0]
            .get_column_iter()
            .map(|(n, f)| (n.clone(), f.clone()))
            .collect();
        assert_eq!(cols[0], ("doc".to_string(), Field::Long(0)));
        assert_eq!(cols[1], ("record".to_string(), Field::Long(4)));
        assert_eq!(cols[2], ("topic_0".to_string(), Field::Double(2.5 / 4.0)));
        let p = dir.path().join("keys.parquet");
        export(
            &m,
            None,
            What::TopicKeys,
            Format::Parquet,
            Layout::Long,
            10,
            &p,
        )
        .unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        let rows: Vec<_> = r.get_row_iter(None).unwrap().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 4);
        let word = rows[0].get_column_iter().nth(2).unwrap().1.clone();
        assert_eq!(word, Field::Str("a,b".into()));
        let p = dir.path().join("long.parquet");
        export(
            &m,
            Some(crate::export::DocRows::new(&a)),
            What::DocTopics,
            Format::Parquet,
            Layout::Long,
            10,
            &p,
        )
        .unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        assert_eq!(r.get_row_iter(None).unwrap().count(), 3);
        let p = dir.path().join("phi.parquet");
        export(&m, None, What::Phi, Format::Parquet, Layout::Long, 10, &p).unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        assert_eq!(r.get_row_iter(None).unwrap().count(), 4);
        // TOPOS_PARQUET_KEEP=DIR keeps the files, for reading them with pyarrow (docs/report.md).
        if let Some(keep) = std::env::var_os("TOPOS_PARQUET_KEEP") {
            for name in [
                "theta.parquet",
                "keys.parquet",
                "long.parquet",
                "phi.parquet",
            ] {
                std::fs::copy(
                    dir.path().join(name),
                    std::path::Path::new(&keep).join(name),
                )
                .unwrap();
            }
        }
    }
}
