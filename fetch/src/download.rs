//! Downloading a catalog entry: each file from the first base URL that serves it (or from
//! `$TCHBOOK_DATA_MIRROR`, a base URL holding the same file names), checked against its size,
//! SHA-256 and MD5 while it streams to a `.part` file that is renamed only when all three match,
//! so a loader never finds half a download or a file of someone else's; a server that sends more
//! than the file's size is cut off there. CIFAR-10's archive is then unpacked in place.
//!
//! HTTPS trusts the platform's root certificates (`rustls-platform-verifier`: on Linux the
//! system's CA bundle, where a corporate proxy's certificate is installed), and the usual proxy
//! variables (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`) are followed.

use crate::{Expected, KnownDataset, STANDIN_MARKER, is_standin_dir};
use md5::Md5;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Told how a download goes: the prelude draws a progress bar (and stops at an interrupt by
/// panicking in [`Observer::bytes`]), `tchbook download` prints to stderr.
pub trait Observer {
    /// A file starts downloading; `total` is its size when the server says.
    fn start(&mut self, file: &str, total: Option<u64>);
    /// `n` more bytes arrived.
    fn bytes(&mut self, n: usize);
    /// The file is complete (or failed).
    fn finish(&mut self);
}

/// An observer that shows nothing.
impl Observer for () {
    fn start(&mut self, _file: &str, _total: Option<u64>) {}
    fn bytes(&mut self, _n: usize) {}
    fn finish(&mut self) {}
}

/// Why a data set could not be fetched; each names the file or URL and what went wrong.
#[derive(Debug)]
pub enum FetchError {
    /// A directory or file could not be created or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// No base URL served a file with the right checksum. `errors` has one `url: problem` per
    /// URL tried; `dir` is where the real files belong.
    Unreachable {
        /// The data set.
        set: KnownDataset,
        /// Where the real files belong.
        dir: PathBuf,
        /// One `url: problem` per URL tried.
        errors: Vec<String>,
    },
    /// The downloaded archive could not be unpacked.
    Extract {
        /// The archive.
        path: PathBuf,
        /// What was wrong.
        problem: String,
    },
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            FetchError::Unreachable { set, dir, errors } => write!(
                f,
                "could not download {} ({}). Offline? Copy the real files into {}",
                set.title(),
                errors.join("; "),
                dir.display()
            ),
            FetchError::Extract { path, problem } => {
                write!(f, "{}: could not extract: {problem}", path.display())
            }
        }
    }
}

impl std::error::Error for FetchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FetchError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError + '_ {
    move |source| FetchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The HTTP agent every download uses: the platform's root certificates, the environment's
/// proxy.
fn agent() -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig};
    ureq::Agent::config_builder()
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .build()
        .new_agent()
}

/// Downloads `url` to `dest`, checking that it is exactly `expected.size` bytes with
/// `expected`'s SHA-256 and MD5. The bytes go to `dest` with the extension `.part` first; on
/// any mismatch that file is removed and nothing is left at `dest`. A server announcing a
/// larger file is refused before its body is read, and one sending more than announced is cut
/// off at `expected.size + 1` bytes. The error is one line: the HTTP or I/O problem, the sizes,
/// or the sums.
///
/// ```no_run
/// use tchbook_fetch::{Expected, download};
/// let dest = std::path::Path::new("data/t10k-labels-idx1-ubyte.gz");
/// let expected = Expected {
///     size: 4_542,
///     sha256: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
///     md5: "ec29112dd5afa0611ce80d1b7f02629c",
/// };
/// download(
///     "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-labels-idx1-ubyte.gz",
///     dest,
///     &expected,
///     &mut (),
/// )
/// .unwrap();
/// ```
pub fn download(
    url: &str,
    dest: &Path,
    expected: &Expected<'_>,
    observer: &mut dyn Observer,
) -> Result<(), String> {
    let mut response = agent().get(url).call().map_err(|e| e.to_string())?;
    let total = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(announced) = total.filter(|&n| n > expected.size) {
        return Err(format!(
            "the server announced {announced} bytes; the file is {} bytes (a different file?)",
            expected.size
        ));
    }
    let tmp = dest.with_extension("part");
    let mut file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    // One byte past the size is enough to know the file is not the one expected.
    let mut reader = response
        .body_mut()
        .as_reader()
        .take(expected.size.saturating_add(1));
    let mut sha256 = Sha256::new();
    let mut md5 = Md5::new();
    let mut received = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    observer.start(&name, total);
    let streamed = (|| loop {
        let n = reader.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(());
        }
        received += n as u64;
        sha256.update(&buf[..n]);
        md5.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        observer.bytes(n);
    })();
    observer.finish();
    let problem = match streamed {
        Err(e) => Some(e),
        Ok(()) if received != expected.size => Some(format!(
            "{} bytes arrived{}; the file is {} bytes (cut off, or a different file)",
            received,
            if received > expected.size {
                " before the download was stopped"
            } else {
                ""
            },
            expected.size
        )),
        Ok(()) => mismatch("SHA-256", &hex(&sha256.finalize()), expected.sha256)
            .or_else(|| mismatch("MD5", &hex(&md5.finalize()), expected.md5)),
    };
    if let Some(problem) = problem {
        let _ = std::fs::remove_file(&tmp);
        return Err(problem);
    }
    std::fs::rename(&tmp, dest).map_err(|e| format!("{}: {e}", dest.display()))
}

/// The sentence for a sum that is not the expected one.
fn mismatch(kind: &str, got: &str, expected: &str) -> Option<String> {
    (got != expected).then(|| {
        format!(
            "checksum mismatch: {kind} {got}, expected {expected} (corrupt or changed download)"
        )
    })
}

/// Downloads `set` into `root` (torchvision's layout) and returns its directory. Does nothing
/// when the real files are there; replaces stand-ins. Each file comes from the first of the
/// catalog's base URLs that serves it whole (size, SHA-256, MD5), or only from `$TCHBOOK_DATA_MIRROR`
/// when that is set (a local mirror or proxy holding the same file names).
///
/// ```no_run
/// use tchbook_fetch::{KnownDataset, fetch};
/// let dir = fetch(KnownDataset::Mnist, "data".as_ref(), &mut ()).unwrap();
/// assert!(dir.ends_with("MNIST/raw"));
/// ```
pub fn fetch(
    set: KnownDataset,
    root: &Path,
    observer: &mut dyn Observer,
) -> Result<PathBuf, FetchError> {
    let dir = set.dir(root);
    if set.is_present(root) && !is_standin_dir(&dir) {
        return Ok(dir);
    }
    // CIFAR-10's archive unpacks into its own directory under the root.
    let download_dir = if set == KnownDataset::Cifar10 {
        root.to_path_buf()
    } else {
        dir.clone()
    };
    std::fs::create_dir_all(&download_dir).map_err(io_error(&download_dir))?;
    let custom = std::env::var(tchbook_wire::env::DATA_MIRROR).ok();
    for remote in set.remotes() {
        let dest = download_dir.join(remote.file);
        let mirrors: Vec<&str> = match &custom {
            Some(m) => vec![m.as_str()],
            None => remote.mirrors.to_vec(),
        };
        let mut errors = Vec::new();
        let ok = mirrors.iter().any(|mirror| {
            let url = format!("{mirror}{}", remote.file);
            match download(&url, &dest, &remote.expected, observer) {
                Ok(()) => true,
                Err(e) => {
                    errors.push(format!("{url}: {e}"));
                    false
                }
            }
        });
        if !ok {
            return Err(FetchError::Unreachable { set, dir, errors });
        }
        if set == KnownDataset::Cifar10 {
            // A stand-in directory would otherwise keep its marker next to the real files.
            let _ = std::fs::remove_dir_all(&dir);
            extract(&dest, root)?;
        }
    }
    let _ = std::fs::remove_file(dir.join(STANDIN_MARKER));
    Ok(dir)
}

fn extract(archive: &Path, root: &Path) -> Result<(), FetchError> {
    let file = std::fs::File::open(archive).map_err(io_error(archive))?;
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(root)
        .map_err(|e| FetchError::Extract {
            path: archive.to_path_buf(),
            problem: e.to_string(),
        })
}
