//! Learning a record: the real cargo runs once with this binary as the cell crate's rustc
//! wrapper, which writes down the rustc command cargo chose.

use super::record::{self, Record, relative};
use super::{CELL_CRATE, key};
use crate::cellbuild::env;
use crate::cellbuild::link;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the real cargo with the recording wrapper and keeps the record if rustc ran for the
/// cell crate. `relay`: pass cargo's output on (otherwise only its exit code counts).
pub(super) fn record_with_real_cargo(
    real: &Path,
    args: &[OsString],
    dir: &Path,
    records: &Path,
    key_before: String,
    relay: bool,
) -> Result<i32> {
    std::fs::create_dir_all(records).with_context(|| format!("creating {}", records.display()))?;
    let pending = records.join(format!("pending-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&pending);
    let mut child = Command::new(real)
        .args(args)
        .env(env::RUSTC_WORKSPACE_WRAPPER, std::env::current_exe()?)
        .env(env::RECORD_RUSTC, &pending)
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
        if let Ok(message) = serde_json::from_str::<serde_json::Value>(&line)
            && message["reason"] == "compiler-artifact"
            && message["fresh"] == false
            && message["target"]["name"] != CELL_CRATE
        {
            rebuilt_dependency = true;
        }
        if relay {
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    let status = child.wait()?;
    if rebuilt_dependency {
        record::clear_records(records, &pending);
    }
    // A failed build still recorded the command when rustc ran for the cell crate (the cell's
    // own error); when a dependency failed, rustc never ran for it and nothing was recorded.
    if status.success() || pending.is_file() {
        keep(&pending, records, key::inputs_key(dir, args), key_before);
    }
    let _ = std::fs::remove_file(&pending);
    Ok(status.code().unwrap_or(101))
}

/// Stores the record cargo's run left in `pending` under the key of the inputs after the
/// build, and under the key before it too: cargo rewrites the lock file of a manifest that lost
/// its dependencies (evcxr's first, empty cell), and the next kernel starts from that same
/// state again. (When the cell crate was fresh, rustc did not run and only an earlier record
/// for the state after the build can say what it would be.)
fn keep(pending: &Path, records: &Path, key_after: String, key_before: String) {
    let after = records.join(format!("{key_after}.json"));
    if pending.is_file() {
        let _ = std::fs::rename(pending, &after);
    }
    let before = records.join(format!("{key_before}.json"));
    if before != after && after.is_file() {
        let _ = std::fs::copy(&after, &before);
    }
    record::prune(records);
}

/// The wrapper cargo runs in rustc's place for the cell crate: write the command down, then
/// become rustc (keeping cargo's jobserver descriptors).
pub(crate) fn run_wrapper(record_path: &Path, rustc: Vec<OsString>) -> i32 {
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
    // the first replayed build already links the fast way (`build::link`). cargo reads only
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
    record::save(&record, record_path);
    output.status.code().unwrap_or(101)
}

/// The variables cargo sets for a rustc run that the replay must set too. The jobserver's
/// descriptors are cargo's own and die with it.
fn recorded_variable(name: &str) -> bool {
    (name.starts_with("CARGO") && name != env::CARGO_MAKEFLAGS)
        || name == "OUT_DIR"
        || name == "LD_LIBRARY_PATH"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_and_its_jobserver() {
        assert!(recorded_variable("CARGO_MANIFEST_DIR"));
        assert!(recorded_variable("CARGO_PKG_NAME"));
        assert!(recorded_variable("OUT_DIR"));
        assert!(!recorded_variable("CARGO_MAKEFLAGS"));
        assert!(!recorded_variable("HOME"));
    }
}
