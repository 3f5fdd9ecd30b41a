//! Write-to-temporary-then-rename.

use crate::FormatError;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written under a temporary name in the destination's directory. [`AtomicFile::commit`]
/// flushes, syncs and renames it to the real name; dropping it uncommitted deletes the temporary,
/// so an error or a crash never leaves a partial file under the real name.
pub struct AtomicFile {
    tmp: Option<BufWriter<tempfile::NamedTempFile>>,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> Result<Self, FormatError> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| FormatError::io(path, e))?;
        // tempfile creates 0600 files; a model or corpus is an ordinary file (0644 before umask).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
        }
        Ok(Self {
            tmp: Some(BufWriter::with_capacity(1 << 20, tmp)),
            path: path.to_path_buf(),
        })
    }

    /// Appends bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), FormatError> {
        self.tmp
            .as_mut()
            .expect("write after commit")
            .write_all(bytes)
            .map_err(|e| FormatError::io(&self.path, e))
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the file visible under its real name.
    pub fn commit(mut self) -> Result<(), FormatError> {
        let w = self.tmp.take().expect("commit twice");
        let tmp = w
            .into_inner()
            .map_err(|e| FormatError::io(&self.path, e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| FormatError::io(&self.path, e))?;
        tmp.persist(&self.path)
            .map_err(|e| FormatError::io(&self.path, e.error))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.as_mut().expect("write after commit").write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.as_mut().expect("write after commit").flush()
    }
}
