//! A cell's error as Jupyter shows it (`ename`, `evalue`, a traceback of ANSI-coloured lines),
//! made once for the kernel and for an exported program's runner: a panic (a libtorch error, out
//! of memory, the prelude's interrupt), the interrupt a cell did not answer within its grace
//! period, and a panic in a thread the cell started ([`crate::Panic::thread_text`]).

mod panic;
mod torch;

pub use panic::{Generated, panic_report};
pub use torch::{TorchError, out_of_memory, torch_error};

/// What an `error` message and an error reply carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReport {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

pub const RED: &str = "\x1b[1;31m";
pub const BLUE: &str = "\x1b[1;34m";
pub const BOLD: &str = "\x1b[1m";
pub const RESET: &str = "\x1b[0m";

/// The name of an interrupted cell's error, as Python's.
pub const INTERRUPT: &str = "KeyboardInterrupt";

/// The message of the panic the prelude ends an interrupted cell with
/// (`tchbook_prelude::interrupt::check`).
pub const INTERRUPTED: &str = "KeyboardInterrupt: interrupted by the user";

/// What ended a cell, read from its panic's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The prelude's interrupt panic; what it said after the name.
    Interrupted(String),
    /// libtorch could not allocate: the short form, then libtorch's own report.
    OutOfMemory { short: String, details: String },
    /// Another libtorch error: its sentence, then libtorch's own report.
    Torch { summary: String, details: String },
    /// Any other panic: its message.
    Panic(String),
}

impl Cause {
    pub fn of(message: &str) -> Cause {
        if let Some(rest) = message.strip_prefix(INTERRUPT) {
            return Cause::Interrupted(rest.trim_start_matches(':').trim().to_owned());
        }
        match torch_error(message) {
            Some(torch) => match out_of_memory(&torch.summary) {
                Some(short) => Cause::OutOfMemory {
                    short,
                    details: torch.rest,
                },
                None => Cause::Torch {
                    summary: torch.summary,
                    details: torch.rest,
                },
            },
            None => Cause::Panic(message.to_owned()),
        }
    }

    /// The error's name, as the front end shows it.
    pub fn ename(&self) -> &'static str {
        match self {
            Cause::Interrupted(_) => INTERRUPT,
            Cause::OutOfMemory { .. } => "OutOfMemoryError",
            Cause::Torch { .. } => "TorchError",
            Cause::Panic(_) => "panic",
        }
    }

    fn evalue(&self) -> &str {
        match self {
            Cause::Interrupted(said) => said,
            Cause::OutOfMemory { short, .. } => short,
            Cause::Torch { summary, .. } => summary,
            Cause::Panic(message) => message,
        }
    }

    /// libtorch's full report, when there is one.
    fn details(&self) -> Option<&str> {
        match self {
            Cause::OutOfMemory { details, .. } | Cause::Torch { details, .. } => {
                Some(details).filter(|d| !d.is_empty()).map(String::as_str)
            }
            Cause::Interrupted(_) | Cause::Panic(_) => None,
        }
    }
}

/// The first line of a traceback: the error's name in red, its value in bold.
///
/// ```
/// let line = tchbook_wire::report::headline("panic", "boom");
/// assert_eq!(line, "\x1b[1;31mpanic\x1b[0m\x1b[1m: boom\x1b[0m");
/// ```
pub fn headline(ename: &str, evalue: &str) -> String {
    format!("{RED}{ename}{RESET}{BOLD}: {evalue}{RESET}")
}

/// A panic in a cell the user interrupted, as the interrupt it was: the interrupt ended what the
/// cell waited on (a read of stdin, a wait for a child process fails then), and the cell stopped
/// there. The panic's own message stays, after the interrupt's.
///
/// ```
/// use tchbook_wire::report::{ErrorReport, as_interrupt, headline};
/// let mut report = ErrorReport {
///     ename: "panic".into(),
///     evalue: "called `Result::unwrap()` on an `Err` value".into(),
///     traceback: vec![headline("panic", "called `Result::unwrap()` on an `Err` value")],
/// };
/// as_interrupt(&mut report);
/// assert_eq!(report.ename, "KeyboardInterrupt");
/// assert_eq!(
///     report.evalue,
///     "interrupted by the user; the cell stopped with panic: called `Result::unwrap()` on an `Err` value"
/// );
/// assert!(report.traceback[0].contains("KeyboardInterrupt"));
/// ```
pub fn as_interrupt(report: &mut ErrorReport) {
    if report.ename == INTERRUPT {
        return;
    }
    let evalue = format!(
        "interrupted by the user; the cell stopped with {}: {}",
        report.ename, report.evalue
    );
    report.traceback[0] = headline(INTERRUPT, &evalue);
    report.ename = INTERRUPT.to_owned();
    report.evalue = evalue;
}

/// A cell interrupted that did not stop within the grace period; `then` says what was done
/// about it (the evaluation process restarted, the program ended) and what it cost.
///
/// ```
/// let report = tchbook_wire::report::grace_report("the program ended");
/// assert_eq!(report.ename, "KeyboardInterrupt");
/// assert_eq!(
///     report.evalue,
///     "the cell did not stop within the grace period, so the program ended"
/// );
/// ```
pub fn grace_report(then: &str) -> ErrorReport {
    let evalue = format!("the cell did not stop within the grace period, so {then}");
    ErrorReport {
        ename: INTERRUPT.into(),
        traceback: vec![headline(INTERRUPT, &evalue)],
        evalue,
    }
}
