//! `tchbook download <dataset> [--root DIR]`: the data sets the prelude's loaders read, fetched
//! from a terminal. Nothing leaves the machine: the mirror is a loopback port nothing listens on,
//! or files already in place. (Downloads that succeed are tchbook-fetch's own tests.)

use crate::support::binary;
use std::process::Command;

fn download(args: &[&str], root: &std::path::Path) -> std::process::Output {
    Command::new(binary())
        .arg("download")
        .args(args)
        .arg("--root")
        .arg(root)
        .env(tchbook_wire::env::DATA_MIRROR, "http://127.0.0.1:9/")
        .output()
        .unwrap()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir_temp = tempfile::Builder::new()
        .prefix(&format!("tchbook-download-{name}"))
        .tempdir()
        .unwrap();

    dir_temp.path().to_path_buf()
}

#[test]
fn download_names_the_known_data_sets_when_given_another() {
    let out = download(&["imagenet"], &scratch("unknown"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown data set \"imagenet\"")
            && stderr.contains("cifar10, mnist, fashion-mnist"),
        "{stderr}"
    );
}

#[test]
fn download_offline_fails_saying_where_the_files_belong() {
    let root = scratch("offline");
    let out = download(&["fashion-mnist"], &root);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("could not download Fashion-MNIST")
            && stderr.contains("127.0.0.1:9")
            && stderr.contains(&root.join("FashionMNIST/raw").display().to_string()),
        "{stderr}"
    );
}

#[test]
fn download_of_a_set_already_in_place_prints_its_directory() {
    let root = scratch("present");
    let dir = root.join("MNIST/raw");
    std::fs::create_dir_all(&dir).unwrap();
    for f in tchbook_fetch::KnownDataset::Mnist.files() {
        std::fs::write(dir.join(format!("{f}.gz")), b"").unwrap();
    }
    let out = download(&["MNIST"], &root);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        dir.display().to_string()
    );
}
