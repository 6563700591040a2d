//! Writing the exported Cargo project: the manifest, the seeded lock file, `src/main.rs` made
//! from the translation, the runner's sources, and the prelude's (unless `--prelude`).

use super::notebook::read_code_cells;
use super::translate::{translate, Translation};
use super::ExportOptions;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The runner every exported project carries, by path under its `src/`: `runner.rs` and the
/// files of `runner/` here become `tchbook_runner.rs` and `tchbook_runner/` there, where
/// `mod tchbook_runner;` finds them as it finds them here.
macro_rules! runner_files {
    ($($file:literal),*) => {
        &[
            ("tchbook_runner.rs", include_str!("runner.rs")),
            $((concat!("tchbook_runner/", $file), include_str!(concat!("runner/", $file))),)*
        ]
    };
}
const RUNNER: &[(&str, &str)] = runner_files!(
    "capture.rs",
    "cells.rs",
    "failure.rs",
    "process.rs",
    "reader.rs",
    "record.rs",
    "recorder.rs"
);
/// This workspace's lock file: an exported project resolves to the same versions.
const LOCK: &str = include_str!("../../Cargo.lock");

/// Writes the project; returns its directory.
pub fn export(options: &ExportOptions) -> Result<PathBuf> {
    let notebook = &options.notebook;
    let cells = read_code_cells(notebook)?;
    let name = notebook
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "notebook.ipynb".to_owned());
    let stem = name.trim_end_matches(".ipynb").to_owned();
    let out_dir = match &options.out_dir {
        Some(dir) => dir.clone(),
        None => notebook.with_file_name(&stem),
    };
    let translation = translate(&cells)?;
    let package = package_name(&stem);

    std::fs::create_dir_all(out_dir.join("src"))
        .with_context(|| format!("creating {}", out_dir.display()))?;
    let prelude_path = prelude(options.prelude.as_deref(), &out_dir)?;
    write_if_changed(
        &out_dir.join("Cargo.toml"),
        manifest(&package, &prelude_path, &translation.dependencies).as_bytes(),
    )?;
    // Only seeds the resolution: cargo keeps the versions it can use and drops the rest.
    if !out_dir.join("Cargo.lock").exists() {
        std::fs::write(out_dir.join("Cargo.lock"), LOCK)?;
    }
    write_if_changed(
        &out_dir.join("src/main.rs"),
        main_rs(&name, &translation).as_bytes(),
    )?;
    write_files(&out_dir.join("src"), RUNNER)?;
    Ok(out_dir)
}

/// The prelude's path as the manifest names it: the `--prelude` checkout, or a copy of the
/// embedded prelude written into the project.
fn prelude(checkout: Option<&Path>, out_dir: &Path) -> Result<String> {
    let Some(dir) = checkout else {
        write_files(
            &out_dir.join("tchbook-prelude"),
            crate::build::cache::PRELUDE_FILES,
        )?;
        return Ok("tchbook-prelude".to_owned());
    };
    let dir = std::fs::canonicalize(dir)
        .with_context(|| format!("--prelude {}: no such directory", dir.display()))?;
    if !dir.join("Cargo.toml").is_file() {
        bail!(
            "--prelude {}: no Cargo.toml there; name the prelude crate's directory \
             (prelude/ in a tchbook checkout)",
            dir.display()
        );
    }
    Ok(dir.display().to_string())
}

/// Writes `files` (path relative to `dir`, contents) under `dir`.
fn write_files<C: AsRef<[u8]>>(dir: &Path, files: &[(&str, C)]) -> Result<()> {
    for (relative, contents) in files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        write_if_changed(&path, contents.as_ref())?;
    }
    Ok(())
}

/// A file rewritten with the same bytes would make cargo rebuild it.
fn write_if_changed(path: &Path, contents: &[u8]) -> Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// `01-using-the-gpu` → `nb-01-using-the-gpu` (a package name starts with a letter).
fn package_name(stem: &str) -> String {
    let cleaned: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    match cleaned.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => cleaned,
        _ => format!("nb-{cleaned}"),
    }
}

fn manifest(package: &str, prelude: &str, dependencies: &BTreeMap<String, String>) -> String {
    let mut text = format!(
        "# Written by `tchbook export` (tchbook {version}). Build: `cargo build --release`, with\n\
         # libtorch found as for the kernel (LIBTORCH, or the torch package of the Python on PATH);\n\
         # run with libtorch's lib/ on LD_LIBRARY_PATH. See src/main.rs.\n\
         [package]\n\
         name = {package:?}\n\
         version = \"0.1.0\"\n\
         edition = \"2021\"\n\
         publish = false\n\
         \n\
         [dependencies]\n\
         tchbook-prelude = {{ path = {prelude:?} }}\n\
         libc = \"0.2\"\n\
         serde_json = \"1\"\n",
        version = crate::VERSION,
    );
    for (name, spec) in dependencies {
        if matches!(name.as_str(), "tchbook-prelude" | "libc" | "serde_json") {
            continue;
        }
        let _ = writeln!(text, "{name} = {spec}");
    }
    // The same release profile as the kernel's workspace, so a shared target directory reuses
    // its build of tch and the prelude; line tables keep panic backtraces readable.
    text.push_str(
        "\n[profile.release]\ndebug = \"line-tables-only\"\n\n\
         # Its own workspace: the project builds wherever it is copied, inside another one too.\n\
         [workspace]\n",
    );
    if prelude == "tchbook-prelude" {
        text.push_str("exclude = [\"tchbook-prelude\"]\n");
    }
    text
}

fn main_rs(notebook: &str, translation: &Translation) -> String {
    let mut text = format!(
        "//! `{notebook}`, exported by `tchbook export` (tchbook {version}): the notebook's cells in\n\
         //! order, run headless by one binary. Rich output prints as text; `--record FILE` also\n\
         //! writes every cell's outputs as Jupyter outputs, and `tchbook export --merge FILE\n\
         //! {notebook}` puts them into the notebook. A panic stops the run as \"run all\" stops\n\
         //! (cells tagged raises-exception excepted); an error returned by `?` is printed and\n\
         //! stops it too. Generated: edit the notebook and export again.\n\
         \n\
         #![allow(warnings)]\n\
         \n\
         mod tchbook_runner;\n\
         \n\
         use tchbook_prelude::prelude::*;\n\
         use tchbook_runner::CellError;\n\
         \n\
         static NOTEBOOK: tchbook_runner::Notebook = tchbook_runner::Notebook {{\n\
         \x20   name: {notebook:?},\n\
         \x20   exported_by: \"tchbook {version}\",\n\
         \x20   cells: &[\n",
        version = crate::VERSION,
    );
    for (index, hash, source) in &translation.cells {
        let _ = writeln!(text, "        ({index}, {hash:?}, {source:?}),");
    }
    text.push_str(
        "    ],\n    main_rs: include_str!(\"main.rs\"),\n};\n\n\
         fn main() -> std::process::ExitCode {\n\
         \x20   tchbook_runner::run(\n\
         \x20       &NOTEBOOK,\n\
         \x20       tchbook_prelude::runtime::attach,\n\
         \x20       tchbook_prelude::interrupt::is_pending,\n\
         \x20       cells,\n\
         \x20   )\n\
         }\n",
    );
    if !translation.items.is_empty() {
        text.push_str(
            "\n// ---- Items defined in the cells (evcxr keeps them at the top level too)\n",
        );
        for item in &translation.items {
            text.push('\n');
            text.push_str(item.trim_end());
            text.push('\n');
        }
    }
    text.push_str("\nfn cells() -> Result<(), CellError> {");
    text.push_str(&translation.body);
    text.push_str("    Ok(())\n}\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_start_with_a_letter() {
        assert_eq!(package_name("01-using-the-gpu"), "nb-01-using-the-gpu");
        assert_eq!(package_name("My Notebook"), "my-notebook");
    }

    #[test]
    fn every_runner_file_is_carried_into_the_project() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/export/runner");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .map(|name| format!("tchbook_runner/{name}"))
            .collect();
        on_disk.push("tchbook_runner.rs".to_owned());
        on_disk.sort();
        let mut carried: Vec<String> = RUNNER.iter().map(|(path, _)| path.to_string()).collect();
        carried.sort();
        assert_eq!(
            carried, on_disk,
            "list every file of src/export/runner/ in RUNNER"
        );
    }
}
