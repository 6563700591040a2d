//! Stand-in data: small files in exactly the real formats (CIFAR-10 binary batches, IDX), with
//! class-dependent patterns a model can learn, for tests and offline runs. The directory gets a
//! `STANDIN.txt` marker, and every data set loaded from it says "(stand-in)" wherever it is
//! shown: these are never passed off as the real data.
//!
//! Each class has a template (a colour, stripes at a class-specific angle and frequency, and a
//! bright blob at a class-specific place); a sample is its class's template, shifted, at a
//! random brightness, plus noise, sometimes blended with another class. Generation is
//! deterministic in `seed`, independent of libtorch's global RNG.
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let root = std::env::temp_dir().join(format!("standin-doc-{}", std::process::id()));
//! standin::fashion_mnist(&root, 100, 20, 0).unwrap();
//! let train = FashionMnist::new(&root, true, &transforms::ToTensor());
//! assert_eq!(train.len(), 100);
//! assert!(train.is_standin());
//! # std::fs::remove_dir_all(&root).unwrap();
//! ```

use super::error::{DataError, io_error};
use std::io::Write;
use std::path::Path;
use tchbook_fetch::{KnownDataset, STANDIN_MARKER};

/// SplitMix64: small, fast, and the same on every machine.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }
    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Class templates, values around 0..255, layout [class][channel][y][x].
fn templates(channels: usize, size: usize) -> Vec<f32> {
    const PALETTE: [[f32; 3]; 10] = [
        [0.9, 0.2, 0.2],
        [0.2, 0.9, 0.2],
        [0.2, 0.2, 0.9],
        [0.9, 0.9, 0.2],
        [0.9, 0.2, 0.9],
        [0.2, 0.9, 0.9],
        [0.9, 0.6, 0.2],
        [0.5, 0.3, 0.8],
        [0.6, 0.6, 0.6],
        [0.3, 0.5, 0.3],
    ];
    let mut out = vec![0f32; 10 * channels * size * size];
    for c in 0..10 {
        let angle = c as f32 * std::f32::consts::PI / 10.0;
        let freq = 2.0 + (c % 3) as f32;
        let (bx, by) = ((c % 5) as f32 + 0.5, (c / 5) as f32 * 2.0 + 1.5);
        let (bx, by) = (bx * size as f32 / 5.0, by * size as f32 / 4.0);
        for ch in 0..channels {
            let colour = if channels == 3 { PALETTE[c][ch] } else { 0.5 };
            for y in 0..size {
                for x in 0..size {
                    let (xf, yf) = (x as f32, y as f32);
                    let t = (xf * angle.cos() + yf * angle.sin()) / size as f32;
                    let stripes = (2.0 * std::f32::consts::PI * freq * t).sin();
                    let d2 = (xf - bx).powi(2) + (yf - by).powi(2);
                    let blob = (-d2 / (2.0 * (size as f32 / 8.0).powi(2))).exp();
                    let v = 40.0 + 90.0 * colour + 45.0 * stripes + 110.0 * blob;
                    out[((c * channels + ch) * size + y) * size + x] = v;
                }
            }
        }
    }
    out
}

/// `n` samples: (labels, pixels [n][channels][size][size]).
///
/// A sample is its class's template shifted by up to 2 pixels, at a random brightness, with
/// uniform noise; one in five is blended with another class's template, so that a model reaches
/// high but not perfect accuracy (real data sets are not separable either).
fn samples(n: usize, channels: usize, size: usize, rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let t = templates(channels, size);
    let per = channels * size * size;
    let mut labels = Vec::with_capacity(n);
    let mut pixels = Vec::with_capacity(n * per);
    for _ in 0..n {
        let c = rng.below(10) as usize;
        labels.push(c as u8);
        let gain = 0.7 + 0.3 * rng.unit();
        let (dx, dy) = (rng.below(5) as isize - 2, rng.below(5) as isize - 2);
        let other = (c + 1 + rng.below(9) as usize) % 10;
        let mix = if rng.below(5) == 0 {
            0.35 + 0.2 * rng.unit()
        } else {
            0.0
        };
        for ch in 0..channels {
            for y in 0..size {
                for x in 0..size {
                    let sy = (y as isize + dy).clamp(0, size as isize - 1) as usize;
                    let sx = (x as isize + dx).clamp(0, size as isize - 1) as usize;
                    let k = (ch * size + sy) * size + sx;
                    let v = (1.0 - mix) * t[c * per + k] + mix * t[other * per + k];
                    let noise = (rng.unit() - 0.5) * 120.0;
                    pixels.push((v * gain + noise).clamp(0.0, 255.0) as u8);
                }
            }
        }
    }
    (labels, pixels)
}

fn write_file(path: &Path, chunks: &[&[u8]]) -> Result<(), DataError> {
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| io_error(path, e))?);
    for c in chunks {
        f.write_all(c).map_err(|e| io_error(path, e))?;
    }
    f.flush().map_err(|e| io_error(path, e))
}

fn mark(
    dir: &Path,
    set: KnownDataset,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    let text = format!(
        "These files are generated stand-ins written by tchbook_prelude::data::standin, \
         NOT the real {}.\nEach class is a synthetic pattern plus noise; accuracies on them say \
         nothing about the real data set.\nsizes: {n_train} train / {n_test} test\nseed: {seed}\n",
        set.title()
    );
    write_file(&dir.join(STANDIN_MARKER), &[text.as_bytes()])
}

/// Writes stand-in CIFAR-10 binary batches (`data_batch_1..5.bin`, `test_batch.bin`,
/// `batches.meta.txt`) under `root/cifar-10-batches-bin/`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let root = std::env::temp_dir().join(format!("standin-cifar-doc-{}", std::process::id()));
/// standin::cifar10(&root, 50, 10, 1).unwrap();
/// let test = Cifar10::new(&root, false, &transforms::ToTensor());
/// assert_eq!(test.inputs().size(), [10, 3, 32, 32]);
/// # std::fs::remove_dir_all(&root).unwrap();
/// ```
pub fn cifar10(
    root: impl AsRef<Path>,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    let dir = KnownDataset::Cifar10.dir(root.as_ref());
    std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
    let mut rng = Rng::new(seed);
    let record = |labels: &[u8], pixels: &[u8]| -> Vec<u8> {
        let mut out = Vec::with_capacity(labels.len() * 3073);
        for (i, &l) in labels.iter().enumerate() {
            out.push(l);
            out.extend_from_slice(&pixels[i * 3072..(i + 1) * 3072]);
        }
        out
    };
    for b in 0..5 {
        let n = n_train / 5 + usize::from(b < n_train % 5);
        let (l, p) = samples(n, 3, 32, &mut rng);
        write_file(
            &dir.join(format!("data_batch_{}.bin", b + 1)),
            &[&record(&l, &p)],
        )?;
    }
    let (l, p) = samples(n_test, 3, 32, &mut rng);
    write_file(&dir.join("test_batch.bin"), &[&record(&l, &p)])?;
    let meta = [
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    ]
    .join("\n");
    write_file(&dir.join("batches.meta.txt"), &[meta.as_bytes(), b"\n"])?;
    mark(&dir, KnownDataset::Cifar10, n_train, n_test, seed)
}

fn idx(
    set: KnownDataset,
    root: &Path,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    let dir = set.dir(root);
    std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
    let mut rng = Rng::new(seed);
    for (prefix, n) in [("train", n_train), ("t10k", n_test)] {
        let (l, p) = samples(n, 1, 28, &mut rng);
        let count = (n as u32).to_be_bytes();
        let images_header = [
            &[0u8, 0, 8, 3][..],
            &count,
            &28u32.to_be_bytes(),
            &28u32.to_be_bytes(),
        ]
        .concat();
        write_file(
            &dir.join(format!("{prefix}-images-idx3-ubyte")),
            &[&images_header, &p],
        )?;
        let labels_header = [&[0u8, 0, 8, 1][..], &count].concat();
        write_file(
            &dir.join(format!("{prefix}-labels-idx1-ubyte")),
            &[&labels_header, &l],
        )?;
    }
    mark(&dir, set, n_train, n_test, seed)
}

/// Writes stand-in MNIST IDX files under `root/MNIST/raw/`.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// standin::mnist("data", 12_000, 2_000, 0).unwrap();
/// let train = Mnist::new("data", true, &transforms::ToTensor());
/// assert!(train.is_standin());
/// ```
pub fn mnist(
    root: impl AsRef<Path>,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    idx(KnownDataset::Mnist, root.as_ref(), n_train, n_test, seed)
}

/// Writes stand-in Fashion-MNIST IDX files under `root/FashionMNIST/raw/`.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// standin::fashion_mnist("data", 12_000, 2_000, 0).unwrap();
/// ```
pub fn fashion_mnist(
    root: impl AsRef<Path>,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    idx(
        KnownDataset::FashionMnist,
        root.as_ref(),
        n_train,
        n_test,
        seed,
    )
}

/// Writes stand-ins for any [`KnownDataset`].
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// standin::write(KnownDataset::Cifar10, "data", 20_000, 2_000, 0).unwrap();
/// ```
pub fn write(
    set: KnownDataset,
    root: impl AsRef<Path>,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    match set {
        KnownDataset::Cifar10 => cifar10(root, n_train, n_test, seed),
        KnownDataset::Mnist => mnist(root, n_train, n_test, seed),
        KnownDataset::FashionMnist => fashion_mnist(root, n_train, n_test, seed),
    }
}
