//! Data: the [`Dataset`] abstraction, [`TensorDataset`], the [`DataLoader`] a training loop
//! iterates, the tutorials' data sets in their real on-disk formats, transforms, splits,
//! downloads and stand-ins.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let x = Tensor::arange(20, (Kind::Float, Device::Cpu)).view([10, 2]);
//! let y = Tensor::arange(10, (Kind::Int64, Device::Cpu));
//! let dataset = TensorDataset::new(x, y);
//! let loader = DataLoader::new(&dataset, 4).shuffle(true).seed(0);
//! for (inputs, labels) in &loader {
//!     assert_eq!(inputs.size()[0], labels.size()[0]);
//! }
//! ```

/// `new` and `f_new` for a data set type (`Cifar10`, `Mnist`, ...):
/// `$read(set, root, train, transform)` reads its files.
macro_rules! dataset_entry_points {
    ($t:ident, $set:expr, $read:path) => {
        impl $t {
            /// Loads the training (`train = true`) or the test split from `root` (torchvision's
            /// layout under it, or the files themselves), applying `transform` to all images.
            /// Panics naming the file and what is wrong with it (see [`f_new`](Self::f_new)).
            ///
            /// ```no_run
            /// use tchbook_prelude::prelude::*;
            #[doc = concat!("let train_set = ", stringify!($t), "::new(\"./data\", true, &transforms::ToTensor());")]
            /// println!("{} images", train_set.len());
            /// ```
            // `new` returns the data set, not `Self`, to read like torchvision's constructor:
            // `Cifar10::new("./data", true, &transform)` ≈ `CIFAR10(root='./data', train=True, ...)`.
            #[allow(clippy::new_ret_no_self)]
            pub fn new(
                root: impl AsRef<std::path::Path>,
                train: bool,
                transform: &$crate::data::transforms::Transform,
            ) -> $crate::data::dataset::TensorDataset {
                Self::f_new(root, train, transform).unwrap_or_else(|e| panic!("{e}"))
            }

            /// The fallible twin of [`new`](Self::new).
            ///
            /// ```no_run
            /// use tchbook_prelude::prelude::*;
            #[doc = concat!("match ", stringify!($t), "::f_new(\"./data\", false, &transforms::ToTensor()) {")]
            ///     Ok(test_set) => println!("{}", test_set.name()),
            ///     Err(e) => println!("{e}"), // names the file and what is wrong
            /// }
            /// ```
            pub fn f_new(
                root: impl AsRef<std::path::Path>,
                train: bool,
                transform: &$crate::data::transforms::Transform,
            ) -> Result<$crate::data::dataset::TensorDataset, $crate::data::error::DataError> {
                $read($set, root.as_ref(), train, transform)
            }
        }
    };
}

mod batches;
mod cifar;
mod csv;
mod dataset;
mod error;
mod fetch;
mod idx;
mod loader;
mod located;
mod split;
pub mod standin;
pub mod transforms;

pub use batches::Batches;
pub use cifar::Cifar10;
pub use csv::{Bunch, CsvTable, IRIS_CSV, f_read_csv, iris, load_iris, read_csv, write_iris};
pub use dataset::{Dataset, TensorDataset};
pub use error::DataError;
pub use fetch::{download_hint, f_fetch, fetch};
pub use idx::{FashionMnist, Mnist};
pub use loader::{DataLoader, IntoLoaderDataset};
pub use located::Located;
pub use split::{f_train_test_split, train_test_split};
pub use tchbook_fetch::KnownDataset;
