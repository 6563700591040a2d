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

/// One file to download: its name, what it must be (its size, SHA-256 and MD5) and the base URLs
/// that serve it, tried in order. The sizes and SHA-256 sums are those the data sets' publishers'
/// files have had since their release (the same that other data loaders pin); the MD5 sums are
/// torchvision's, kept so that a file checked by torchvision is recognised here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    /// The file name, appended to a base URL.
    pub file: &'static str,
    /// What the file must be.
    pub expected: Expected<'static>,
    /// Base URLs (ending in `/`).
    pub mirrors: &'static [&'static str],
}

/// What a downloaded file must be: exactly `size` bytes with these sums (lowercase hex). A
/// download stops as soon as it passes `size`, so a server cannot fill the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The file's length in bytes.
    pub size: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'a str,
    /// Its MD5, lowercase hex (as torchvision lists it).
    pub md5: &'a str,
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

/// The four gzipped IDX files of an MNIST-like set, in [`IDX_FILES`]' order.
const fn idx_remotes(
    expected: [Expected<'static>; 4],
    mirrors: &'static [&'static str],
) -> [Remote; 4] {
    const GZ: [&str; 4] = [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ];
    let mut remotes = [Remote {
        file: "",
        expected: expected[0],
        mirrors,
    }; 4];
    let mut i = 0;
    while i < 4 {
        remotes[i].file = GZ[i];
        remotes[i].expected = expected[i];
        i += 1;
    }
    remotes
}

const MNIST_REMOTES: [Remote; 4] = idx_remotes(
    [
        Expected {
            size: 9_912_422,
            sha256: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
            md5: "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        },
        Expected {
            size: 28_881,
            sha256: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
            md5: "d53e105ee54ea40749a09fcbcd1e9432",
        },
        Expected {
            size: 1_648_877,
            sha256: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
            md5: "9fb629c4189551a2d022fa330f9573f3",
        },
        Expected {
            size: 4_542,
            sha256: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
            md5: "ec29112dd5afa0611ce80d1b7f02629c",
        },
    ],
    MNIST_MIRRORS,
);
const FASHION_REMOTES: [Remote; 4] = idx_remotes(
    [
        Expected {
            size: 26_421_880,
            sha256: "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
            md5: "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        },
        Expected {
            size: 29_515,
            sha256: "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
            md5: "25c81989df183df01b3e8a0aad5dffbe",
        },
        Expected {
            size: 4_422_102,
            sha256: "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
            md5: "bef4ecab320f06d8554ea6380940ec79",
        },
        Expected {
            size: 5_148,
            sha256: "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
            md5: "bb300cfdad3c16e7a12a480ee83cd310",
        },
    ],
    FASHION_MIRRORS,
);
const CIFAR_REMOTES: [Remote; 1] = [Remote {
    file: "cifar-10-binary.tar.gz",
    expected: Expected {
        size: 170_052_171,
        sha256: "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
        md5: "c32a1d4ab5d03f1284b67883e8d87530",
    },
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
