//! Which job this process does. The kernel's one binary is started in several roles: by
//! Jupyter or a user (a command line), by evcxr (the evaluation process, evcxr's own rustc
//! wrapper, and cargo, whose place the front end takes), by cargo (the cell crate's rustc
//! wrapper) and by rustc (a replayed cell's linker). Each helper role is marked by a variable
//! its starter sets (`env`); the role is read once, first thing in `main`.

use crate::cellbuild::{cargo_front, env, link};
use std::ffi::OsString;
use std::path::PathBuf;

/// The role of this process, from its environment and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The evaluation process, which evcxr starts (`EVCXR_IS_RUNTIME`): `crate::evaluation`.
    Evaluation,
    /// evcxr's own rustc wrapper: `evcxr::runtime_hook` runs it.
    Evcxr,
    /// A replayed cell build's linker: the real linker with the plan's library
    /// (`TCHBOOK_LINK_PLAN` holds the plan).
    Linker { plan: String },
    /// The real cargo's rustc wrapper for the cell crate, writing the rustc command to
    /// `record` (`TCHBOOK_RECORD_RUSTC`).
    RustcRecorder { record: PathBuf },
    /// evcxr's cargo: the cargo front end, in front of the `real` one (`TCHBOOK_REAL_CARGO`,
    /// with a cargo subcommand first).
    CargoFront { real: PathBuf },
    /// A command line: the kernel, `install`, `doctor`, `export`, `analyzer`, ...
    Cli,
}

impl Role {
    /// The role of this process. Environment variables are inherited, so the order matters:
    /// the evaluation process and the helpers are all started from a kernel that set
    /// `TCHBOOK_REAL_CARGO`, and a linker runs under a front end's rustc.
    pub fn of_this_process() -> Role {
        if std::env::var(env::IS_RUNTIME).is_ok() {
            return Role::Evaluation;
        }
        if std::env::var(env::RUSTC_WRAPPER).is_ok() {
            return Role::Evcxr;
        }
        if let Some(plan) = std::env::var_os(env::LINK_PLAN) {
            return Role::Linker {
                plan: plan.to_string_lossy().into_owned(),
            };
        }
        if let Some(record) = std::env::var_os(env::RECORD_RUSTC) {
            return Role::RustcRecorder {
                record: record.into(),
            };
        }
        match std::env::var_os(env::REAL_CARGO) {
            Some(real) if cargo_front::is_cargo_invocation(std::env::args_os().nth(1).as_ref()) => {
                Role::CargoFront { real: real.into() }
            }
            _ => Role::Cli,
        }
    }

    /// Does the job of a helper role and returns its exit code; `None` for [`Role::Cli`],
    /// whose job is `main`'s.
    pub fn run(self) -> Option<i32> {
        let args = || -> Vec<OsString> { std::env::args_os().skip(1).collect() };
        Some(match self {
            Role::Evaluation => crate::evaluation::run(),
            Role::Evcxr => {
                // Does not return in evcxr's rustc wrapper role.
                evcxr::runtime_hook();
                unreachable!("evcxr::runtime_hook returned in an evcxr role")
            }
            Role::Linker { plan } => link::run_as_linker(&plan, args()),
            Role::RustcRecorder { record } => cargo_front::run_wrapper(&record, args()),
            Role::CargoFront { real } => cargo_front::run(&real, &args()),
            Role::Cli => return None,
        })
    }
}
