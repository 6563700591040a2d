//! The text of the two generated files of an exported project: its `Cargo.toml` and its
//! `src/main.rs`, which holds the translated cells and hands them to the runner.

use super::translate::Translation;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `01-using-the-gpu` → `nb-01-using-the-gpu` (a package name starts with a letter).
pub(super) fn package_name(stem: &str) -> String {
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

pub(super) fn manifest(
    package: &str,
    prelude: &str,
    dependencies: &BTreeMap<String, String>,
) -> String {
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
         # Marks a project `tchbook export` wrote: it exports into this directory again, and\n\
         # into no other that is not empty without --force.\n\
         [package.metadata.tchbook]\n\
         exported = true\n\
         \n\
         [dependencies]\n\
         tchbook-prelude = {{ path = {prelude:?} }}\n\
         tchbook-runner = {{ path = \"tchbook-runner\" }}\n",
        version = crate::VERSION,
    );
    for (name, spec) in dependencies {
        if matches!(name.as_str(), "tchbook-prelude" | "tchbook-runner") {
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

pub(super) fn main_rs(notebook: &str, commit: Option<&str>, translation: &Translation) -> String {
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
         use tchbook_prelude::prelude::*;\n\
         use tchbook_runner::CellError;\n\
         \n\
         static NOTEBOOK: tchbook_runner::Notebook = tchbook_runner::Notebook {{\n\
         \x20   name: {notebook:?},\n\
         \x20   exported_by: \"tchbook {version}\",\n\
         \x20   commit: {commit:?},\n\
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
}
