//! The build cache: damage is found, said and repaired; a cache that cannot be written (read
//! only, full) still gives a kernel that starts, answers, and says in the first cell what is
//! wrong and what to do.
//!
//! Each test works on a copy of the real cache's build template (`TCHBOOK_CACHE_DIR`), with
//! `TCHBOOK_PRELUDE_DIR` naming the real cache's prelude, so that the copy's records and
//! cargo's fingerprints stay valid and nothing but the damage is rebuilt.

use crate::lifecycle::wait_for_exit;
use crate::support::{Kernel, REPLY, loopback_connection};
use jupyter_protocol::ShutdownRequest;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The real cache's build directory for this kernel (the one `tchbook install` filled).
fn real_build_dir() -> PathBuf {
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
struct CacheCopy {
    root: PathBuf,
    build: PathBuf,
    prelude: PathBuf,
    mounted: bool,
}

impl CacheCopy {
    fn new(name: &str) -> CacheCopy {
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

    fn copy_template_from(&self, real: &Path) {
        let status = Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(real.join("template"))
            .arg(self.build.join("template"))
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn template(&self) -> PathBuf {
        self.build.join("template")
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TCHBOOK_CACHE_DIR", self.root.display().to_string()),
            ("TCHBOOK_PRELUDE_DIR", self.prelude.display().to_string()),
        ]
    }

    async fn kernel(&self) -> Kernel {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Kernel::start_with_env(&env).await
    }

    /// The newest file under the template's `target/` whose name matches (cells build for an
    /// explicit target, so libraries are under `target/<triple>/debug/deps`; an older build of
    /// the prelude may lie beside the one in use).
    fn file(&self, matches: impl Fn(&str) -> bool) -> PathBuf {
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

fn truncate_to_half(path: &Path) -> u64 {
    let len = std::fs::metadata(path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(len / 2).unwrap();
    len
}

/// Overwrites 4 KiB of the file at `path` with zeros from byte `at`: the file keeps its size
/// (and, past an rlib's 8-byte magic and first 60-byte member header, its archive structure)
/// and its modification time, so only its contents can tell. Returns the file's name.
fn overwrite(path: &Path, at: u64) -> String {
    use std::io::{Seek, SeekFrom, Write};
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[0; 4096]).unwrap();
    // As a disk's silent corruption leaves it: the time stays, so no build step sees a change.
    file.set_modified(modified).unwrap();
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn is_prelude_rlib(name: &str) -> bool {
    name.starts_with("libtchbook_prelude-") && name.ends_with(".rlib")
}

/// Starts a kernel on `copy`, runs a tch cell, and returns what the first cell said on stderr.
async fn first_cell_stderr(copy: &CacheCopy) -> String {
    let mut kernel = copy.kernel().await;
    let first = kernel
        .run_ok("let t = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));\nt.sum(Kind::Float).double_value(&[])")
        .await;
    assert_eq!(first.result().as_deref(), Some("6.0"), "{}", kernel.log());
    first.stderr()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_link_library_is_named_and_linked_again() {
    let copy = CacheCopy::new("link");
    let library = copy.file(|name| name.starts_with("libtchbook-deps-") && name.ends_with(".so"));
    let size = truncate_to_half(&library);
    let said = first_cell_stderr(&copy).await;
    let name = library.file_name().unwrap().to_string_lossy().into_owned();
    assert!(said.contains("damaged") && said.contains(&name), "{said}");
    // The template is whole again, and the next kernel has nothing to say.
    let again = first_cell_stderr(&copy).await;
    assert!(!again.contains("damaged"), "{again}");
    let libraries: Vec<u64> = std::fs::read_dir(copy.template().join("target/tchbook-link"))
        .unwrap()
        .flatten()
        .map(|entry| entry.metadata().unwrap().len())
        .collect();
    assert!(libraries.iter().all(|&len| len > size / 2), "{libraries:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_rlib_is_named_and_built_again() {
    let copy = CacheCopy::new("rlib");
    let rlib = copy.file(|name| name.starts_with("libtchbook_prelude-") && name.ends_with(".rlib"));
    truncate_to_half(&rlib);
    let said = first_cell_stderr(&copy).await;
    let name = rlib.file_name().unwrap().to_string_lossy().into_owned();
    assert!(said.contains("damaged") && said.contains(&name), "{said}");
    assert!(said.contains("bytes"), "says how it is damaged: {said}");
    let again = first_cell_stderr(&copy).await;
    assert!(!again.contains("damaged"), "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_file_overwritten_at_its_full_size_is_found_before_it_is_copied() {
    let copy = CacheCopy::new("overwritten");
    let name = overwrite(&copy.file(is_prelude_rlib), 8 + 60);
    let said = first_cell_stderr(&copy).await;
    assert!(
        said.contains("damaged") && said.contains(&name) && said.contains("SHA-256"),
        "{said}"
    );
    let again = first_cell_stderr(&copy).await;
    assert!(!again.contains("damaged"), "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_records_are_made_again_and_cells_still_run() {
    let copy = CacheCopy::new("records");
    std::fs::remove_file(copy.template().join(".tchbook-manifest")).unwrap();
    std::fs::remove_dir_all(copy.template().join("target/tchbook-replay")).unwrap();
    let said = first_cell_stderr(&copy).await;
    assert!(!said.contains("damaged"), "{said}");
    assert!(copy.template().join(".tchbook-manifest").is_file());
}

/// Mounts a tmpfs of `size` at `dir`, when this test runs as root with mount allowed.
fn mount_tmpfs(dir: &Path, size: &str, read_only: bool) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    let mut options = format!("size={size}");
    if read_only {
        options.push_str(",ro");
    }
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_cache_is_said_in_the_first_cell_and_plain_cells_still_run() {
    let root_temp = tempfile::Builder::new()
        .prefix("tchbook-cache-ro-")
        .tempdir()
        .unwrap();
    let root = root_temp.path().to_path_buf();
    let mounted = mount_tmpfs(&root, "1m", true);
    if !mounted {
        // Without root, a directory without write permission is read-only enough.
        std::fs::create_dir_all(&root).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let mut kernel = Kernel::start_with_env(&[("TCHBOOK_CACHE_DIR", root.to_str().unwrap())]).await;
    kernel.kernel_info().await;
    let first = kernel.run_ok("1 + 1").await;
    let said = first.stderr();
    // It builds in a scratch directory no one else could have made first.
    let scratch = path_result(
        &kernel
            .run_ok(r#"std::env::var("EVCXR_TMPDIR").unwrap()"#)
            .await,
    );
    let predictable = std::env::temp_dir().join(format!("tchbook-scratch-{}", kernel.pid()));
    let scratch_mode = mode(&scratch);
    drop(kernel);
    assert_ne!(scratch, predictable);
    assert_eq!(scratch_mode, 0o700, "{}", scratch.display());
    if mounted {
        let _ = Command::new("umount").arg(&root).status();
    }
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(first.result().as_deref(), Some("2"));
    assert!(said.contains("cannot be written"), "{said}");
    assert!(said.contains("TCHBOOK_CACHE_DIR"), "{said}");
    assert!(said.contains(&root.display().to_string()), "{said}");
}

/// The path a cell's `String` value names (its `Debug` text, in quotes).
fn path_result(cell: &crate::support::Execution) -> PathBuf {
    let text = cell.result().expect("a value");
    PathBuf::from(text.trim_matches('"'))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_cache_root_is_private_to_its_user() {
    let base_temp = tempfile::Builder::new()
        .prefix("tchbook-private-")
        .tempdir()
        .unwrap();
    let base = base_temp.path().to_path_buf();
    let root = base.join("cache").join("tchbook");
    // Without libtorch the kernel starts at once: the cache still holds its build directory.
    let mut kernel = Kernel::start_with_env(&[
        ("TCHBOOK_CACHE_DIR", root.to_str().unwrap()),
        ("LIBTORCH", "/nonexistent/libtorch"),
    ])
    .await;
    assert_eq!(kernel.run_ok("1 + 1").await.result().as_deref(), Some("2"));
    drop(kernel);
    let build = root.join("build");
    let modes: Vec<(PathBuf, u32)> = [base.join("cache"), root.clone(), build.clone()]
        .into_iter()
        .chain(
            std::fs::read_dir(&build)
                .unwrap()
                .flatten()
                .map(|e| e.path()),
        )
        .map(|dir| (dir.clone(), mode(&dir)))
        .collect();
    std::fs::remove_dir_all(&base).unwrap();
    assert!(modes.len() > 3, "{modes:?}");
    assert!(modes.iter().all(|(_, mode)| *mode == 0o700), "{modes:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_home_a_kernel_builds_in_a_private_directory_it_removes_when_it_ends() {
    let folder_temp = tempfile::Builder::new()
        .prefix("tchbook-homeless-")
        .tempdir()
        .unwrap();
    let folder = folder_temp.path().to_path_buf();
    let mut kernel = Kernel::start_on(
        loopback_connection().await,
        &[("LIBTORCH", "/nonexistent/libtorch")],
        &["HOME", "XDG_CACHE_HOME", "TCHBOOK_CACHE_DIR"],
        false,
        Some(&folder),
    )
    .await;
    kernel.kernel_info().await;
    let first = kernel
        .run_ok(r#"std::env::var("TCHBOOK_CACHE_DIR").unwrap()"#)
        .await;
    let said = first.stderr();
    let private = path_result(&first);
    let private_mode = mode(&private);
    kernel
        .send_control(ShutdownRequest { restart: false })
        .await;
    kernel.control_reply(REPLY).await;
    wait_for_exit(&mut kernel).await;
    let left_in_folder: Vec<_> = std::fs::read_dir(&folder).unwrap().flatten().collect();
    std::fs::remove_dir_all(&folder).unwrap();

    assert!(
        said.contains("No build cache: HOME is not set")
            && said.contains(&private.display().to_string()),
        "the first cell says where it builds and why: {said}"
    );
    assert!(
        private.starts_with(std::env::temp_dir())
            && private
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tchbook-cache-"),
        "{}",
        private.display()
    );
    assert_eq!(private_mode, 0o700);
    assert!(left_in_folder.is_empty(), "{left_in_folder:?}");
    assert!(!private.exists(), "removed when the kernel ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_cache_is_said_in_the_first_cell_with_why_the_slot_copy_failed() {
    let real = real_build_dir();
    let kib = Command::new("du")
        .args(["-sk"])
        .arg(real.join("template"))
        .output()
        .unwrap();
    let kib: u64 = String::from_utf8_lossy(&kib.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Room for the template and the prelude's sources, not for a kernel's copy of it.
    let root_temp = tempfile::Builder::new()
        .prefix("tchbook-cache-full-")
        .tempdir()
        .unwrap();
    let root = root_temp.path().to_path_buf();
    if !mount_tmpfs(&root, &format!("{}k", kib + 16 * 1024), false) {
        eprintln!(
            "skipped: mounting a small tmpfs needs root (the read-only test covers the rest)"
        );
        return;
    }
    let mut copy = CacheCopy {
        root: root.clone(),
        build: root.join("build").join(real.file_name().unwrap()),
        prelude: real.join("prelude").canonicalize().unwrap(),
        mounted: true,
    };
    std::fs::create_dir_all(&copy.build).unwrap();
    copy.copy_template_from(&real);
    let mut kernel = copy.kernel().await;
    kernel.kernel_info().await;
    let first = kernel.execute("1 + 1").await;
    let said = format!("{}{:?}", first.stderr(), first.error());
    drop(kernel);
    copy.mounted = true;
    assert!(said.contains("full"), "{said}");
    assert!(
        said.contains("No space left on device"),
        "the slot copy says why: {said}"
    );
    assert!(said.contains("TCHBOOK_CACHE_DIR"), "{said}");
}

#[test]
fn doctor_finds_and_repairs_a_damaged_slot() {
    let copy = CacheCopy::new("doctor");
    // A slot as a kernel leaves it, with one library cut short.
    let slot = copy.build.join("slots/0");
    std::fs::create_dir_all(slot.parent().unwrap()).unwrap();
    let status = Command::new("cp")
        .args(["-a", "--reflink=auto"])
        .arg(copy.template())
        .arg(&slot)
        .status()
        .unwrap();
    assert!(status.success());
    let library = std::fs::read_dir(slot.join("target/tchbook-link"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "so"))
        .unwrap();
    truncate_to_half(&library);
    let mut command = Command::new(crate::support::binary());
    command.arg("doctor");
    for (key, value) in copy.env() {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.contains("template: built, verified"), "{said}");
    assert!(said.contains("slot 0: damaged"), "{said}");
    assert!(
        !slot.exists(),
        "the damaged slot is removed for the next kernel to copy again"
    );
}
