//! The cargo front end: what evcxr runs in cargo's place to build a cell.
//!
//! evcxr builds every cell with `cargo build`. With the prelude's ~150 dependency crates, cargo
//! spends 0.5–1 s checking that every one of them is fresh before it runs rustc once, on the cell
//! crate: most of a trivial cell's time. The kernel points evcxr at this binary instead
//! (`EVCXR_CARGO`, a one-line patch in vendor/evcxr) and names the real cargo in
//! [`REAL_CARGO_ENV`]. Then, for `build` and `check`:
//!
//! - The first time for a given manifest, lock file, cargo config and environment, the real
//!   cargo runs with this binary as its `RUSTC_WORKSPACE_WRAPPER`. Cargo applies that wrapper to
//!   the cell crate only (the one workspace member), so the dependencies' fingerprints are
//!   untouched; the wrapper writes down the exact rustc command and environment cargo chose for
//!   the cell, then runs it.
//! - Every later build with the same inputs runs that recorded rustc command directly: same
//!   arguments, same environment, the cell's new `src/lib.rs`. rustc's JSON diagnostics go to
//!   stderr as cargo would relay them, and the library's path goes to stdout as cargo's
//!   `compiler-artifact` message, which is what evcxr reads.
//! - A `check` is that same command emitting metadata only, into a directory of its own (it may
//!   run beside a build). evcxr's checks are the kernel's type probes (vendor/README.md), so they
//!   also ask rustc for full type paths. cargo's own `check` would type-check every dependency
//!   again first (minutes), and never runs here while a build record exists.
//! - A record also carries a link plan (`link.rs`): the dependencies linked once into a shared
//!   library, which later cells link against instead of ~100 rlibs and libtorch.
//!
//! A record is only replayed while everything it names still exists, and all records are
//! dropped when a real cargo run rebuilds any dependency (a `:dep` that changes features, a
//! toolchain update). Paths inside the build directory are stored relative to it, so records
//! travel with the build template into every kernel's slot (`cache.rs`). Anything else
//! (`clean`, `metadata`, a `RUSTC_WRAPPER` such as evcxr's `:cache`) goes to the real cargo
//! untouched.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod link;
use link::LinkPlan;

/// Names the real cargo; set by the kernel for evcxr's cargo runs.
const REAL_CARGO_ENV: &str = "TCHBOOK_REAL_CARGO";
/// What evcxr runs as cargo (the vendored patch reads it).
const EVCXR_CARGO_ENV: &str = "EVCXR_CARGO";
/// Set by the front end for the real cargo's wrapper: where to write the rustc command.
const RECORD_ENV: &str = "TCHBOOK_RECORD_RUSTC";
/// Stands for the build directory in stored records.
const DIR_PLACEHOLDER: &str = "{tchbook-build-dir}";
/// Records kept per build directory (start-up alone uses two manifests).
const MAX_RECORDS: usize = 8;
/// Variables that do not change what rustc is asked to do: cargo's jobserver, and the file
/// evcxr's own rustc wrapper would report the library in (set for builds, not checks).
/// Nor does the file a check is asked to check, nor evcxr being told that it may ask.
const KEY_IGNORES: &[&str] = &[
    "CARGO_MAKEFLAGS",
    "EVCXR_EXECUTION_SO_PATH",
    CHECK_SOURCE_ENV,
    CHECK_SOURCE_SUPPORTED_ENV,
];
/// Set by evcxr (vendored patch) for a `check` of a file other than `src/lib.rs`.
const CHECK_SOURCE_ENV: &str = "EVCXR_CHECK_SOURCE";
/// Tells evcxr that this front end honours [`CHECK_SOURCE_ENV`].
const CHECK_SOURCE_SUPPORTED_ENV: &str = "EVCXR_CHECK_SOURCE_SUPPORTED";
/// Where checks write, under the build directory.
const CHECK_DIR: &str = "target/tchbook-check";
/// The cell crate's name in evcxr's manifest.
const CELL_CRATE: &str = "ctx";

/// The cargo subcommands evcxr runs. A `tchbook` invocation with one of these first, while
/// [`REAL_CARGO_ENV`] is set, is a cargo invocation.
const CARGO_WORDS: &[&str] = &["build", "check", "clean", "metadata", "--offline"];

/// Makes this process's evcxr use the front end. Call from `main` before any thread starts
/// (it sets environment variables). Does nothing where cargo cannot be found: evcxr then
/// reports that itself.
pub fn install() {
    let Some(real) = real_cargo() else {
        return;
    };
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    // Called from `main` before the async runtime and the engine start any thread.
    std::env::set_var(REAL_CARGO_ENV, real);
    std::env::set_var(EVCXR_CARGO_ENV, me);
    std::env::set_var(CHECK_SOURCE_SUPPORTED_ENV, "1");
}

/// If this process was started as the front end, as its rustc wrapper or as a cell's planned
/// linker (`link.rs`), does that job and returns the exit code. Call first thing in `main`
/// (after `evcxr::runtime_hook`).
pub fn dispatch() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if let Some(plan) = std::env::var_os(link::LINKER_ENV) {
        return Some(link::run_as_linker(&plan.to_string_lossy(), args.collect()));
    }
    if let Some(record) = std::env::var_os(RECORD_ENV) {
        let rustc: Vec<OsString> = args.collect();
        return Some(run_wrapper(Path::new(&record), rustc));
    }
    let real = std::env::var_os(REAL_CARGO_ENV)?;
    let first = args.next()?;
    if !CARGO_WORDS.iter().any(|word| first == *word) {
        return None;
    }
    let args: Vec<OsString> = std::iter::once(first).chain(args).collect();
    Some(match run_front(Path::new(&real), &args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tchbook (cargo front end): {error:#}");
            101
        }
    })
}

/// `rustup which cargo`, else `cargo` on PATH: what evcxr itself would run.
fn real_cargo() -> Option<PathBuf> {
    if let Ok(output) = Command::new("rustup").args(["which", "cargo"]).output() {
        let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() && !path.is_empty() {
            return Some(PathBuf::from(path));
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("cargo"))
        .find(|candidate| candidate.is_file())
}

/// A recorded rustc command for the cell crate.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// rustc and its arguments, build-directory paths as [`DIR_PLACEHOLDER`].
    args: Vec<String>,
    /// The variables cargo set for rustc (`CARGO_*`, `OUT_DIR`, the library path).
    env: Vec<(String, String)>,
    /// How later builds link the cell (`link.rs`): made from the linker command rustc printed
    /// for the recorded build, or for the first replayed one where that build failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link_plan: Option<LinkPlan>,
}

fn run_front(real: &Path, args: &[OsString]) -> Result<i32> {
    let dir = std::env::current_dir().context("reading the build directory")?;
    let subcommand = args.iter().find(|arg| *arg != "--offline");
    let replayable = matches!(subcommand, Some(s) if s == "build" || s == "check")
        && args.iter().any(|arg| arg == "--message-format=json")
        && std::env::var_os("RUSTC_WRAPPER").is_none()
        && dir.join("Cargo.toml").is_file();
    if !replayable {
        // Not ours to speed up: become the real cargo.
        let error = Command::new(real).args(args).exec();
        return Err(error).with_context(|| format!("running {}", real.display()));
    }
    let records = dir.join("target").join("tchbook-replay");
    // A `check` is the build's rustc command with metadata for output: cargo's own `check`
    // would first type-check every dependency again (its check units are not its build units).
    let check = subcommand.is_some_and(|s| s == "check");
    let build_args: Vec<OsString> = args
        .iter()
        .map(|arg| {
            if arg == "check" {
                "build".into()
            } else {
                arg.clone()
            }
        })
        .collect();
    let key = inputs_key(&dir, &build_args);
    let path = records.join(format!("{key:016x}.json"));
    if let Some(record) = load(&path, &dir) {
        return replay(record, &path, &dir, check);
    }
    if check {
        // Record the build's command first (the build of a probe fails by design, but rustc
        // has been asked, so the command is known), then check with it.
        record_with_real_cargo(real, &build_args, &dir, &records, key, false)?;
        if let Some(record) = load(&path, &dir) {
            return replay(record, &path, &dir, check);
        }
        let error = Command::new(real).args(args).exec();
        return Err(error).with_context(|| format!("running {}", real.display()));
    }
    record_with_real_cargo(real, args, &dir, &records, key, true)
}

/// Runs the real cargo with the recording wrapper and keeps the record if rustc ran for the
/// cell crate. `relay`: pass cargo's output on (otherwise only its exit code counts).
fn record_with_real_cargo(
    real: &Path,
    args: &[OsString],
    dir: &Path,
    records: &Path,
    key_before: u64,
    relay: bool,
) -> Result<i32> {
    std::fs::create_dir_all(records).with_context(|| format!("creating {}", records.display()))?;
    let pending = records.join(format!("pending-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&pending);
    let mut child = Command::new(real)
        .args(args)
        .env("RUSTC_WORKSPACE_WRAPPER", std::env::current_exe()?)
        .env(RECORD_ENV, &pending)
        .stdout(Stdio::piped())
        .stderr(if relay {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .spawn()
        .with_context(|| format!("running {}", real.display()))?;
    let mut rebuilt_dependency = false;
    let mut out = std::io::stdout().lock();
    for line in BufReader::new(child.stdout.take().expect("piped stdout")).lines() {
        let line = line?;
        if let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) {
            if message["reason"] == "compiler-artifact"
                && message["fresh"] == false
                && message["target"]["name"] != CELL_CRATE
            {
                rebuilt_dependency = true;
            }
        }
        if relay {
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    let status = child.wait()?;
    if rebuilt_dependency {
        clear_records(records, &pending);
    }
    // A failed build still recorded the command when rustc ran for the cell crate (the cell's
    // own error); when a dependency failed, rustc never ran for it and nothing was recorded.
    if status.success() || pending.is_file() {
        let after = records.join(format!("{:016x}.json", inputs_key(dir, args)));
        if pending.is_file() {
            let _ = std::fs::rename(&pending, &after);
        }
        // Stored under the key before the build too: cargo rewrites the lock file of a
        // manifest that lost its dependencies (evcxr's first, empty cell), and the next kernel
        // starts from that same state again. (When the cell crate was fresh, rustc did not run
        // and only an earlier record for the state after the build can say what it would be.)
        let before = records.join(format!("{key_before:016x}.json"));
        if before != after && after.is_file() {
            let _ = std::fs::copy(&after, &before);
        }
        prune(records);
    }
    let _ = std::fs::remove_file(&pending);
    Ok(status.code().unwrap_or(101))
}

/// The wrapper cargo runs in rustc's place for the cell crate: write the command down, then
/// become rustc (keeping cargo's jobserver descriptors).
fn run_wrapper(record_path: &Path, rustc: Vec<OsString>) -> i32 {
    let Some((program, args)) = rustc.split_first() else {
        eprintln!("tchbook (rustc wrapper): cargo gave no rustc to run");
        return 101;
    };
    // Only real compilations of the crate (cargo also asks rustc for its version and cfgs).
    let cell_compile = std::env::var_os("CARGO_CRATE_NAME").is_some_and(|name| name == CELL_CRATE);
    let (true, Ok(dir)) = (cell_compile, std::env::current_dir()) else {
        let error = Command::new(program).args(args).exec();
        eprintln!(
            "tchbook (rustc wrapper): running {}: {error}",
            program.to_string_lossy()
        );
        return 101;
    };
    let mut record = Record {
        args: rustc
            .iter()
            .map(|arg| relative(&arg.to_string_lossy(), &dir))
            .collect(),
        env: std::env::vars()
            .filter(|(name, _)| recorded_variable(name))
            .map(|(name, value)| (name, relative(&value, &dir)))
            .collect(),
        link_plan: None,
    };
    // rustc also prints its linker command, from which the record's link plan is made, so that
    // the first replayed build already links the fast way (`link.rs`). cargo reads only
    // rustc's stderr; its stdout carries nothing else.
    let output = Command::new(program)
        .args(args)
        .args(link::PRINT_LINK_ARGS)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            eprintln!(
                "tchbook (rustc wrapper): running {}: {error}",
                program.to_string_lossy()
            );
            return 101;
        }
    };
    if output.status.success() {
        let printed = String::from_utf8_lossy(&output.stdout);
        record.link_plan = link::plan(&printed, &dir).ok();
    }
    save(&record, record_path);
    output.status.code().unwrap_or(101)
}

/// The variables cargo sets for a rustc run that the replay must set too. The jobserver's
/// descriptors are cargo's own and die with it.
fn recorded_variable(name: &str) -> bool {
    (name.starts_with("CARGO") && name != "CARGO_MAKEFLAGS")
        || name == "OUT_DIR"
        || name == "LD_LIBRARY_PATH"
}

fn relative(text: &str, dir: &Path) -> String {
    text.replace(&*dir.to_string_lossy(), DIR_PLACEHOLDER)
}

fn absolute(text: &str, dir: &Path) -> String {
    text.replace(DIR_PLACEHOLDER, &dir.to_string_lossy())
}

/// The record at `path`, if there is one and everything it links still exists.
fn load(path: &Path, dir: &Path) -> Option<Record> {
    let record: Record = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let mut args = record.args.iter().map(|arg| absolute(arg, dir));
    let rustc = args.next()?;
    if !Path::new(&rustc).is_file() {
        return None;
    }
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg != "--extern" {
            continue;
        }
        if let Some((_, file)) = args.peek().and_then(|value| value.split_once('=')) {
            if !Path::new(file).is_file() {
                return None;
            }
        }
    }
    Some(record)
}

/// Runs the recorded rustc on the current cell (only type-checking it for `check`); speaks
/// cargo's JSON to evcxr. `path` is the record's file, rewritten when a build learns or drops
/// its link plan.
fn replay(mut record: Record, path: &Path, dir: &Path, check: bool) -> Result<i32> {
    let mut args: Vec<String> = record.args.iter().map(|arg| absolute(arg, dir)).collect();
    let planned = if check {
        let source = std::env::var_os(CHECK_SOURCE_ENV).map(PathBuf::from);
        args = check_arguments(args, dir, source.as_deref());
        std::fs::create_dir_all(dir.join(CHECK_DIR))
            .with_context(|| format!("creating {}", dir.join(CHECK_DIR).display()))?;
        None
    } else {
        record.link_plan.as_ref().and_then(|plan| plan.usable(dir))
    };
    // A build without a usable plan prints its linker command, so that the next one has one.
    let learning = !check && planned.is_none() && record.link_plan != Some(LinkPlan::Full);
    let mut command = Command::new(&args[0]);
    command
        .args(&args[1..])
        .current_dir(dir)
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS")
        .stdout(if learning {
            Stdio::piped()
        } else {
            Stdio::null()
        })
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
            .env("RUSTC_BOOTSTRAP", "1");
    }
    if let Some(plan) = &planned {
        // This binary is the linker, and hands the real one the planned command (`link.rs`).
        let me = std::env::current_exe().context("finding this program, the planned linker")?;
        command
            .arg("-C")
            .arg(format!("linker={}", me.display()))
            .env(link::LINKER_ENV, serde_json::to_string(plan)?);
    }
    if learning {
        command.args(link::PRINT_LINK_ARGS);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("running {}", args[0]))?;
    // The linker command is one line, but a long one: read it beside stderr so that neither
    // pipe can fill up and stall rustc.
    let printed = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
        })
    });
    let mut artifacts = Vec::new();
    let mut diagnostics = Vec::new();
    let mut plan_failed = false;
    for line in BufReader::new(child.stderr.take().expect("piped stderr")).lines() {
        let line = line?;
        if let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) {
            if message["$message_type"] == "artifact" && message["emit"] == "link" {
                if let Some(file) = message["artifact"].as_str() {
                    artifacts.push(file.to_owned());
                }
                continue;
            }
            if planned.is_some() && message["level"] == "error" {
                plan_failed |= message["message"]
                    .as_str()
                    .is_some_and(link::blames_the_plan);
            }
        }
        diagnostics.push(line);
    }
    let status = child.wait()?;
    let printed = printed.and_then(|reader| reader.join().ok()?.ok());
    if !status.success() && plan_failed {
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
    for line in &diagnostics {
        writeln!(err, "{line}")?;
    }
    err.flush()?;
    if !status.success() {
        return Ok(101);
    }
    if let Some(printed) = printed {
        record.link_plan = Some(link::plan(&printed, dir).unwrap_or_else(|error| {
            note(&format!("no link plan: {error:#}"));
            LinkPlan::Full
        }));
        save(&record, path);
    }
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
    Ok(0)
}

/// Writes a record whole or not at all (another kernel's slot never shares it, but a crash
/// mid-write must not leave half a record to be replayed).
fn save(record: &Record, path: &Path) {
    let Ok(json) = serde_json::to_vec(record) else {
        return;
    };
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    if std::fs::write(&temporary, json).is_ok() {
        let _ = std::fs::rename(&temporary, path);
    }
}

/// A line on stderr, which evcxr reads as cargo's: it shows lines that are not JSON only when
/// a build fails, beside the errors.
fn note(text: &str) {
    eprintln!("tchbook (cargo front end): {text}");
}

/// A build's rustc arguments turned into a type check: metadata instead of the library, into
/// a directory of its own, and no incremental session (it would be the build's, and a check
/// would overwrite it). A check may run while the cell is built (evcxr's type probe, beside
/// the build: vendor/README.md), so nothing it writes may be the build's; `source` is the
/// file it checks in place of `src/lib.rs`, if evcxr named one.
fn check_arguments(build: Vec<String>, dir: &Path, source: Option<&Path>) -> Vec<String> {
    let lib = dir.join("src").join("lib.rs");
    let mut out = Vec::with_capacity(build.len());
    let mut args = build.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "-C"
            && args
                .peek()
                .is_some_and(|next| next.starts_with("incremental="))
        {
            args.next();
            continue;
        }
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

/// A hash of everything that decides the rustc command cargo would run for the cell crate:
/// the arguments, the manifest, the lock file, every cargo config file that applies, the
/// environment cargo and rustc read, and the compiler itself.
fn inputs_key(dir: &Path, args: &[OsString]) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same inputs give the same key in every process.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    // `--offline` changes how cargo may fetch, never the rustc command (evcxr's start-up cell
    // is built offline, later cells not).
    for arg in args.iter().filter(|arg| *arg != "--offline") {
        arg.hash(&mut hasher);
    }
    for file in ["Cargo.toml", "Cargo.lock"] {
        std::fs::read(dir.join(file)).ok().hash(&mut hasher);
    }
    for ancestor in dir.ancestors() {
        for name in ["config.toml", "config"] {
            let config = ancestor.join(".cargo").join(name);
            if let Ok(contents) = std::fs::read(&config) {
                relative(&config.to_string_lossy(), dir).hash(&mut hasher);
                contents.hash(&mut hasher);
            }
        }
    }
    // Path dependencies (the prelude) are sources cargo would check for changes: so does the
    // key, by every file's size and modification time, as cargo's own freshness check does.
    for source in path_dependencies(dir) {
        source.hash(&mut hasher);
        hash_tree(&source, &mut hasher);
    }
    let mut variables: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| {
            (name.starts_with("CARGO") || name.starts_with("RUST") || name.starts_with("EVCXR"))
                && !KEY_IGNORES.contains(&name.as_str())
        })
        .map(|(name, value)| (name, relative(&value, dir)))
        .collect();
    variables.sort();
    variables.hash(&mut hasher);
    if let Some(meta) = std::env::var_os("RUSTC").and_then(|rustc| std::fs::metadata(rustc).ok()) {
        meta.len().hash(&mut hasher);
        meta.modified().ok().hash(&mut hasher);
    }
    hasher.finish()
}

/// The directories of the manifest's `path` dependencies.
fn path_dependencies(dir: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return Vec::new();
    };
    let Ok(manifest) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for table in ["dependencies", "build-dependencies"] {
        if let Some(deps) = manifest.get(table).and_then(toml::Value::as_table) {
            for spec in deps.values() {
                if let Some(path) = spec.get("path").and_then(toml::Value::as_str) {
                    found.push(dir.join(path));
                }
            }
        }
    }
    found
}

/// Hashes every file under `dir` (but `target/` and hidden entries) by relative path, size
/// and modification time.
fn hash_tree(dir: &Path, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        name.hash(hasher);
        if meta.is_dir() {
            hash_tree(&entry.path(), hasher);
        } else {
            meta.len().hash(hasher);
            meta.modified().ok().hash(hasher);
        }
    }
}

fn clear_records(records: &Path, keep: &Path) {
    if let Ok(entries) = std::fs::read_dir(records) {
        for entry in entries.flatten() {
            if entry.path() != keep {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Keeps the newest [`MAX_RECORDS`] records, and the link libraries they name.
fn prune(records: &Path) {
    if let Ok(entries) = std::fs::read_dir(records) {
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
            .collect();
        files.sort();
        let stale = files.len().saturating_sub(MAX_RECORDS);
        for (_, path) in &files[..stale] {
            let _ = std::fs::remove_file(path);
        }
    }
    if let Some(dir) = records.parent().and_then(Path::parent) {
        link::remove_unused_libraries(dir, records);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_directory_paths_travel_with_the_directory() {
        let from = Path::new("/cache/slots/0");
        let to = Path::new("/cache/slots/3");
        let arg = "--out-dir=/cache/slots/0/target/debug/deps";
        let stored = relative(arg, from);
        assert_eq!(stored, "--out-dir={tchbook-build-dir}/target/debug/deps");
        assert_eq!(
            absolute(&stored, to),
            "--out-dir=/cache/slots/3/target/debug/deps"
        );
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

    #[test]
    fn a_change_in_a_path_dependency_changes_the_key() {
        let dir = std::env::temp_dir().join(format!("tchbook-front-key-{}", std::process::id()));
        let dep = dir.join("dep");
        std::fs::create_dir_all(dep.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"ctx\"\n[dependencies]\ndep = { path = \"dep\" }\n",
        )
        .unwrap();
        std::fs::write(dep.join("src").join("lib.rs"), "pub fn f() {}").unwrap();
        let args = [OsString::from("build")];
        let before = inputs_key(&dir, &args);
        assert_eq!(inputs_key(&dir, &args), before);
        std::fs::write(dep.join("src").join("lib.rs"), "pub fn f() { let _ = 1; }").unwrap();
        assert_ne!(inputs_key(&dir, &args), before);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cargo_and_its_jobserver() {
        assert!(recorded_variable("CARGO_MANIFEST_DIR"));
        assert!(recorded_variable("CARGO_PKG_NAME"));
        assert!(recorded_variable("OUT_DIR"));
        assert!(!recorded_variable("CARGO_MAKEFLAGS"));
        assert!(!recorded_variable("HOME"));
    }

    #[test]
    fn a_record_whose_dependency_is_gone_is_not_replayed() {
        let dir = std::env::temp_dir().join(format!("tchbook-front-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rustc = std::env::current_exe().unwrap();
        let present = dir.join("libpresent.rlib");
        std::fs::write(&present, b"").unwrap();
        let write = |extern_file: &str| {
            let record = Record {
                args: vec![
                    rustc.to_string_lossy().into_owned(),
                    "--extern".into(),
                    format!("dep={DIR_PLACEHOLDER}/{extern_file}"),
                ],
                env: vec![],
                link_plan: None,
            };
            let path = dir.join("record.json");
            std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
            path
        };
        assert!(load(&write("libpresent.rlib"), &dir).is_some());
        assert!(load(&write("libmissing.rlib"), &dir).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
