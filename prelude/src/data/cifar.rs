//! CIFAR-10 in its binary format: `data_batch_1.bin` … `data_batch_5.bin` and `test_batch.bin`,
//! each a sequence of 3073-byte records (a label byte, then 1024 red, 1024 green and 1024 blue
//! pixels of a 32×32 image, row by row).

use super::dataset::TensorDataset;
use super::error::{DataError, format_error, images_u8, io_error, labels_i64};
use super::fetch::download_hint;
use super::transforms::Transform;
use std::path::{Path, PathBuf};
use tchbook_fetch::{KnownDataset, is_standin_dir};

const RECORD: usize = 1 + 3 * 32 * 32;

/// The CIFAR-10 data set (`torchvision.datasets.CIFAR10`).
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let transform = transforms::Compose(vec![
///     transforms::ToTensor(),
///     transforms::Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
/// ]);
/// let trainset = Cifar10::new("./data", true, &transform);
/// let trainloader = DataLoader::new(&trainset, 4).shuffle(true).num_workers(2);
/// # let _ = trainloader;
/// ```
pub struct Cifar10;

impl Cifar10 {
    /// The class names, in label order (the tutorial's `classes` tuple).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Cifar10::CLASSES[1], "car");
    /// ```
    pub const CLASSES: [&'static str; 10] = tchbook_fetch::CIFAR10_CLASSES;

    fn dir(root: &Path) -> Result<PathBuf, DataError> {
        let nested = root.join("cifar-10-batches-bin");
        if nested.is_dir() {
            Ok(nested)
        } else if root.join("test_batch.bin").exists() || root.join("data_batch_1.bin").exists() {
            Ok(root.to_path_buf())
        } else {
            Err(DataError::Missing {
                path: nested,
                hint: download_hint(KnownDataset::Cifar10, root),
            })
        }
    }
}

dataset_entry_points!(Cifar10, KnownDataset::Cifar10, read);

/// Reads the CIFAR-10 training or test batches under `root`.
fn read(
    _set: KnownDataset,
    root: &Path,
    train: bool,
    transform: &Transform,
) -> Result<TensorDataset, DataError> {
    let dir = Cifar10::dir(root)?;
    let names: Vec<String> = if train {
        (1..=5).map(|i| format!("data_batch_{i}.bin")).collect()
    } else {
        vec!["test_batch.bin".to_string()]
    };
    let mut pixels = Vec::new();
    let mut labels = Vec::new();
    for name in &names {
        let path = dir.join(name);
        if !path.exists() {
            return Err(DataError::Missing {
                path,
                hint: download_hint(KnownDataset::Cifar10, root),
            });
        }
        let (p, l) = read_batch(&path)?;
        pixels.extend_from_slice(&p);
        labels.extend_from_slice(&l);
    }
    let n = labels.len() as i64;
    let images = transform.apply(&images_u8(&pixels, n, 3, 32, 32));
    let split = if train { "train" } else { "test" };
    Ok(TensorDataset::new(images, labels_i64(&labels)).named(
        &format!("CIFAR-10 {split}"),
        &Cifar10::CLASSES,
        is_standin_dir(&dir),
    ))
}

/// Reads one binary batch: (pixels, labels). Errors name the file and the problem.
pub(crate) fn read_batch(path: &Path) -> Result<(Vec<u8>, Vec<u8>), DataError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    if bytes.is_empty() {
        return Err(format_error(
            path,
            "empty file, expected CIFAR-10 records of 3073 bytes",
        ));
    }
    if bytes.len() % RECORD != 0 {
        return Err(format_error(
            path,
            format!(
                "truncated or not a CIFAR-10 binary batch: {} bytes is not a whole number of \
                 3073-byte records ({} full records and {} bytes left over)",
                bytes.len(),
                bytes.len() / RECORD,
                bytes.len() % RECORD
            ),
        ));
    }
    let n = bytes.len() / RECORD;
    let mut labels = Vec::with_capacity(n);
    let mut pixels = Vec::with_capacity(n * (RECORD - 1));
    for (i, record) in bytes.chunks_exact(RECORD).enumerate() {
        if record[0] > 9 {
            return Err(format_error(
                path,
                format!(
                    "corrupt record {i}: label {} is not a CIFAR-10 class (0–9)",
                    record[0]
                ),
            ));
        }
        labels.push(record[0]);
        pixels.extend_from_slice(&record[1..]);
    }
    Ok((pixels, labels))
}
