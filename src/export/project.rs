//! Writing the exported Cargo project: the manifest and `src/main.rs` (`generate.rs`), the
//! seeded lock file, the build script, the runner's and its waits' sources, and the prelude's
//! (unless `--prelude`).

use super::ExportOptions;
use super::generate::{main_rs, manifest, package_name};
use super::notebook::{read_code_cells, source_commit};
use super::translate::translate;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

// The runner every exported project carries (the `runner/` crate), as `RUNNER_FILES`, and the
// waits it links (`waits/`), as `WAITS_FILES`: paths relative to the crate, and their contents.
include!(concat!(env!("OUT_DIR"), "/runner_files.rs"));
include!(concat!(env!("OUT_DIR"), "/waits_files.rs"));
/// Where the runner goes in a project, and how its manifest names `tchbook-wire` in the workspace.
const RUNNER_DIR: &str = "tchbook-runner";
const RUNNER_WIRE: &str = "path = \"../wire\"";
/// Where the waits go in a project, and how the runner's manifest names them in the workspace.
const WAITS_DIR: &str = "tchbook-waits";
const RUNNER_WAITS: &str = "path = \"../waits\"";
/// The project's build script: the prelude looks up the waits' registration with `dlsym`
/// (`tchbook_waits::tchbook_interruptible_waits`), which finds only names the executable exports.
const BUILD_RS: &str = "\
//! Written by `tchbook export`: exports the name the prelude looks up to make a cell's sleeps,
//! reads and waits end at Ctrl-C (the `tchbook-waits` crate, linked by the runner).
fn main() {
    println!(\"cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=tchbook_interruptible_waits\");
}
";
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
    let stem = name.strip_suffix(".ipynb").unwrap_or(&name).to_owned();
    // The stem names the project's directory beside the notebook: an empty one (`.ipynb`) or
    // a dot one (`..ipynb`) would name the notebook's own directory or its parent.
    if stem.is_empty() || stem.chars().all(|c| c == '.') {
        bail!(
            "the notebook's name {name:?} has no stem to name its project by; rename the \
             notebook (e.g. notebook.ipynb)"
        );
    }
    let out_dir = match &options.out_dir {
        Some(dir) => dir.clone(),
        None => notebook.with_file_name(&stem),
    };
    if !options.force {
        refuse_foreign_dir(&out_dir)?;
    }
    let translation = translate(&cells)?;
    let package = package_name(&stem);

    std::fs::create_dir_all(out_dir.join("src"))
        .with_context(|| format!("creating {}", out_dir.display()))?;
    let prelude_path = prelude(options.prelude.as_deref(), &out_dir)?;
    let wire_path = wire(&out_dir, &prelude_path)?;
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
        main_rs(&name, source_commit(notebook).as_deref(), &translation).as_bytes(),
    )?;
    write_runner(&out_dir, &wire_path)?;
    write_if_changed(&out_dir.join("build.rs"), BUILD_RS.as_bytes())?;
    // An export from before the runner was a crate left it in src/.
    let _ = std::fs::remove_file(out_dir.join("src/tchbook_runner.rs"));
    let _ = std::fs::remove_dir_all(out_dir.join("src/tchbook_runner"));
    Ok(out_dir)
}

/// Refuses `dir` unless it is missing, empty, or a project `tchbook export` wrote (its
/// Cargo.toml has the `[package.metadata.tchbook]` mark, or, from before the mark, the header
/// comment every export's manifest starts with): exporting overwrites `Cargo.toml` and
/// `src/main.rs`, which in someone's own project would be lost.
fn refuse_foreign_dir(dir: &Path) -> Result<()> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error).with_context(|| format!("reading {}", dir.display())),
    };
    if entries.next().is_none() || is_export(&dir.join("Cargo.toml")) {
        return Ok(());
    }
    bail!(
        "{} is not empty and is not a project `tchbook export` wrote (no Cargo.toml with \
         [package.metadata.tchbook] exported = true): exporting there would overwrite its \
         Cargo.toml and src/main.rs. Name a new or empty directory with --out, or pass --force \
         to write into this one anyway",
        dir.display()
    )
}

/// Whether `manifest` is the Cargo.toml of an exported project.
fn is_export(manifest: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(manifest) else {
        return false;
    };
    if text.starts_with("# Written by `tchbook export`") {
        return true;
    }
    let marked = |table: toml::Table| {
        table
            .get("package")?
            .get("metadata")?
            .get("tchbook")?
            .get("exported")?
            .as_bool()
    };
    toml::from_str(&text).ok().and_then(marked) == Some(true)
}

/// The prelude's path as the manifest names it: the `--prelude` checkout, or a copy of the
/// embedded prelude written into the project.
fn prelude(checkout: Option<&Path>, out_dir: &Path) -> Result<String> {
    let Some(dir) = checkout else {
        // As the build cache writes it: files an earlier export wrote and this prelude no longer
        // has are removed (a `runtime.rs` beside the `runtime/mod.rs` that replaced it).
        crate::cellbuild::cache::write_prelude_copy(&out_dir.join("tchbook-prelude"))?;
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

/// The path of `tchbook-wire` as the manifest names it: where the prelude's own manifest has it
/// (the runner reads the prelude's lines with the same crate, and cargo would refuse two
/// packages of that name at different paths): inside the embedded copy, or beside a checkout.
fn wire(out_dir: &Path, prelude: &str) -> Result<String> {
    let manifest = out_dir.join(prelude).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let table: toml::Table = toml::from_str(&text)
        .with_context(|| format!("{} is not a Cargo manifest", manifest.display()))?;
    let path = table
        .get("dependencies")
        .and_then(|d| d.get("tchbook-wire"))
        .and_then(|w| w.get("path"))
        .and_then(|p| p.as_str())
        .with_context(|| {
            format!(
                "{} has no `tchbook-wire = {{ path = ... }}` dependency: the prelude is older \
                 than this tchbook ({}); name a prelude of the same checkout",
                manifest.display(),
                crate::VERSION
            )
        })?;
    let wire = Path::new(prelude).join(path);
    if wire.is_relative() {
        // Inside the project, as the prelude's copy: it builds wherever it is copied.
        return Ok(wire.display().to_string());
    }
    let wire = std::fs::canonicalize(&wire).with_context(|| {
        format!(
            "{} names tchbook-wire at {}, which is missing",
            manifest.display(),
            wire.display()
        )
    })?;
    Ok(wire.display().to_string())
}

/// Writes the runner crate into the project, its `tchbook-wire` dependency pointed at `wire`
/// (relative to the project, or absolute): the prelude's, since cargo refuses two packages of
/// one name at different paths; and the waits crate beside it.
fn write_runner(out_dir: &Path, wire: &str) -> Result<()> {
    let wire = if Path::new(wire).is_relative() {
        format!("../{wire}")
    } else {
        wire.to_owned()
    };
    write_crate(&out_dir.join(WAITS_DIR), WAITS_FILES, |manifest| manifest)?;
    write_crate(&out_dir.join(RUNNER_DIR), RUNNER_FILES, |manifest| {
        assert!(
            manifest.contains(RUNNER_WIRE) && manifest.contains(RUNNER_WAITS),
            "runner/Cargo.toml names wire and waits so"
        );
        manifest
            .replace(RUNNER_WIRE, &format!("path = {wire:?}"))
            .replace(RUNNER_WAITS, &format!("path = \"../{WAITS_DIR}\""))
    })
}

/// Writes an embedded crate's `files` into `dir`, its manifest through `manifest`.
fn write_crate(
    dir: &Path,
    files: &[(&str, &[u8])],
    manifest: impl Fn(String) -> String,
) -> Result<()> {
    for (relative, contents) in files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        if *relative == "Cargo.toml" {
            let text = manifest(String::from_utf8_lossy(contents).into_owned());
            write_if_changed(&path, text.as_bytes())?;
        } else {
            write_if_changed(&path, contents)?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporting_again_removes_prelude_files_the_kernel_no_longer_embeds() {
        let dir_temp = tempfile::Builder::new()
            .prefix("tchbook-export-test-")
            .tempdir()
            .unwrap();
        let dir = dir_temp.path().to_path_buf();
        let notebook = dir.join("n.ipynb");
        std::fs::create_dir_all(&dir).unwrap();
        let cells = r#"{"cells": [{"cell_type": "code", "source": "1 + 1", "metadata": {}}]}"#;
        std::fs::write(&notebook, cells).unwrap();
        let options = ExportOptions {
            notebook,
            out_dir: None,
            prelude: None,
            force: false,
        };
        let project = export(&options).unwrap();
        let stale = project.join("tchbook-prelude/src/runtime_old/mod.rs");
        std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
        std::fs::write(&stale, "").unwrap();
        export(&options).unwrap();
        assert!(
            !stale.parent().unwrap().exists(),
            "the stale module is gone"
        );
        assert!(project.join("tchbook-prelude/src/lib.rs").is_file());
        // The runner reads the prelude's lines with the prelude's own copy of the wire crate.
        let runner = std::fs::read_to_string(project.join("tchbook-runner/Cargo.toml")).unwrap();
        assert!(
            runner.contains("tchbook-wire = { path = \"../tchbook-prelude/wire\" }"),
            "{runner}"
        );
        assert!(project.join("tchbook-runner/src/lib.rs").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A one-cell notebook named `name` in a fresh directory of its own.
    fn notebook(test: &str, name: &str) -> PathBuf {
        let dir = tempfile::Builder::new()
            .prefix(&format!("tchbook-export-{test}-"))
            .tempdir()
            .unwrap()
            .keep();
        let notebook = dir.join(name);
        let cells = r#"{"cells": [{"cell_type": "code", "source": "1 + 1", "metadata": {}}]}"#;
        std::fs::write(&notebook, cells).unwrap();
        notebook
    }

    fn options(notebook: &Path, out_dir: Option<&Path>, force: bool) -> ExportOptions {
        ExportOptions {
            notebook: notebook.to_owned(),
            out_dir: out_dir.map(Path::to_owned),
            prelude: None,
            force,
        }
    }

    #[test]
    fn a_directory_that_is_not_an_export_is_refused_unless_forced() {
        let notebook = notebook("foreign", "n.ipynb");
        let project = notebook.with_file_name("mine");
        std::fs::create_dir_all(project.join("src")).unwrap();
        let manifest = "[package]\nname = \"mine\"\nversion = \"1.0.0\"\n";
        std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();

        let refused = export(&options(&notebook, Some(&project), false)).unwrap_err();
        let message = format!("{refused:#}");
        assert!(
            message.contains("is not a project `tchbook export` wrote"),
            "{message}"
        );
        assert!(message.contains("--force"), "{message}");
        assert_eq!(
            std::fs::read_to_string(project.join("Cargo.toml")).unwrap(),
            manifest
        );
        assert_eq!(
            std::fs::read_to_string(project.join("src/main.rs")).unwrap(),
            "fn main() {}\n"
        );
        // Any file at all makes a directory someone's: nothing is known to be safe to overwrite.
        let other = notebook.with_file_name("notes");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("todo.txt"), "").unwrap();
        assert!(export(&options(&notebook, Some(&other), false)).is_err());

        export(&options(&notebook, Some(&project), true)).unwrap();
        assert!(is_export(&project.join("Cargo.toml")));
        std::fs::remove_dir_all(notebook.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_earlier_export_or_an_empty_directory_is_exported_into() {
        let notebook = notebook("again", "n.ipynb");
        let empty = notebook.with_file_name("empty");
        std::fs::create_dir_all(&empty).unwrap();
        export(&options(&notebook, Some(&empty), false)).unwrap();
        let manifest = std::fs::read_to_string(empty.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("[package.metadata.tchbook]\nexported = true\n"),
            "{manifest}"
        );
        export(&options(&notebook, Some(&empty), false)).unwrap();
        // An export written before the mark existed is known by its manifest's first line.
        let older = manifest.replace("[package.metadata.tchbook]\nexported = true\n", "");
        std::fs::write(empty.join("Cargo.toml"), older).unwrap();
        export(&options(&notebook, Some(&empty), false)).unwrap();
        std::fs::remove_dir_all(notebook.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_notebook_without_a_stem_is_refused_before_anything_is_written() {
        for name in [".ipynb", "..ipynb", "...ipynb"] {
            let notebook = notebook("stem", name);
            let dir = notebook.parent().unwrap();
            let refused = format!("{:#}", export(&options(&notebook, None, true)).unwrap_err());
            assert!(refused.contains("has no stem"), "{name}: {refused}");
            let entries: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
            assert_eq!(entries.len(), 1, "{name}: only the notebook is there");
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
