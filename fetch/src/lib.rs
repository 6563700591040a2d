//! The data sets tchbook knows — CIFAR-10, MNIST, Fashion-MNIST — as one catalog: their names,
//! where their files go under a root directory (torchvision's layout), where they are
//! downloaded from and their checksums, and, with the `download` feature, the download itself.
//!
//! Two programs use it, and neither may carry the other's weight: the prelude (every notebook
//! links it, so it stays free of HTTPS and tar unless a notebook asks for its `fetch` feature)
//! and the kernel binary's `tchbook download <dataset>` (which never links libtorch). Both turn
//! on `download`; the prelude reads the catalog without it (loaders, stand-ins, error hints).
//!
//! ```
//! use tchbook_fetch::KnownDataset;
//! let set: KnownDataset = "fashion-mnist".parse().unwrap();
//! assert_eq!(set.title(), "Fashion-MNIST");
//! assert_eq!(set.dir("data".as_ref()), std::path::Path::new("data/FashionMNIST/raw"));
//! ```

#![forbid(unsafe_code)]

#[cfg(feature = "download")]
mod download;

#[cfg(feature = "download")]
pub use download::{FetchError, Observer, download, fetch};

use std::path::{Path, PathBuf};

/// A data set the prelude can load, stand in for, and download.
///
/// ```
/// use tchbook_fetch::KnownDataset;
/// assert_eq!(KnownDataset::Cifar10.title(), "CIFAR-10");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KnownDataset {
    /// CIFAR-10, binary version.
    Cifar10,
    /// MNIST digits (IDX).
    Mnist,
    /// Fashion-MNIST (IDX).
    FashionMnist,
}

/// Marks a directory as holding generated stand-in files, not the real data: the loaders read it
/// and say "(stand-in)"; a download replaces the files and removes it.
pub const STANDIN_MARKER: &str = "STANDIN.txt";

/// Whether `dir` holds stand-in files ([`STANDIN_MARKER`]).
///
/// ```
/// assert!(!tchbook_fetch::is_standin_dir(std::path::Path::new("/nonexistent")));
/// ```
pub fn is_standin_dir(dir: &Path) -> bool {
    dir.join(STANDIN_MARKER).exists()
}

/// CIFAR-10's class names in label order.
pub const CIFAR10_CLASSES: [&str; 10] = [
    "plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
];

/// MNIST's class names in label order.
pub const MNIST_CLASSES: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// Fashion-MNIST's class names in label order.
pub const FASHION_MNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];

/// One file to download: its name, its MD5 (as torchvision lists it) and the base URLs that
/// serve it, tried in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    /// The file name, appended to a base URL.
    pub file: &'static str,
    /// The expected MD5, lowercase hex.
    pub md5: &'static str,
    /// Base URLs (ending in `/`).
    pub mirrors: &'static [&'static str],
}

const MNIST_MIRRORS: &[&str] = &[
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
];
const FASHION_MIRRORS: &[&str] = &["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"];
const CIFAR_MIRRORS: &[&str] = &["https://www.cs.toronto.edu/~kriz/"];

const IDX_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

const fn idx_remotes(md5: [&'static str; 4], mirrors: &'static [&'static str]) -> [Remote; 4] {
    const GZ: [&str; 4] = [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ];
    let mut remotes = [Remote {
        file: "",
        md5: "",
        mirrors,
    }; 4];
    let mut i = 0;
    while i < 4 {
        remotes[i].file = GZ[i];
        remotes[i].md5 = md5[i];
        i += 1;
    }
    remotes
}

const MNIST_REMOTES: [Remote; 4] = idx_remotes(
    [
        "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "d53e105ee54ea40749a09fcbcd1e9432",
        "9fb629c4189551a2d022fa330f9573f3",
        "ec29112dd5afa0611ce80d1b7f02629c",
    ],
    MNIST_MIRRORS,
);
const FASHION_REMOTES: [Remote; 4] = idx_remotes(
    [
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "25c81989df183df01b3e8a0aad5dffbe",
        "bef4ecab320f06d8554ea6380940ec79",
        "bb300cfdad3c16e7a12a480ee83cd310",
    ],
    FASHION_MIRRORS,
);
const CIFAR_REMOTES: [Remote; 1] = [Remote {
    file: "cifar-10-binary.tar.gz",
    md5: "c32a1d4ab5d03f1284b67883e8d87530",
    mirrors: CIFAR_MIRRORS,
}];

impl KnownDataset {
    /// Every data set in the catalog.
    pub const ALL: [KnownDataset; 3] = [
        KnownDataset::Cifar10,
        KnownDataset::Mnist,
        KnownDataset::FashionMnist,
    ];

    /// The name as shown ("CIFAR-10").
    ///
    /// ```
    /// assert_eq!(tchbook_fetch::KnownDataset::Mnist.title(), "MNIST");
    /// ```
    pub fn title(self) -> &'static str {
        match self {
            KnownDataset::Cifar10 => "CIFAR-10",
            KnownDataset::Mnist => "MNIST",
            KnownDataset::FashionMnist => "Fashion-MNIST",
        }
    }

    /// The name on a command line (`tchbook download cifar10`); [`str::parse`] reads it back.
    ///
    /// ```
    /// use tchbook_fetch::KnownDataset;
    /// for set in KnownDataset::ALL {
    ///     assert_eq!(set.command_name().parse::<KnownDataset>(), Ok(set));
    /// }
    /// ```
    pub fn command_name(self) -> &'static str {
        match self {
            KnownDataset::Cifar10 => "cifar10",
            KnownDataset::Mnist => "mnist",
            KnownDataset::FashionMnist => "fashion-mnist",
        }
    }

    /// The prelude's type that loads it (`Cifar10`), for messages that say what to call.
    ///
    /// ```
    /// assert_eq!(tchbook_fetch::KnownDataset::FashionMnist.type_name(), "FashionMnist");
    /// ```
    pub fn type_name(self) -> &'static str {
        match self {
            KnownDataset::Cifar10 => "Cifar10",
            KnownDataset::Mnist => "Mnist",
            KnownDataset::FashionMnist => "FashionMnist",
        }
    }

    /// Class names in label order.
    ///
    /// ```
    /// assert_eq!(tchbook_fetch::KnownDataset::FashionMnist.classes()[0], "T-shirt/top");
    /// ```
    pub fn classes(self) -> &'static [&'static str] {
        match self {
            KnownDataset::Cifar10 => &CIFAR10_CLASSES,
            KnownDataset::Mnist => &MNIST_CLASSES,
            KnownDataset::FashionMnist => &FASHION_MNIST_CLASSES,
        }
    }

    /// Where the files live under `root` (torchvision's layout).
    ///
    /// ```
    /// use tchbook_fetch::KnownDataset;
    /// let dir = KnownDataset::Mnist.dir(std::path::Path::new("data"));
    /// assert_eq!(dir, std::path::Path::new("data/MNIST/raw"));
    /// ```
    pub fn dir(self, root: &Path) -> PathBuf {
        match self {
            KnownDataset::Cifar10 => root.join("cifar-10-batches-bin"),
            KnownDataset::Mnist => root.join("MNIST").join("raw"),
            KnownDataset::FashionMnist => root.join("FashionMNIST").join("raw"),
        }
    }

    /// The files a complete copy has in [`dir`](Self::dir) (IDX files may also be `.gz`).
    ///
    /// ```
    /// assert_eq!(tchbook_fetch::KnownDataset::Cifar10.files().len(), 6);
    /// ```
    pub fn files(self) -> &'static [&'static str] {
        match self {
            KnownDataset::Cifar10 => &[
                "data_batch_1.bin",
                "data_batch_2.bin",
                "data_batch_3.bin",
                "data_batch_4.bin",
                "data_batch_5.bin",
                "test_batch.bin",
            ],
            KnownDataset::Mnist | KnownDataset::FashionMnist => &IDX_FILES,
        }
    }

    /// What to download, with checksums as torchvision lists them.
    ///
    /// ```
    /// let remotes = tchbook_fetch::KnownDataset::Cifar10.remotes();
    /// assert_eq!(remotes[0].file, "cifar-10-binary.tar.gz");
    /// ```
    pub fn remotes(self) -> &'static [Remote] {
        match self {
            KnownDataset::Cifar10 => &CIFAR_REMOTES,
            KnownDataset::Mnist => &MNIST_REMOTES,
            KnownDataset::FashionMnist => &FASHION_REMOTES,
        }
    }

    /// Whether every file of the set is under `root` (stand-in or real).
    ///
    /// ```
    /// use tchbook_fetch::KnownDataset;
    /// assert!(!KnownDataset::Cifar10.is_present(std::path::Path::new("/nonexistent")));
    /// ```
    pub fn is_present(self, root: &Path) -> bool {
        let dir = self.dir(root);
        self.files()
            .iter()
            .all(|f| dir.join(f).exists() || dir.join(format!("{f}.gz")).exists())
    }
}

impl std::fmt::Display for KnownDataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.title())
    }
}

/// A data set name that is not in the catalog; says which names are.
///
/// ```
/// let e = "imagenet".parse::<tchbook_fetch::KnownDataset>().unwrap_err();
/// assert!(e.to_string().contains("cifar10, mnist, fashion-mnist"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDataset(pub String);

impl std::fmt::Display for UnknownDataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = KnownDataset::ALL.iter().map(|s| s.command_name()).collect();
        write!(
            f,
            "unknown data set {:?}: known are {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownDataset {}

impl std::str::FromStr for KnownDataset {
    type Err = UnknownDataset;

    /// Reads a command-line name, forgiving case and `-`/`_` (`CIFAR-10`, `fashion_mnist`).
    fn from_str(name: &str) -> Result<Self, UnknownDataset> {
        let folded: String = name
            .chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .flat_map(char::to_lowercase)
            .collect();
        KnownDataset::ALL
            .into_iter()
            .find(|set| set.command_name().replace('-', "") == folded)
            .ok_or_else(|| UnknownDataset(name.to_string()))
    }
}
