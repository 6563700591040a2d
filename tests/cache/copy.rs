//! A copy of the real cache's build template in a cache root of its own, and a kernel on it.

use crate::support::Kernel;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The real cache's build directory for this kernel (the one `tchbook install` filled).
pub(super) fn real_build_dir() -> PathBuf {
    let root = match std::env::var_os("TCHBOOK_CACHE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("XDG_CACHE_HOME") {
            Some(dir) => PathBuf::from(dir).join("tchbook"),
            None => PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tchbook"),
        },
    };
    let prefix = format!("{}-torch-", env!("CARGO_PKG_VERSION"));
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(root.join("build"))
        .expect("no build cache: run `tchbook install` first")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(&prefix))
                && path.join("template/.tchbook-ready").is_file()
        })
        .filter_map(|path| {
            Some((
                path.join("template/.tchbook-ready")
                    .metadata()
                    .ok()?
                    .modified()
                    .ok()?,
                path,
            ))
        })
        .collect();
    found.sort();
    found
        .pop()
        .expect("no built template: run `tchbook install` first")
        .1
}

/// A cache root of its own holding a copy of the real template.
pub(super) struct CacheCopy {
    pub(super) root: PathBuf,
    pub(super) build: PathBuf,
    pub(super) prelude: PathBuf,
    pub(super) mounted: bool,
}

impl CacheCopy {
    pub(super) fn new(name: &str) -> CacheCopy {
        let real = real_build_dir();
        let root = tempfile::Builder::new()
            .prefix(&format!("tchbook-cache-{name}-"))
            .tempdir()
            .unwrap()
            .keep();
        let build = root.join("build").join(real.file_name().unwrap());
        std::fs::create_dir_all(&build).unwrap();
        let copy = CacheCopy {
            root,
            build,
            prelude: real.join("prelude").canonicalize().unwrap(),
            mounted: false,
        };
        copy.copy_template_from(&real);
        copy
    }

    pub(super) fn copy_template_from(&self, real: &Path) {
        let status = Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(real.join("template"))
            .arg(self.build.join("template"))
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub(super) fn template(&self) -> PathBuf {
        self.build.join("template")
    }

    pub(super) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TCHBOOK_CACHE_DIR", self.root.display().to_string()),
            ("TCHBOOK_PRELUDE_DIR", self.prelude.display().to_string()),
        ]
    }

    pub(super) async fn kernel(&self) -> Kernel {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Kernel::start_with_env(&env).await
    }

    /// The newest file under the template's `target/` whose name matches (cells build for an
    /// explicit target, so libraries are under `target/<triple>/debug/deps`; an older build of
    /// the prelude may lie beside the one in use).
    pub(super) fn file(&self, matches: impl Fn(&str) -> bool) -> PathBuf {
        newest_file(&self.template(), matches)
    }
}

/// The newest file under `build_dir`'s `target/` whose name matches.
fn newest_file(build_dir: &Path, matches: impl Fn(&str) -> bool) -> PathBuf {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>, matches: &dyn Fn(&str) -> bool) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found, matches);
            } else if matches(&entry.file_name().to_string_lossy()) {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&build_dir.join("target"), &mut found, &matches);
    found.sort_by_key(|path| path.metadata().unwrap().modified().unwrap());
    found.pop().expect("no such file in the build directory")
}

impl Drop for CacheCopy {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.root).status();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Starts a kernel on `copy`, runs a tch cell, and returns what the first cell said on stderr.
pub(super) async fn first_cell_stderr(copy: &CacheCopy) -> String {
    let mut kernel = copy.kernel().await;
    let first = kernel
        .run_ok("let t = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));\nt.sum(Kind::Float).double_value(&[])")
        .await;
    assert_eq!(first.result().as_deref(), Some("6.0"), "{}", kernel.log());
    first.stderr()
}
