//! What an `error` message carries, and the reports of a cell that did not end by itself:
//! interrupted past the grace period, a dead evaluation process, a failure of the kernel's.

pub(crate) use tchbook_wire::report::ErrorReport;
use tchbook_wire::report::{RED, RESET, grace_report};

/// The evaluation process was killed after an interrupt and restarted.
pub(crate) fn interrupted_report(lost: &[String]) -> ErrorReport {
    grace_report(&format!(
        "the evaluation process was restarted; {}",
        lost_sentence(lost)
    ))
}

/// The evaluation process died (segfault, abort) and was restarted. An allocation that failed
/// (Rust's `memory allocation of N bytes failed` abort, in evcxr's `message` or among the
/// cell's last stderr lines) is Python's `MemoryError`, with why the variables could not be
/// kept and how to keep them next time.
pub(crate) fn crashed_report(
    message: &str,
    lost: &[String],
    stderr_tail: &[String],
) -> ErrorReport {
    let allocation = failed_allocation(message).or_else(|| {
        stderr_tail
            .iter()
            .rev()
            .find_map(|line| failed_allocation(line))
    });
    let (ename, evalue) = match allocation {
        Some(bytes) => (
            "MemoryError",
            format!(
                "allocating {bytes} bytes failed. Rust ends the process when an allocation \
                 fails (stable Rust cannot turn it into an error a cell could catch), so the \
                 evaluation process was restarted; {}. To keep them through an allocation that \
                 may fail, allocate fallibly: `Vec::try_reserve` / `try_with_capacity` return an \
                 error instead, and tensors report libtorch's out-of-memory as an error the \
                 cell sees",
                lost_sentence(lost)
            ),
        ),
        None => (
            "EvaluationProcessDied",
            format!(
                "the evaluation process died and was restarted; {}",
                lost_sentence(lost)
            ),
        ),
    };
    let mut traceback = vec![format!("{RED}{ename}{RESET}: {evalue}")];
    let details: Vec<&str> = message.lines().take(40).collect();
    if !details.is_empty() {
        traceback.push(details.join("\n"));
    }
    ErrorReport {
        ename: ename.into(),
        evalue,
        traceback,
    }
}

/// The size in `memory allocation of N bytes failed`, std's words before it aborts.
fn failed_allocation(message: &str) -> Option<u64> {
    message.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("memory allocation of ")?;
        let (bytes, tail) = rest.split_once(' ')?;
        (tail == "bytes failed")
            .then(|| bytes.parse().ok())
            .flatten()
    })
}

/// Adds to a panic's report (an interrupt's above all) what the panic undid of the cell's
/// bindings: the ones it declared again hold their value from before it, its new ones were
/// never made. Python users expect an interrupted cell's assignments up to the interrupt to
/// have happened; a Rust cell's bindings are stored only when it ends, so this says which.
pub(crate) fn say_undone(report: &mut ErrorReport, reverted: &[String], dropped: &[String]) {
    let names = |names: &[String]| {
        names
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !reverted.is_empty() {
        parts.push(format!(
            "{} kept the value from before this cell",
            names(reverted)
        ));
    }
    if !dropped.is_empty() {
        parts.push(format!("{} were not created", names(dropped)));
    }
    if parts.is_empty() {
        return;
    }
    let sentence = format!(
        "the cell stopped before its bindings were stored: {}",
        parts.join("; ")
    );
    report.evalue = if report.evalue.is_empty() {
        sentence.clone()
    } else {
        format!("{}; {sentence}", report.evalue)
    };
    report.traceback.push(sentence);
}

fn lost_sentence(lost: &[String]) -> String {
    if lost.is_empty() {
        "no variables were lost (items, `use`s and `:dep`s are kept)".to_owned()
    } else {
        format!(
            "these variables were lost: {} (items, `use`s and `:dep`s are kept)",
            lost.join(", ")
        )
    }
}

pub(crate) fn failure_report(message: &str) -> ErrorReport {
    ErrorReport {
        ename: "Error".into(),
        evalue: message.to_owned(),
        traceback: vec![format!("{RED}Error{RESET}: {message}")],
    }
}
