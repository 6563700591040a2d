//! Replaying a record: the recorded rustc command run on the current cell, speaking cargo's
//! JSON to evcxr.

use super::record::{Record, absolute, save};
use super::{CELL_CRATE, CHECK_DIR, debug_source};
use crate::cellbuild::env;
use crate::cellbuild::link::{self, LinkPlan};
use anyhow::{Context, Result};
use ra_ap_syntax::ast::{self, HasModuleItem, HasName};
use ra_ap_syntax::{Edition, SourceFile};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs the recorded rustc on the current cell (only type-checking it for `check`); speaks
/// cargo's JSON to evcxr. `path` is the record's file, rewritten when a build learns or drops
/// its link plan.
pub(super) fn replay(mut record: Record, path: &Path, dir: &Path, check: bool) -> Result<i32> {
    let mut args: Vec<String> = record.args.iter().map(|arg| absolute(arg, dir)).collect();
    if !check && !defines_items(&dir.join("src").join("lib.rs")) {
        // An incremental session keeps what rustc learnt about the items a notebook defined
        // (its functions, types, impls), which evcxr puts into every later cell's crate; a
        // crate without any is all new to rustc each time, and the session's dependency graph,
        // loaded and saved, cost 10 ms of a 100 ms cell: bench/NOTES.md ("An incremental
        // session only where it pays"). Without a session to keep, one codegen unit is
        // cheaper than sixteen (one LLVM module and object for what is a few functions):
        // bench/NOTES.md ("Cells at opt-level 0").
        args = with_one_codegen_unit(without_incremental(args));
    }
    let planned = if check {
        let source = std::env::var_os(env::CHECK_SOURCE).map(PathBuf::from);
        args = check_arguments(args, dir, source.as_deref());
        std::fs::create_dir_all(dir.join(CHECK_DIR))
            .with_context(|| format!("creating {}", dir.join(CHECK_DIR).display()))?;
        None
    } else {
        record.link_plan.as_ref().and_then(|plan| plan.usable(dir))
    };
    // A build without a usable plan prints its linker command, so that the next one has one.
    let learning = !check && planned.is_none() && record.link_plan != Some(LinkPlan::Full);
    let mut command = rustc_command(&record, &args, dir, check, planned.as_ref())?;
    if learning {
        command.args(link::PRINT_LINK_ARGS).stdout(Stdio::piped());
    }
    let ran = run_rustc(command, planned.is_some(), &args[0])?;
    if !ran.success && ran.plan_failed {
        // Not the cell's fault: link it as rustc would, from now on.
        note(&format!(
            "linking with the recorded plan failed; linking as rustc does from now on ({})",
            path.display()
        ));
        record.link_plan = Some(LinkPlan::Full);
        save(&record, path);
        return replay(record, path, dir, check);
    }
    let mut err = std::io::stderr().lock();
    for line in &ran.diagnostics {
        writeln!(err, "{line}")?;
    }
    err.flush()?;
    if !ran.success {
        return Ok(101);
    }
    if let Some(printed) = ran.printed {
        record.link_plan = Some(link::plan(&printed, dir).unwrap_or_else(|error| {
            note(&format!("no link plan: {error:#}"));
            LinkPlan::Full
        }));
        save(&record, path);
    }
    report_artifacts(dir, &ran.artifacts)?;
    Ok(0)
}

/// The recorded rustc command for the current cell, with the recorded environment; a check
/// asks for full type paths, a planned build links through this binary.
fn rustc_command(
    record: &Record,
    args: &[String],
    dir: &Path,
    check: bool,
    planned: Option<&LinkPlan>,
) -> Result<Command> {
    let mut command = Command::new(&args[0]);
    command
        .args(&args[1..])
        .current_dir(dir)
        .env_remove(env::CARGO_MAKEFLAGS)
        .env_remove(env::MAKEFLAGS)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in &record.env {
        command.env(name, absolute(value, dir));
    }
    if check {
        // evcxr's checks are the kernel's type probes (vendor/README.md): types in their
        // messages by full path, so that a cell can name them. Unstable, hence the bootstrap
        // switch, as rust-analyzer uses it for its own queries; a rustc without the flag
        // fails the check and the kernel asks rust-analyzer instead.
        command
            .arg("-Ztrim-diagnostic-paths=false")
            .env(env::RUSTC_BOOTSTRAP, "1");
    }
    if !check
        && args
            .iter()
            .any(|arg| arg == "opt-level=0" || arg == "opt-level=1")
    {
        // At the kernel's opt-level, no ThinLTO across the cell's codegen units: rustc runs it
        // on every cell at opt-level 1 and up (cargo's `lto = false`), 5-8 ms of a 70-110 ms
        // build for cells whose code is mostly calls into the prelude and libtorch, which are
        // optimized already. `:opt 2` and `:opt 3` keep it, for cells whose own loops matter.
        command.args(["-C", "lto=off"]);
    }
    if !check && let Some(source) = debug_source(dir) {
        // The debugger's build: full debug information (cargo's profile strips it), its lines
        // under the cell's own path. The dependencies are untouched (their fingerprints would
        // change with any flag cargo passed them).
        command
            .args(["-C", "debuginfo=2", "-C", "strip=none"])
            .arg(format!("--remap-path-prefix=src/lib.rs={source}"));
    }
    if let Some(plan) = planned {
        // This binary is the linker, and hands the real one the planned command (`link`).
        let me = std::env::current_exe().context("finding this program, the planned linker")?;
        command
            .arg("-C")
            .arg(format!("linker={}", me.display()))
            .env(env::LINK_PLAN, serde_json::to_string(plan)?);
    }
    Ok(command)
}

/// What one rustc run said.
struct Ran {
    success: bool,
    /// The libraries it wrote (rustc's `artifact` notifications).
    artifacts: Vec<String>,
    /// Its other stderr lines, for evcxr.
    diagnostics: Vec<String>,
    /// Whether an error blames the link plan rather than the cell.
    plan_failed: bool,
    /// The linker command it printed, when asked to.
    printed: Option<String>,
}

/// Runs rustc, reading its stderr (and, when it prints its linker command, its stdout).
fn run_rustc(mut command: Command, planned: bool, rustc: &str) -> Result<Ran> {
    let mut child = command
        .spawn()
        .with_context(|| format!("running {rustc}"))?;
    // The linker command is one line, but a long one: read it beside stderr so that neither
    // pipe can fill up and stall rustc.
    let printed = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
        })
    });
    let mut ran = Ran {
        success: false,
        artifacts: Vec::new(),
        diagnostics: Vec::new(),
        plan_failed: false,
        printed: None,
    };
    for line in BufReader::new(child.stderr.take().expect("piped stderr")).lines() {
        let line = line?;
        if let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) {
            if message["$message_type"] == "artifact" && message["emit"] == "link" {
                ran.artifacts
                    .extend(message["artifact"].as_str().map(str::to_owned));
                continue;
            }
            if planned && message["level"] == "error" {
                ran.plan_failed |= message["message"]
                    .as_str()
                    .is_some_and(link::blames_the_plan);
            }
        }
        ran.diagnostics.push(line);
    }
    ran.success = child.wait()?.success();
    ran.printed = printed.and_then(|reader| reader.join().ok()?.ok());
    Ok(ran)
}

/// cargo's messages for a finished build of the cell crate, which is what evcxr reads.
fn report_artifacts(dir: &Path, artifacts: &[String]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let artifact = serde_json::json!({
        "reason": "compiler-artifact",
        "manifest_path": dir.join("Cargo.toml"),
        "target": {"name": CELL_CRATE, "kind": ["cdylib"], "crate_types": ["cdylib"]},
        "filenames": artifacts,
        "fresh": false,
    });
    writeln!(out, "{artifact}")?;
    writeln!(
        out,
        "{}",
        serde_json::json!({"reason": "build-finished", "success": true})
    )?;
    Ok(())
}

/// A line on stderr, which evcxr reads as cargo's: it shows lines that are not JSON only when
/// a build fails, beside the errors.
fn note(text: &str) {
    eprintln!("tchbook (cargo front end): {text}");
}

/// rustc's arguments without an incremental session (`-C incremental=DIR`).
fn without_incremental(args: Vec<String>) -> Vec<String> {
    without_codegen_option(args, "incremental")
}

/// rustc's arguments with one codegen unit, in place of the recorded count or after it.
fn with_one_codegen_unit(args: Vec<String>) -> Vec<String> {
    let mut out = without_codegen_option(args, "codegen-units");
    out.push("-C".to_owned());
    out.push("codegen-units=1".to_owned());
    out
}

/// rustc's arguments without the codegen option `name`, in either spelling (`-C name=…`,
/// `-Cname=…`).
fn without_codegen_option(args: Vec<String>, name: &str) -> Vec<String> {
    let prefix = format!("{name}=");
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg
            .strip_prefix("-C")
            .is_some_and(|rest| rest.starts_with(&prefix))
        {
            continue;
        }
        if arg == "-C" && args.peek().is_some_and(|next| next.starts_with(&prefix)) {
            args.next();
            continue;
        }
        out.push(arg);
    }
    out
}

/// Whether the cell crate at `lib` holds items the notebook defined: anything but the `use`
/// declarations and what evcxr writes for every cell (its entry point, the variable store's
/// module). A crate that cannot be read or parsed counts as holding some.
fn defines_items(lib: &Path) -> bool {
    let Ok(source) = std::fs::read_to_string(lib) else {
        return true;
    };
    let parsed = SourceFile::parse(&source, Edition::Edition2024);
    if !parsed.errors().is_empty() {
        return true;
    }
    parsed.tree().items().any(|item| match item {
        ast::Item::Use(_) | ast::Item::ExternCrate(_) => false,
        ast::Item::Module(module) => module
            .name()
            .is_none_or(|name| name.text() != "evcxr_internal_runtime"),
        ast::Item::Fn(function) => function
            .name()
            .is_none_or(|name| !name.text().starts_with("run_user_code_")),
        _ => true,
    })
}

/// A build's rustc arguments turned into a type check: metadata instead of the library, into
/// a directory of its own, and no incremental session (it would be the build's, and a check
/// would overwrite it). A check may run while the cell is built (evcxr's type probe, beside
/// the build: vendor/README.md), so nothing it writes may be the build's; `source` is the
/// file it checks in place of `src/lib.rs`, if evcxr named one.
fn check_arguments(build: Vec<String>, dir: &Path, source: Option<&Path>) -> Vec<String> {
    let lib = dir.join("src").join("lib.rs");
    let mut out = Vec::with_capacity(build.len());
    let mut args = without_incremental(build).into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--out-dir" || arg.starts_with("--out-dir=") {
            if arg == "--out-dir" {
                args.next();
            }
            out.push("--out-dir".to_owned());
            out.push(dir.join(CHECK_DIR).to_string_lossy().into_owned());
            continue;
        }
        if let Some(emit) = arg.strip_prefix("--emit=") {
            let kinds: Vec<&str> = emit
                .split(',')
                .map(|kind| if kind == "link" { "metadata" } else { kind })
                .collect();
            out.push(format!("--emit={}", kinds.join(",")));
            continue;
        }
        if let Some(source) = source.filter(|_| dir.join(&arg) == lib) {
            out.push(source.to_string_lossy().into_owned());
            continue;
        }
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incremental_session_is_dropped_in_either_spelling() {
        let recorded: Vec<String> = [
            "rustc",
            "-C",
            "opt-level=1",
            "-C",
            "incremental=/b/target/debug/incremental",
            "-Cincremental=/b/elsewhere",
            "-C",
            "codegen-units=16",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            without_incremental(recorded),
            ["rustc", "-C", "opt-level=1", "-C", "codegen-units=16"]
        );
    }

    #[test]
    fn a_build_without_a_session_has_one_codegen_unit_whatever_was_recorded() {
        let recorded: Vec<String> = [
            "rustc",
            "-C",
            "codegen-units=16",
            "-Ccodegen-units=4",
            "-C",
            "opt-level=0",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            with_one_codegen_unit(recorded),
            ["rustc", "-C", "opt-level=0", "-C", "codegen-units=1"]
        );
        let unrecorded: Vec<String> = ["rustc", "src/lib.rs"].map(String::from).to_vec();
        assert_eq!(
            with_one_codegen_unit(unrecorded),
            ["rustc", "src/lib.rs", "-C", "codegen-units=1"]
        );
    }

    /// A cell crate as evcxr writes it: the variable store's module when the notebook has
    /// variables, `items` at the top, the cell's entry point last.
    fn cell_crate(items: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let source = format!(
            "#![allow(unused_imports, unused_mut, dead_code)]\n\
             use tchbook_prelude::prelude::*;\n\
             mod evcxr_internal_runtime {{\n\
             pub use ::tchbook_prelude::runtime::variables::*;\n\
             }}\n\
             {items}\n\
             #[unsafe(no_mangle)]\n\
             pub extern \"C\" fn run_user_code_7(s: *mut u8) -> *mut u8 {{\n\
             ::tchbook_prelude::runtime::run_cell(::std::boxed::Box::new(||{{ (1 + 1).evcxr_display(); }}));\n\
             s\n}}\n"
        );
        std::fs::write(dir.path().join("lib.rs"), source).unwrap();
        dir
    }

    #[test]
    fn only_a_notebook_that_defined_items_keeps_an_incremental_session() {
        let lib = |items: &str| defines_items(&cell_crate(items).path().join("lib.rs"));
        assert!(!lib(""), "evcxr's own code is not the notebook's items");
        assert!(!lib("use std::collections::HashMap;\nextern crate core;"));
        for item in [
            "fn criterion(x: &Tensor) -> Tensor { x.relu() }",
            "#[derive(Debug)] struct Net { fc: nn::Linear }",
            "enum Phase { Train, Eval }",
            "impl Default for Phase { fn default() -> Self { Phase::Train } }",
            "trait Model {}",
            "const STEPS: usize = 10;",
            "macro_rules! twice { ($e:expr) => { $e * 2 } }",
            "mod helpers { pub fn one() -> i32 { 1 } }",
        ] {
            assert!(lib(item), "{item}");
        }
        let missing = tempfile::tempdir().unwrap();
        assert!(defines_items(&missing.path().join("lib.rs")));
        let broken = cell_crate("fn broken( {");
        assert!(defines_items(&broken.path().join("lib.rs")));
    }

    #[test]
    fn a_check_is_the_build_without_its_library_beside_the_build() {
        let build: Vec<String> = [
            "rustc",
            "--crate-name",
            "ctx",
            "--emit=dep-info,link",
            "-C",
            "opt-level=1",
            "-C",
            "incremental=/b/target/incremental",
            "--out-dir",
            "/b/target/debug/deps",
            "src/lib.rs",
        ]
        .map(String::from)
        .to_vec();
        let dir = Path::new("/b");
        let expected = |source: &'static str| {
            [
                "rustc",
                "--crate-name",
                "ctx",
                "--emit=dep-info,metadata",
                "-C",
                "opt-level=1",
                "--out-dir",
                "/b/target/tchbook-check",
                source,
            ]
        };
        assert_eq!(
            check_arguments(build.clone(), dir, None),
            expected("src/lib.rs")
        );
        assert_eq!(
            check_arguments(build, dir, Some(Path::new("/b/src/check.rs"))),
            expected("/b/src/check.rs")
        );
    }
}
