//! Getting the real data sets: downloads from their canonical locations with progress and MD5
//! checks ([`fetch`]), and [`locate`]-ing files already on disk, falling back to stand-ins.

use super::transforms::Transform;
use super::{DataError, STANDIN_MARKER, TensorDataset, is_standin_dir};
use crate::display::{Bundle, Render, rich};
use std::path::{Path, PathBuf};

/// The data sets the prelude can fetch, find and stand in for.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(DataSet::FashionMnist.title(), "Fashion-MNIST");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataSet {
    /// CIFAR-10, binary version.
    Cifar10,
    /// MNIST digits (IDX).
    Mnist,
    /// Fashion-MNIST (IDX).
    FashionMnist,
}

struct Remote {
    file: &'static str,
    md5: &'static str,
    mirrors: &'static [&'static str],
}

const MNIST_MIRRORS: &[&str] = &[
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
];
const FASHION_MIRRORS: &[&str] = &["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"];
const CIFAR_MIRRORS: &[&str] = &["https://www.cs.toronto.edu/~kriz/"];

impl DataSet {
    /// The name as shown.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(DataSet::Cifar10.title(), "CIFAR-10");
    /// ```
    pub fn title(self) -> &'static str {
        match self {
            DataSet::Cifar10 => "CIFAR-10",
            DataSet::Mnist => "MNIST",
            DataSet::FashionMnist => "Fashion-MNIST",
        }
    }

    /// Class names in label order.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(DataSet::FashionMnist.classes()[0], "T-shirt/top");
    /// ```
    pub fn classes(self) -> &'static [&'static str] {
        match self {
            DataSet::Cifar10 => &super::Cifar10::CLASSES,
            DataSet::Mnist => &super::Mnist::CLASSES,
            DataSet::FashionMnist => &super::FashionMnist::CLASSES,
        }
    }

    /// Where the files live under `root` (torchvision's layout).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let dir = DataSet::Mnist.dir(std::path::Path::new("data"));
    /// assert_eq!(dir, std::path::Path::new("data/MNIST/raw"));
    /// ```
    pub fn dir(self, root: &Path) -> PathBuf {
        match self {
            DataSet::Cifar10 => root.join("cifar-10-batches-bin"),
            DataSet::Mnist => root.join("MNIST").join("raw"),
            DataSet::FashionMnist => root.join("FashionMNIST").join("raw"),
        }
    }

    /// The files a complete copy has (IDX files may also be `.gz`).
    pub(crate) fn files(self) -> Vec<&'static str> {
        match self {
            DataSet::Cifar10 => vec![
                "data_batch_1.bin",
                "data_batch_2.bin",
                "data_batch_3.bin",
                "data_batch_4.bin",
                "data_batch_5.bin",
                "test_batch.bin",
            ],
            DataSet::Mnist | DataSet::FashionMnist => vec![
                "train-images-idx3-ubyte",
                "train-labels-idx1-ubyte",
                "t10k-images-idx3-ubyte",
                "t10k-labels-idx1-ubyte",
            ],
        }
    }

    fn remotes(self) -> Vec<Remote> {
        // Checksums as torchvision lists them.
        match self {
            DataSet::Cifar10 => vec![Remote {
                file: "cifar-10-binary.tar.gz",
                md5: "c32a1d4ab5d03f1284b67883e8d87530",
                mirrors: CIFAR_MIRRORS,
            }],
            DataSet::Mnist => vec![
                Remote {
                    file: "train-images-idx3-ubyte.gz",
                    md5: "f68b3c2dcbeaaa9fbdd348bbdeb94873",
                    mirrors: MNIST_MIRRORS,
                },
                Remote {
                    file: "train-labels-idx1-ubyte.gz",
                    md5: "d53e105ee54ea40749a09fcbcd1e9432",
                    mirrors: MNIST_MIRRORS,
                },
                Remote {
                    file: "t10k-images-idx3-ubyte.gz",
                    md5: "9fb629c4189551a2d022fa330f9573f3",
                    mirrors: MNIST_MIRRORS,
                },
                Remote {
                    file: "t10k-labels-idx1-ubyte.gz",
                    md5: "ec29112dd5afa0611ce80d1b7f02629c",
                    mirrors: MNIST_MIRRORS,
                },
            ],
            DataSet::FashionMnist => vec![
                Remote {
                    file: "train-images-idx3-ubyte.gz",
                    md5: "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                    mirrors: FASHION_MIRRORS,
                },
                Remote {
                    file: "train-labels-idx1-ubyte.gz",
                    md5: "25c81989df183df01b3e8a0aad5dffbe",
                    mirrors: FASHION_MIRRORS,
                },
                Remote {
                    file: "t10k-images-idx3-ubyte.gz",
                    md5: "bef4ecab320f06d8554ea6380940ec79",
                    mirrors: FASHION_MIRRORS,
                },
                Remote {
                    file: "t10k-labels-idx1-ubyte.gz",
                    md5: "bb300cfdad3c16e7a12a480ee83cd310",
                    mirrors: FASHION_MIRRORS,
                },
            ],
        }
    }

    /// Whether every file of the set is under `root` (stand-in or real).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// if !DataSet::Cifar10.is_present(std::path::Path::new("data")) {
    ///     println!("CIFAR-10 is not in ./data yet");
    /// }
    /// ```
    pub fn is_present(self, root: &Path) -> bool {
        let dir = self.dir(root);
        self.files()
            .iter()
            .all(|f| dir.join(f).exists() || dir.join(format!("{f}.gz")).exists())
    }
}

#[cfg(feature = "fetch")]
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(not(feature = "fetch"))]
fn download(url: &str, _dest: &Path, _md5: &str) -> Result<(), String> {
    Err(format!(
        "this build of tchbook-prelude has no `fetch` feature; download {url} by hand"
    ))
}

#[cfg(not(feature = "fetch"))]
fn extract(archive: &Path, _root: &Path) -> Result<(), DataError> {
    Err(super::format_error(
        archive,
        "cannot extract without the `fetch` feature",
    ))
}

#[cfg(feature = "fetch")]
fn extract(archive: &Path, root: &Path) -> Result<(), DataError> {
    let file = std::fs::File::open(archive).map_err(|e| super::io_error(archive, e))?;
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(root)
        .map_err(|e| super::format_error(archive, format!("could not extract: {e}")))
}

#[cfg(feature = "fetch")]
fn download(url: &str, dest: &Path, md5: &str) -> Result<(), String> {
    use md5::{Digest, Md5};
    use std::io::{Read, Write};
    let mut response = ureq::get(url).call().map_err(|e| e.to_string())?;
    let total = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let tmp = dest.with_extension("part");
    let mut file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut reader = response.body_mut().as_reader();
    let mut hasher = Md5::new();
    let mut buf = vec![0u8; 1 << 16];
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut progress = crate::progress::Progress::new(total.unwrap_or(0) as usize, "B")
        .description(&format!("downloading {name}"));
    loop {
        crate::interrupt::check();
        let n = reader.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        progress.inc(n);
    }
    progress.finish();
    let got = hex(&hasher.finalize());
    if got != md5 {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "checksum mismatch: MD5 {got}, expected {md5} (corrupt or changed download)"
        ));
    }
    std::fs::rename(&tmp, dest).map_err(|e| format!("{}: {e}", dest.display()))
}

/// The fallible twin of [`fetch`].
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// match tchbook_prelude::data::f_fetch(DataSet::FashionMnist, "data") {
///     Ok(dir) => println!("real Fashion-MNIST in {}", dir.display()),
///     Err(e) => println!("{e}"), // offline: says how to get the files or use stand-ins
/// }
/// ```
pub fn f_fetch(set: DataSet, root: impl AsRef<Path>) -> Result<PathBuf, DataError> {
    let root = root.as_ref();
    let dir = set.dir(root);
    if set.is_present(root) && !is_standin_dir(&dir) {
        return Ok(dir);
    }
    let download_dir = if set == DataSet::Cifar10 {
        root.to_path_buf()
    } else {
        dir.clone()
    };
    std::fs::create_dir_all(&download_dir).map_err(|e| super::io_error(&download_dir, e))?;
    for remote in set.remotes() {
        let dest = download_dir.join(remote.file);
        let mut errors = Vec::new();
        // TCHBOOK_DATA_MIRROR replaces the canonical locations (a local mirror or proxy).
        let custom = std::env::var("TCHBOOK_DATA_MIRROR").ok();
        let mirrors: Vec<&str> = match &custom {
            Some(m) => vec![m.as_str()],
            None => remote.mirrors.to_vec(),
        };
        let ok = mirrors.iter().any(|mirror| {
            let url = format!("{mirror}{}", remote.file);
            match download(&url, &dest, remote.md5) {
                Ok(()) => true,
                Err(e) => {
                    errors.push(format!("{url}: {e}"));
                    false
                }
            }
        });
        if !ok {
            return Err(DataError::Download(format!(
                "could not download {} ({}). Offline? Copy the real files into {} or use \
                 stand-ins: {}::locate_or_standin({:?}, ...)",
                set.title(),
                errors.join("; "),
                dir.display(),
                match set {
                    DataSet::Cifar10 => "Cifar10",
                    DataSet::Mnist => "Mnist",
                    DataSet::FashionMnist => "FashionMnist",
                },
                root
            )));
        }
        if set == DataSet::Cifar10 {
            // A stand-in directory would otherwise keep its marker next to the real files.
            let _ = std::fs::remove_dir_all(&dir);
            extract(&dest, root)?;
        }
    }
    let _ = std::fs::remove_file(dir.join(STANDIN_MARKER));
    Ok(dir)
}

/// Downloads a real data set into `root` (torchvision's layout) from its canonical location
/// (or `$TCHBOOK_DATA_MIRROR`, a base URL holding the same file names), showing progress and
/// checking MD5 sums; returns the directory. Does nothing if the real files are there. Panics
/// with a clear message when offline (see [`f_fetch`]).
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// fetch(DataSet::Cifar10, "./data");
/// let trainset = Cifar10::new("./data", true, &transforms::ToTensor());
/// # let _ = trainset;
/// ```
pub fn fetch(set: DataSet, root: impl AsRef<Path>) -> PathBuf {
    f_fetch(set, root).unwrap_or_else(|e| panic!("{e}"))
}

/// A data set found on disk: real files, or stand-ins written because the real ones were not
/// there. Says which wherever it is shown.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let cifar = Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap();
/// println!("{}", cifar.describe());
/// ```
#[derive(Debug, Clone)]
pub struct Located {
    set: DataSet,
    root: PathBuf,
    standin: bool,
}

impl Located {
    /// "real CIFAR-10 in data/cifar-10-batches-bin" or "stand-in CIFAR-10 (generated …)".
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// println!("{}", Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap().describe());
    /// ```
    pub fn describe(&self) -> String {
        let dir = self.set.dir(&self.root);
        if self.standin {
            let detail = std::fs::read_to_string(dir.join(STANDIN_MARKER))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("sizes:"))
                        .map(|l| l[6..].trim().to_string())
                })
                .unwrap_or_default();
            format!(
                "stand-in {} (generated, not the real data{}{}) in {}",
                self.set.title(),
                if detail.is_empty() { "" } else { ": " },
                detail,
                dir.display()
            )
        } else {
            format!("real {} from {}", self.set.title(), dir.display())
        }
    }

    /// Whether these are generated stand-ins.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let cifar = Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap();
    /// if cifar.is_standin() { println!("(stand-in data)"); }
    /// ```
    pub fn is_standin(&self) -> bool {
        self.standin
    }

    /// Which data set.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap().set(), DataSet::Cifar10);
    /// ```
    pub fn set(&self) -> DataSet {
        self.set
    }

    /// The training split with `transform` applied.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let trainset = Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap().train(&transforms::ToTensor()).unwrap();
    /// # let _ = trainset;
    /// ```
    pub fn train(&self, transform: &Transform) -> Result<TensorDataset, DataError> {
        self.load(true, transform)
    }

    /// The test split with `transform` applied.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let testset = Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap().test(&transforms::ToTensor()).unwrap();
    /// # let _ = testset;
    /// ```
    pub fn test(&self, transform: &Transform) -> Result<TensorDataset, DataError> {
        self.load(false, transform)
    }

    fn load(&self, train: bool, transform: &Transform) -> Result<TensorDataset, DataError> {
        match self.set {
            DataSet::Cifar10 => super::Cifar10::f_new(&self.root, train, transform),
            DataSet::Mnist => super::Mnist::f_new(&self.root, train, transform),
            DataSet::FashionMnist => super::FashionMnist::f_new(&self.root, train, transform),
        }
    }
}

impl Render for Located {
    fn bundle(&self) -> Bundle {
        let text = self.describe();
        let html = format!(
            "<p>{}{}</p>",
            if self.standin { "⚠ " } else { "" },
            crate::sys::escape_html(&text)
        );
        Bundle::text(text).with_html(html).with_data(
            "dataset",
            serde_json::json!({
                "set": self.set.title(), "standin": self.standin,
                "dir": self.set.dir(&self.root).display().to_string(),
            }),
        )
    }
}

rich!(Located);

/// Finds `set` under `root`, or writes stand-ins there. Never downloads.
pub(crate) fn locate(
    set: DataSet,
    root: &Path,
    n_train: usize,
    n_test: usize,
) -> Result<Located, DataError> {
    if !set.is_present(root) {
        super::standin::write(set, root, n_train, n_test, 0)?;
    }
    Ok(Located {
        set,
        root: root.to_path_buf(),
        standin: is_standin_dir(&set.dir(root)),
    })
}
