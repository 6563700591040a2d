//! MNIST and Fashion-MNIST in the IDX format (`train-images-idx3-ubyte`, plain or `.gz`): a
//! big-endian header (magic `0x00000803` for images, `0x00000801` for labels, then the
//! dimensions) followed by unsigned bytes.

use super::dataset::TensorDataset;
use super::error::{DataError, format_error, images_u8, labels_i64, read_maybe_gz};
use super::fetch::download_hint;
use super::transforms::Transform;
use std::path::{Path, PathBuf};
use tchbook_fetch::{KnownDataset, is_standin_dir};

/// Parses an IDX file: (dimensions, data). `expected_dims` is 3 for images, 1 for labels.
pub(crate) fn read_idx(path: &Path, expected_dims: u8) -> Result<(Vec<usize>, Vec<u8>), DataError> {
    let bytes = read_maybe_gz(path)?;
    if bytes.len() < 4 {
        return Err(format_error(
            path,
            format!("truncated IDX header: {} bytes", bytes.len()),
        ));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(format_error(
            path,
            format!(
                "not an IDX file: magic number starts {:#04x} {:#04x}, expected 0x00 0x00",
                bytes[0], bytes[1]
            ),
        ));
    }
    if bytes[2] != 0x08 {
        return Err(format_error(
            path,
            format!(
                "IDX data type {:#04x} is not unsigned bytes (0x08)",
                bytes[2]
            ),
        ));
    }
    if bytes[3] != expected_dims {
        return Err(format_error(
            path,
            format!(
                "IDX file has {} dimensions, expected {expected_dims}",
                bytes[3]
            ),
        ));
    }
    let header = 4 + 4 * expected_dims as usize;
    if bytes.len() < header {
        return Err(format_error(
            path,
            format!(
                "truncated IDX header: {} bytes, expected {header}",
                bytes.len()
            ),
        ));
    }
    let dims: Vec<usize> = (0..expected_dims as usize)
        .map(|i| {
            u32::from_be_bytes(bytes[4 + 4 * i..8 + 4 * i].try_into().unwrap_or([0; 4])) as usize
        })
        .collect();
    let expected: usize = dims.iter().product();
    let data = &bytes[header..];
    if data.len() != expected {
        let what = if data.len() < expected {
            "truncated"
        } else {
            "has trailing bytes"
        };
        return Err(format_error(
            path,
            format!(
                "{what}: the header promises {dims:?} = {expected} bytes of data, the file has {}",
                data.len()
            ),
        ));
    }
    Ok((dims, data.to_vec()))
}

fn find(dir: &Path, stem: &str) -> Option<PathBuf> {
    [stem.to_string(), format!("{stem}.gz")]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.exists())
}

fn load(
    set: KnownDataset,
    root: &Path,
    train: bool,
    transform: &Transform,
) -> Result<TensorDataset, DataError> {
    let dir = set.dir(root);
    let dir = if dir.is_dir() {
        dir
    } else {
        root.to_path_buf()
    };
    let prefix = if train { "train" } else { "t10k" };
    let missing = |stem: &str| DataError::Missing {
        path: set.dir(root).join(stem),
        hint: download_hint(set, root),
    };
    let images_stem = format!("{prefix}-images-idx3-ubyte");
    let labels_stem = format!("{prefix}-labels-idx1-ubyte");
    let images_path = find(&dir, &images_stem).ok_or_else(|| missing(&images_stem))?;
    let labels_path = find(&dir, &labels_stem).ok_or_else(|| missing(&labels_stem))?;
    let (dims, pixels) = read_idx(&images_path, 3)?;
    let (ldims, labels) = read_idx(&labels_path, 1)?;
    if dims[0] != ldims[0] {
        return Err(format_error(
            &labels_path,
            format!(
                "has {} labels but {} has {} images",
                ldims[0],
                images_path.display(),
                dims[0]
            ),
        ));
    }
    if let Some(bad) = labels.iter().position(|&l| l > 9) {
        return Err(format_error(
            &labels_path,
            format!(
                "corrupt label {} at index {bad} (expected 0–9)",
                labels[bad]
            ),
        ));
    }
    let images = images_u8(&pixels, dims[0] as i64, 1, dims[1] as i64, dims[2] as i64);
    let split = if train { "train" } else { "test" };
    Ok(
        TensorDataset::new(transform.apply(&images), labels_i64(&labels)).named(
            &format!("{} {split}", set.title()),
            set.classes(),
            is_standin_dir(&dir),
        ),
    )
}

/// MNIST handwritten digits (`torchvision.datasets.MNIST`), from `root/MNIST/raw/` or `root`.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let train_set = Mnist::new("./data", true, &transforms::ToTensor());
/// # let _ = train_set;
/// ```
pub struct Mnist;

dataset_entry_points!(Mnist, KnownDataset::Mnist, load);

impl Mnist {
    /// Digit names in label order.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Mnist::CLASSES[7], "7");
    /// ```
    pub const CLASSES: [&'static str; 10] = tchbook_fetch::MNIST_CLASSES;
}

/// Fashion-MNIST (`torchvision.datasets.FashionMNIST`), from `root/FashionMNIST/raw/` or `root`.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let train_set = FashionMnist::new("./data", true, &transforms::ToTensor());
/// # let _ = train_set;
/// ```
pub struct FashionMnist;

dataset_entry_points!(FashionMnist, KnownDataset::FashionMnist, load);

impl FashionMnist {
    /// Class names in label order.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(FashionMnist::CLASSES[9], "Ankle boot");
    /// ```
    pub const CLASSES: [&'static str; 10] = tchbook_fetch::FASHION_MNIST_CLASSES;
}
