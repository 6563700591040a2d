//! Finding libtorch: the directory the prelude's tch builds against and the evaluation
//! process loads from.

use super::{cache, env};
use std::path::{Path, PathBuf};

/// A libtorch the prelude can build against.
#[derive(Debug, Clone)]
pub(crate) struct Libtorch {
    /// A directory with `lib/` and `include/` (libtorch itself, or pip's `torch/` package).
    pub(crate) dir: PathBuf,
    /// e.g. `2.11.0+cu130`, when the directory says.
    pub(crate) version: Option<String>,
}

impl Libtorch {
    pub(crate) fn lib_dir(&self) -> PathBuf {
        self.dir.join("lib")
    }
}

/// Finds libtorch: `$LIBTORCH`; else the `torch` package of the Python on PATH; else the
/// `torch` package of tchbook's own venv (`$TCHBOOK_VENV`, default `~/.cache/tchbook/venv`).
/// The error says what is missing and how to fix it.
pub(crate) fn detect_libtorch() -> Result<Libtorch, String> {
    if let Some(dir) = std::env::var_os(env::LIBTORCH) {
        let dir = PathBuf::from(dir);
        if dir.join("lib").is_dir() {
            return Ok(libtorch_at(dir));
        }
        return Err(format!(
            "LIBTORCH is set to {}, but that directory has no lib/ folder. Set LIBTORCH to a \
             libtorch directory (or pip's site-packages/torch), or unset it and \
             `pip install torch==2.11.0`; then restart the kernel.",
            dir.display()
        ));
    }
    let mut pythons = vec![PathBuf::from("python3"), PathBuf::from("python")];
    let venv = std::env::var_os(env::VENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| cache::cache_root().join("venv"));
    pythons.push(venv.join("bin").join("python"));
    for python in &pythons {
        if let Some(dir) = torch_package_of(python)
            && dir.join("lib").is_dir()
        {
            return Ok(libtorch_at(dir));
        }
    }
    Err(
        "libtorch not found: LIBTORCH is not set and neither the Python on PATH nor \
         tchbook's venv has the `torch` package. Fix: `pip install torch==2.11.0` (tch 0.24 \
         needs torch 2.11), or set LIBTORCH to a libtorch directory; then restart the kernel \
         (`tchbook install` records LIBTORCH in the kernelspec)."
            .to_owned(),
    )
}

fn libtorch_at(dir: PathBuf) -> Libtorch {
    let version = torch_version(&dir);
    Libtorch { dir, version }
}

/// The `torch` package directory of `python`, found without importing torch (which takes a
/// second and ~600 MB).
fn torch_package_of(python: &Path) -> Option<PathBuf> {
    let output = cache::tool(python)
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('torch'); \
             print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .ok()?;
    let dir = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

fn torch_version(dir: &Path) -> Option<String> {
    if let Ok(text) = std::fs::read_to_string(dir.join("version.py")) {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("__version__") {
                let version = rest
                    .trim_start_matches([' ', '='])
                    .trim()
                    .trim_matches(['\'', '"']);
                return Some(version.to_owned());
            }
        }
    }
    std::fs::read_to_string(dir.join("build-version"))
        .ok()
        .map(|v| v.trim().to_owned())
}
