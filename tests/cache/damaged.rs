//! A damaged template (truncated, overwritten at its full size, its records missing) is found,
//! named in the first cell and built again; `tchbook doctor` finds and repairs a damaged slot.

use super::copy::{CacheCopy, first_cell_stderr};
use std::path::Path;
use std::process::Command;

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
