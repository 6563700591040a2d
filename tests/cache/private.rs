//! The directories a kernel makes for its builds are its user's alone: a new cache root, and the
//! private directory a kernel without a home builds in and removes when it ends.

use super::{mode, path_result};
use crate::lifecycle::wait_for_exit;
use crate::support::{Kernel, REPLY, loopback_connection};
use jupyter_protocol::ShutdownRequest;
use std::path::PathBuf;

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
