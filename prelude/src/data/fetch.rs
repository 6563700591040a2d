//! Getting the real data sets: [`fetch`] downloads them (the `fetch` cargo feature, off by
//! default), and [`download_hint`] says how to get them in every message about missing files.
//!
//! The catalog (names, directories, URLs, checksums) and the download itself are the
//! `tchbook-fetch` crate's, shared with the kernel's `tchbook download <dataset>` command. The
//! feature is off by default because HTTPS, the checksums and tar are about 40 crates that every notebook's
//! dependency build would otherwise compile; a terminal's `tchbook download` gets the same files
//! into the same places without them.

use super::error::DataError;
use std::path::{Path, PathBuf};
use tchbook_fetch::KnownDataset;

/// What to do about `set` missing under `root`, for error messages: download it (with
/// [`fetch`] where the `fetch` feature is on, else with `tchbook download` in a terminal or by
/// turning the feature on), or write stand-ins.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let hint = tchbook_prelude::data::download_hint(KnownDataset::Mnist, "data".as_ref());
/// assert!(hint.contains("Mnist::locate_or_standin(\"data\""), "{hint}");
/// if cfg!(not(feature = "fetch")) {
///     assert!(hint.contains("tchbook download mnist --root data"), "{hint}");
/// }
/// ```
pub fn download_hint(set: KnownDataset, root: &Path) -> String {
    let standin = format!(
        "write stand-in files with {}::locate_or_standin({root:?}, {}, 2_000)",
        set.type_name(),
        match set {
            KnownDataset::Cifar10 => "20_000",
            KnownDataset::Mnist | KnownDataset::FashionMnist => "12_000",
        }
    );
    if cfg!(feature = "fetch") {
        format!("download it with fetch(KnownDataset::{set:?}, {root:?}), or {standin}")
    } else {
        format!(
            "download it with `tchbook download {} --root {}` in a terminal (or add the \
             prelude's fetch feature with `{}` and call fetch(KnownDataset::{set:?}, {root:?})), \
             or {standin}",
            set.command_name(),
            shell_word(&root.display().to_string()),
            dep_line(),
        )
    }
}

/// The `:dep` line that rebuilds this prelude with its `fetch` feature: the kernel's own line
/// (the prelude's directory as it was compiled) plus the feature.
fn dep_line() -> String {
    format!(
        ":dep tchbook_prelude = {{ path = {:?}, package = \"tchbook-prelude\", features = [\"fetch\"] }}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `word` as a shell reads it back: bare when it is only safe characters, else single-quoted.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The fallible twin of [`fetch`].
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// match tchbook_prelude::data::f_fetch(KnownDataset::FashionMnist, "data") {
///     Ok(dir) => println!("real Fashion-MNIST in {}", dir.display()),
///     Err(e) => println!("{e}"), // offline: says how to get the files or use stand-ins
/// }
/// ```
pub fn f_fetch(set: KnownDataset, root: impl AsRef<Path>) -> Result<PathBuf, DataError> {
    download(set, root.as_ref())
}

/// Downloads a real data set into `root` (torchvision's layout) from its canonical location
/// (or `$TCHBOOK_DATA_MIRROR`, a base URL holding the same file names), showing progress and
/// checking each file's size, SHA-256 and MD5; returns the directory. Does nothing if the real files are there. Panics
/// with a clear message when offline (see [`f_fetch`]). Needs the `fetch` feature; without it
/// the message says how to download with `tchbook download` or turn the feature on.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// fetch(KnownDataset::Cifar10, "./data");
/// let trainset = Cifar10::new("./data", true, &transforms::ToTensor());
/// # let _ = trainset;
/// ```
pub fn fetch(set: KnownDataset, root: impl AsRef<Path>) -> PathBuf {
    f_fetch(set, root).unwrap_or_else(|e| panic!("{e}"))
}

#[cfg(not(feature = "fetch"))]
fn download(set: KnownDataset, root: &Path) -> Result<PathBuf, DataError> {
    if set.is_present(root) && !tchbook_fetch::is_standin_dir(&set.dir(root)) {
        return Ok(set.dir(root));
    }
    Err(DataError::Missing {
        path: set.dir(root),
        hint: format!(
            "this prelude was built without its `fetch` feature, so it cannot download; {}",
            download_hint(set, root)
        ),
    })
}

#[cfg(feature = "fetch")]
fn download(set: KnownDataset, root: &Path) -> Result<PathBuf, DataError> {
    use tchbook_fetch::FetchError;
    tchbook_fetch::fetch(set, root, &mut Bar(None)).map_err(|e| match e {
        FetchError::Io { path, source } => DataError::Io { path, source },
        FetchError::Extract { path, problem } => DataError::Format {
            path,
            problem: format!("could not extract: {problem}"),
        },
        unreachable @ FetchError::Unreachable { .. } => DataError::Download(format!(
            "{unreachable} or use stand-ins: {}::locate_or_standin({root:?}, ...)",
            set.type_name(),
        )),
    })
}

/// A download's progress bar; the interrupt check per chunk stops a download the user
/// interrupts (the panic unwinds through the download, which leaves only a `.part` file).
#[cfg(feature = "fetch")]
struct Bar(Option<crate::progress::Progress>);

#[cfg(feature = "fetch")]
impl tchbook_fetch::Observer for Bar {
    fn start(&mut self, file: &str, total: Option<u64>) {
        self.0 = Some(
            crate::progress::Progress::new(total.unwrap_or(0) as usize, "B")
                .description(&format!("downloading {file}")),
        );
    }
    fn bytes(&mut self, n: usize) {
        crate::interrupt::check();
        if let Some(bar) = &mut self.0 {
            bar.inc(n);
        }
    }
    fn finish(&mut self) {
        if let Some(mut bar) = self.0.take() {
            bar.finish();
        }
    }
}
