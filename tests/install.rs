//! `tchbook install` / `uninstall` and the repository's kernelspec folder.

use crate::support::binary;
use std::path::Path;
use std::process::Command;

fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (width, height)
}

fn jupyter_lists(data_dir: &Path) -> Option<bool> {
    let output = Command::new("jupyter")
        .args(["kernelspec", "list", "--json"])
        .env("JUPYTER_DATA_DIR", data_dir)
        // In a venv, jupyter_core puts the venv's own share/jupyter first; the user's data
        // directory, where `install --user` writes, must come first for this check.
        .env("JUPYTER_PREFER_ENV_PATH", "0")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    // Another `tchbook` spec (a --sys-prefix install in the venv, say) may outlive ours: only
    // the one under `data_dir` counts.
    Some(
        listed["kernelspecs"]["tchbook"]["resource_dir"]
            .as_str()
            .is_some_and(|dir| Path::new(dir).starts_with(data_dir)),
    )
}

#[test]
fn install_writes_a_kernelspec_jupyter_lists_and_uninstall_removes_it() {
    let data_temp = tempfile::Builder::new()
        .prefix("tchbook-install-")
        .tempdir()
        .unwrap();
    let data = data_temp.path().to_path_buf();
    let status = Command::new(binary())
        .args(["install", "--user", "--no-build"])
        .env("JUPYTER_DATA_DIR", &data)
        .status()
        .unwrap();
    assert!(status.success());
    let spec_dir = data.join("kernels/tchbook");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(spec_dir.join("kernel.json")).unwrap())
            .unwrap();
    let argv: Vec<&str> = spec["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        Path::new(argv[0]).is_absolute() && Path::new(argv[0]).exists(),
        "{argv:?}"
    );
    assert_eq!(
        &argv[1..],
        ["kernel", "--connection-file", "{connection_file}"]
    );
    assert_eq!(spec["language"], "rust");
    assert_eq!(spec["interrupt_mode"], "message");
    assert!(
        spec["env"]["LIBTORCH"]
            .as_str()
            .is_some_and(|d| Path::new(d).join("lib").is_dir()),
        "{spec}"
    );
    assert_eq!(png_size(&spec_dir.join("logo-32x32.png")), (32, 32));
    assert_eq!(png_size(&spec_dir.join("logo-64x64.png")), (64, 64));
    if let Some(listed) = jupyter_lists(&data) {
        assert!(listed, "jupyter kernelspec list does not show tchbook");
    }
    let status = Command::new(binary())
        .args(["uninstall", "--user"])
        .env("JUPYTER_DATA_DIR", &data)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(!spec_dir.exists());
    if let Some(listed) = jupyter_lists(&data) {
        assert!(!listed);
    }
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn install_with_prefix_writes_under_share_jupyter() {
    let prefix_temp = tempfile::Builder::new()
        .prefix("tchbook-prefix-")
        .tempdir()
        .unwrap();
    let prefix = prefix_temp.path().to_path_buf();
    let status = Command::new(binary())
        .arg("install")
        .arg("--prefix")
        .arg(&prefix)
        .arg("--no-build")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        prefix
            .join("share/jupyter/kernels/tchbook/kernel.json")
            .exists()
    );
    let _ = std::fs::remove_dir_all(&prefix);
}

#[test]
fn repository_kernelspec_folder_has_the_spec_and_both_logos() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernelspec");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("kernel.json")).unwrap()).unwrap();
    assert_eq!(spec["argv"][0], "tchbook");
    assert_eq!(spec["interrupt_mode"], "message");
    assert_eq!(png_size(&dir.join("logo-32x32.png")), (32, 32));
    assert_eq!(png_size(&dir.join("logo-64x64.png")), (64, 64));
}
