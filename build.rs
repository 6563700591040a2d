//! Packs the prelude crate's sources into the kernel binary, and the export runner's (written
//! into every exported project: `RUNNER_FILES`).
//!
//! The kernel writes these files into its build cache at start, so a binary installed with
//! `cargo install --path .` works without the checkout. The prelude inherits `version`,
//! `edition`, ... from this workspace; a copy outside the workspace cannot, so inherited keys
//! are replaced here by the workspace's values.
//!
//! The workspace crates the prelude depends on by path ([`EMBEDDED_CRATES`], `path = "../NAME"`
//! in `prelude/Cargo.toml`) travel inside the prelude's copy, as `NAME/`, and the copy's
//! manifest points there (`path = "NAME"`). Whatever writes the prelude's files (the build
//! cache, `tchbook export`) then writes them too, and the cache's stamp of the prelude covers
//! them; in the workspace, and with `TCHBOOK_PRELUDE_DIR` or `export --prelude` naming a
//! checkout, `../NAME` is the workspace's crate.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Workspace crates the prelude depends on by path, embedded inside its copy.
const EMBEDDED_CRATES: &[&str] = &["wire", "fetch", "derive"];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // A directory here makes cargo rescan every file under it, so edits, new files and
    // deletions in prelude/ (and the embedded crates) all re-embed.
    println!("cargo:rerun-if-changed=prelude");
    for name in EMBEDDED_CRATES {
        println!("cargo:rerun-if-changed={name}");
    }
    println!("cargo:rerun-if-changed=runner");
    println!("cargo:rerun-if-changed=waits");
    println!("cargo:rerun-if-changed=Cargo.toml");
    // The evaluation process's blocking calls (waits/src/lib.rs, src/evaluation/futex.rs) and its stdin's entry for the
    // prelude (src/evaluation/stdin.rs): every function defined there under
    // `#[unsafe(no_mangle)]` is exported, so that the cells' libraries, loaded later, call these
    // rather than glibc's, and the prelude finds its entries.
    for file in [
        "waits/src/lib.rs",
        "src/evaluation/futex.rs",
        "src/evaluation/stdin.rs",
    ] {
        println!("cargo:rerun-if-changed={file}");
        let source = std::fs::read_to_string(manifest_dir.join(file)).unwrap();
        let mut lines = source.lines();
        while let Some(line) = lines.next() {
            if line.trim() != "#[unsafe(no_mangle)]" {
                continue;
            }
            let definition = lines.next().unwrap_or_default();
            let name = definition
                .split("fn ")
                .nth(1)
                .and_then(|rest| rest.split('(').next())
                .unwrap_or_else(|| panic!("{file}: no function after no_mangle: {definition}"));
            println!("cargo:rustc-link-arg-bin=tchbook=-Wl,--export-dynamic-symbol={name}");
        }
    }

    let workspace_values = workspace_package_values(&manifest_dir.join("Cargo.toml"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut out = String::from("pub(crate) static PRELUDE_FILES: &[(&str, &[u8])] = &[\n");
    // (directory in the workspace, directory in the prelude's copy)
    let crates = std::iter::once(("prelude", "")).chain(EMBEDDED_CRATES.iter().map(|n| (*n, *n)));
    for (source, inside) in crates {
        let root = manifest_dir.join(source);
        let mut files = Vec::new();
        collect(&root, &root, &mut files);
        files.sort();
        // Paths are written relative to `CARGO_MANIFEST_DIR`/`OUT_DIR` as rustc sees them,
        // never absolute: a target directory shared by two checkouts (a CI clone and a working
        // tree, say) keeps this script's output when the other checkout's files are older, and
        // absolute paths would then embed the other checkout's prelude, or fail once it is gone.
        for relative in &files {
            let embedded = if relative == "Cargo.toml" {
                let text = std::fs::read_to_string(root.join(relative)).unwrap();
                let text = detach_from_workspace(&text, &workspace_values, inside.is_empty());
                let text = if inside.is_empty() {
                    point_at_embedded_crates(&text)
                } else {
                    text
                };
                let standalone = format!("{source}-Cargo.toml");
                std::fs::write(out_dir.join(&standalone), text).unwrap();
                format!("concat!(env!(\"OUT_DIR\"), \"/{standalone}\")")
            } else {
                format!("concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{source}/{relative}\")")
            };
            let path = if inside.is_empty() {
                relative.clone()
            } else {
                format!("{inside}/{relative}")
            };
            writeln!(out, "    ({path:?}, include_bytes!({embedded})),").unwrap();
        }
    }
    out.push_str("];\n");
    std::fs::write(out_dir.join("prelude_files.rs"), out).unwrap();
    for (name, constant) in [("runner", "RUNNER_FILES"), ("waits", "WAITS_FILES")] {
        embed_exported_crate(&manifest_dir, &out_dir, &workspace_values, name, constant);
    }
}

/// The files of `name`, a crate every exported project carries (the runner, and the waits it
/// links), as `constant` in `OUT_DIR/{name}_files.rs` (paths relative to the crate), its
/// manifest detached from the workspace (an exported project makes it a member of its own).
fn embed_exported_crate(
    manifest_dir: &Path,
    out_dir: &Path,
    workspace_values: &[(String, String)],
    name: &str,
    constant: &str,
) {
    let root = manifest_dir.join(name);
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut out = format!("pub(crate) static {constant}: &[(&str, &[u8])] = &[\n");
    for relative in &files {
        let embedded = if relative == "Cargo.toml" {
            let text = std::fs::read_to_string(root.join(relative)).unwrap();
            let text = detach_from_workspace(&text, workspace_values, false);
            std::fs::write(out_dir.join(format!("{name}-Cargo.toml")), text).unwrap();
            format!("concat!(env!(\"OUT_DIR\"), \"/{name}-Cargo.toml\")")
        } else {
            format!("concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{name}/{relative}\")")
        };
        writeln!(out, "    ({relative:?}, include_bytes!({embedded})),").unwrap();
    }
    out.push_str("];\n");
    std::fs::write(out_dir.join(format!("{name}_files.rs")), out).unwrap();
}

/// The prelude's manifest with `path = "../NAME"` of each embedded crate made `path = "NAME"`.
fn point_at_embedded_crates(manifest: &str) -> String {
    let mut text = manifest.to_owned();
    for name in EMBEDDED_CRATES {
        let workspace_path = format!("path = \"../{name}\"");
        assert!(
            text.contains(&workspace_path),
            "prelude/Cargo.toml must depend on {name} with `{workspace_path}` (build.rs embeds it)"
        );
        text = text.replace(&workspace_path, &format!("path = \"{name}\""));
    }
    text
}

/// Every file of the crate a build needs: sources, manifest, build script, data under `src/`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            !(name.starts_with('.') || name == "target" || name == "Cargo.lock")
        });
    for entry in entries
        .flatten()
        .filter(|entry| !entry.file_type().is_dir())
    {
        let relative = entry.path().strip_prefix(root).unwrap();
        files.push(relative.to_string_lossy().into_owned());
    }
}

/// `key = value` lines of `[workspace.package]`.
fn workspace_package_values(root_manifest: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root_manifest).unwrap();
    let mut in_section = false;
    let mut values = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            in_section = trimmed == "[workspace.package]";
            continue;
        }
        if in_section && let Some((key, value)) = trimmed.split_once('=') {
            values.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    values
}

/// `manifest` with inherited keys replaced by the workspace's values; `root` adds an empty
/// `[workspace]` (for the prelude; the crates embedded inside it belong to its workspace).
fn detach_from_workspace(manifest: &str, values: &[(String, String)], root: bool) -> String {
    let mut out = String::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed.to_owned();
        }
        if section == "[lints]" && trimmed.replace(' ', "") == "workspace=true" {
            continue;
        }
        let compact = trimmed.replace(' ', "");
        if let Some(key) = compact.strip_suffix(".workspace=true")
            && let Some((_, value)) = values.iter().find(|(k, _)| k == key)
        {
            writeln!(out, "{key} = {value}").unwrap();
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if root && (section.is_empty() || !manifest.contains("[workspace]")) {
        // An empty workspace table makes the copy its own root, so cargo never walks up into
        // an unrelated workspace above the cache directory.
        out.push_str("\n[workspace]\n");
    }
    out
}
