//! What an `error` message carries, and the reports of a cell that did not end by itself:
//! interrupted past the grace period, a dead evaluation process, a failure of the kernel's.

/// What an `error` message and an error reply carry.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReport {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

pub(super) const RED: &str = "\x1b[1;31m";
pub(super) const BLUE: &str = "\x1b[1;34m";
pub(super) const BOLD: &str = "\x1b[1m";
pub(super) const RESET: &str = "\x1b[0m";

/// The evaluation process was killed after an interrupt and restarted.
pub fn interrupted_report(lost: &[String]) -> ErrorReport {
    let evalue = format!(
        "the cell did not stop within the grace period, so the evaluation process was \
         restarted; {}",
        lost_sentence(lost)
    );
    ErrorReport {
        ename: "KeyboardInterrupt".into(),
        traceback: vec![format!("{RED}KeyboardInterrupt{RESET}: {evalue}")],
        evalue,
    }
}

/// The evaluation process died (segfault, abort) and was restarted.
pub fn crashed_report(message: &str, lost: &[String]) -> ErrorReport {
    let evalue = format!(
        "the evaluation process died and was restarted; {}",
        lost_sentence(lost)
    );
    let mut traceback = vec![format!("{RED}EvaluationProcessDied{RESET}: {evalue}")];
    let details: Vec<&str> = message.lines().take(40).collect();
    if !details.is_empty() {
        traceback.push(details.join("\n"));
    }
    ErrorReport {
        ename: "EvaluationProcessDied".into(),
        evalue,
        traceback,
    }
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

pub fn failure_report(message: &str) -> ErrorReport {
    ErrorReport {
        ename: "Error".into(),
        evalue: message.to_owned(),
        traceback: vec![format!("{RED}Error{RESET}: {message}")],
    }
}
