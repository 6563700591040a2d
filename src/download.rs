//! `tchbook download <dataset> [--root DIR]`: puts a real data set where the prelude's loaders
//! look for it, from a terminal. The catalog and the download are `tchbook-fetch`'s, the same
//! code the prelude's `fetch` feature runs in a cell; the kernel binary never links libtorch,
//! and notebooks keep that feature's ~30 crates out of their dependency build.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use tchbook_fetch::KnownDataset;

/// Downloads `dataset` (a name as `tchbook download` takes it: `cifar10`, `mnist`,
/// `fashion-mnist`) under `root`, printing progress to stderr and the directory to stdout.
pub fn run(dataset: &str, root: &Path) -> Result<()> {
    let set: KnownDataset = dataset.parse()?;
    let dir = tchbook_fetch::fetch(set, root, &mut Progress::default())
        .with_context(|| format!("tchbook download {}", set.command_name()))?;
    println!("{}", dir.display());
    Ok(())
}

/// One stderr line per file, redrawn in place every 5 percent (or every 16 MiB when the server
/// does not say the size).
#[derive(Default)]
struct Progress {
    file: String,
    total: Option<u64>,
    done: u64,
    shown: u64,
}

impl Progress {
    fn draw(&self) {
        let line = match self.total {
            Some(total) if total > 0 => format!(
                "{}: {:>3}% of {:.1} MiB",
                self.file,
                self.done * 100 / total,
                total as f64 / (1 << 20) as f64
            ),
            _ => format!(
                "{}: {:.1} MiB",
                self.file,
                self.done as f64 / (1 << 20) as f64
            ),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}");
        let _ = err.flush();
    }
}

impl tchbook_fetch::Observer for Progress {
    fn start(&mut self, file: &str, total: Option<u64>) {
        *self = Progress {
            file: file.to_string(),
            total,
            ..Progress::default()
        };
        self.draw();
    }

    fn bytes(&mut self, n: usize) {
        self.done += n as u64;
        let step = self.total.map_or(16 << 20, |t| (t / 20).max(1));
        if self.done - self.shown >= step {
            self.shown = self.done;
            self.draw();
        }
    }

    fn finish(&mut self) {
        self.draw();
        eprintln!();
    }
}
