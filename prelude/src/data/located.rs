//! A data set found on disk ([`Located`]): its real files, or stand-ins written where the real
//! ones were absent.

use super::cifar::Cifar10;
use super::dataset::TensorDataset;
use super::error::DataError;
use super::idx::{FashionMnist, Mnist};
use super::standin;
use super::transforms::Transform;
use crate::display::{Bundle, Render, rich};
use crate::sys;
use std::path::{Path, PathBuf};
use tchbook_fetch::{KnownDataset, STANDIN_MARKER, is_standin_dir};

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
    set: KnownDataset,
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
    /// assert_eq!(Cifar10::locate_or_standin("data", 20_000, 2_000).unwrap().set(), KnownDataset::Cifar10);
    /// ```
    pub fn set(&self) -> KnownDataset {
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
            KnownDataset::Cifar10 => Cifar10::f_new(&self.root, train, transform),
            KnownDataset::Mnist => Mnist::f_new(&self.root, train, transform),
            KnownDataset::FashionMnist => FashionMnist::f_new(&self.root, train, transform),
        }
    }
}

impl Render for Located {
    fn bundle(&self) -> Bundle {
        let text = self.describe();
        let html = format!(
            "<p>{}{}</p>",
            if self.standin { "⚠ " } else { "" },
            sys::escape_html(&text)
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
fn locate(
    set: KnownDataset,
    root: &Path,
    n_train: usize,
    n_test: usize,
) -> Result<Located, DataError> {
    if !set.is_present(root) {
        standin::write(set, root, n_train, n_test, 0)?;
    }
    Ok(Located {
        set,
        root: root.to_path_buf(),
        standin: is_standin_dir(&set.dir(root)),
    })
}

/// `locate_or_standin` for a data set type. It lives here rather than with the type's reader,
/// so that the readers know nothing of locating, and [`Located`] can call them.
macro_rules! locate_or_standin {
    ($t:ident, $set:expr) => {
        impl $t {
            /// Finds the data set under `root`; if its files are absent, writes marked stand-in
            /// files there (`n_train` and `n_test` images) in the real format. Never downloads
            /// (see [`fetch`](crate::data::fetch)). The handle says which it is.
            ///
            /// ```no_run
            /// use tchbook_prelude::prelude::*;
            #[doc = concat!("let located = ", stringify!($t), "::locate_or_standin(\"data\", 12_000, 2_000).unwrap();")]
            /// println!("{}", located.describe());
            /// let train_set = located.train(&transforms::ToTensor()).unwrap();
            /// # let _ = train_set;
            /// ```
            pub fn locate_or_standin(
                root: impl AsRef<Path>,
                n_train: usize,
                n_test: usize,
            ) -> Result<Located, DataError> {
                locate($set, root.as_ref(), n_train, n_test)
            }
        }
    };
}

locate_or_standin!(Cifar10, KnownDataset::Cifar10);
locate_or_standin!(Mnist, KnownDataset::Mnist);
locate_or_standin!(FashionMnist, KnownDataset::FashionMnist);
