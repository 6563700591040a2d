//! A cache that cannot be written, read only or full, still gives a kernel that starts, answers,
//! and says in the first cell what is wrong and what to do.

use super::copy::{CacheCopy, real_build_dir};
use super::{mode, path_result};
use crate::support::Kernel;
use std::path::Path;
use std::process::Command;

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
