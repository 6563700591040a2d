//! Why data could not be loaded ([`DataError`]), and the raw reading the formats share.

use std::path::{Path, PathBuf};
use tch::{Kind, Tensor};

/// Why data could not be loaded: always names the file and what was wrong.
///
/// ```
/// use tchbook_prelude::data::DataError;
/// let e = DataError::Format { path: "data_batch_1.bin".into(), problem: "truncated".into() };
/// assert_eq!(e.to_string(), "data_batch_1.bin: truncated");
/// ```
#[derive(Debug)]
pub enum DataError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file is not in the expected format (truncated, corrupt, wrong magic number, ...).
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        problem: String,
    },
    /// The files are not there; the message says how to get them.
    Missing {
        /// Where they were looked for.
        path: PathBuf,
        /// What to do next.
        hint: String,
    },
    /// A download failed (offline, server error, checksum mismatch).
    Download(String),
    /// Bad arguments.
    Invalid(String),
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DataError::Format { path, problem } => write!(f, "{}: {problem}", path.display()),
            DataError::Missing { path, hint } => write!(f, "{} not found: {hint}", path.display()),
            DataError::Download(m) | DataError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> DataError {
    DataError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn format_error(path: &Path, problem: impl Into<String>) -> DataError {
    DataError::Format {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// Reads a whole file, transparently gunzipping `*.gz`.
pub(crate) fn read_maybe_gz(path: &Path) -> Result<Vec<u8>, DataError> {
    let raw = std::fs::read(path).map_err(|e| io_error(path, e))?;
    if path.extension().and_then(|e| e.to_str()) == Some("gz") {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| format_error(path, format!("not a valid gzip file ({e})")))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Uint8 images [N, C, H, W] from raw bytes.
pub(crate) fn images_u8(bytes: &[u8], n: i64, c: i64, h: i64, w: i64) -> Tensor {
    Tensor::from_slice(bytes).view([n, c, h, w])
}

/// Int64 labels from raw bytes.
pub(crate) fn labels_i64(bytes: &[u8]) -> Tensor {
    Tensor::from_slice(bytes).to_kind(Kind::Int64)
}
