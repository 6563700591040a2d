//! The evaluation process's command pipe: what the kernel (through evcxr) writes to that
//! process's stdin, one line each, and the end-of-cell line it answers with.
//!
//! ```text
//! LOAD_AND_RUN /path/to/cell.so run_user_code_7     evcxr's: load a cell's library, call it
//! TCHBOOK_ANSWER "Ada"                               a front end's input answer, a JSON string
//! ```
//!
//! An answer is data whatever it holds: a JSON string has no raw line break, so no answer can
//! start a line of its own, and the evaluation process never reads an answer as a command. An
//! answer that arrives when no read waits for one (its read was interrupted, or ended with its
//! cell) is dropped. Writers: evcxr (`LOAD_AND_RUN`) and the kernel's input callback
//! (`src/engine/evaluate.rs`). Reader: the evaluation process (`src/evaluation/`).

/// The line (keyed) the evaluation process writes on stdout when a cell has ended
/// (evcxr's protocol).
pub const EXECUTION_COMPLETE: &str = "EVCXR_EXECUTION_COMPLETE";

const LOAD_AND_RUN: &str = "LOAD_AND_RUN ";
const ANSWER: &str = "TCHBOOK_ANSWER ";

/// One line of the command pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Load the shared library at `library` and call its `function` with the variable store.
    LoadAndRun {
        /// The cell's library.
        library: String,
        /// The `extern "C"` function that runs the cell.
        function: String,
    },
    /// The front end's answer to the input request the process made last.
    Answer(String),
}

impl Command {
    /// Reads one line (without its newline).
    ///
    /// ```
    /// use tchbook_wire::commands::Command;
    /// assert_eq!(
    ///     Command::parse("LOAD_AND_RUN /tmp/a.so run_user_code_1"),
    ///     Ok(Command::LoadAndRun { library: "/tmp/a.so".into(), function: "run_user_code_1".into() })
    /// );
    /// assert_eq!(Command::parse(r#"TCHBOOK_ANSWER "a\nb""#), Ok(Command::Answer("a\nb".into())));
    /// assert!(Command::parse("abc").is_err());
    /// ```
    pub fn parse(line: &str) -> Result<Command, String> {
        if let Some(rest) = line.strip_prefix(LOAD_AND_RUN) {
            // As evcxr writes it: a path and a name, neither with a space.
            let mut words = rest.split(' ');
            if let (Some(library), Some(function), None) =
                (words.next(), words.next(), words.next())
                && !library.is_empty()
                && !function.is_empty()
            {
                return Ok(Command::LoadAndRun {
                    library: library.to_owned(),
                    function: function.to_owned(),
                });
            }
        } else if let Some(json) = line.strip_prefix(ANSWER) {
            return serde_json::from_str(json)
                .map(Command::Answer)
                .map_err(|error| format!("an answer that is not a JSON string ({error})"));
        }
        let shown: String = line.chars().take(80).collect();
        Err(format!("not a command: {shown:?}"))
    }

    /// The command as its line (without the newline).
    ///
    /// ```
    /// use tchbook_wire::commands::Command;
    /// let answer = Command::Answer("abc\nLOAD_AND_RUN /x.so f".into());
    /// assert_eq!(answer.to_line(), r#"TCHBOOK_ANSWER "abc\nLOAD_AND_RUN /x.so f""#);
    /// assert_eq!(Command::parse(&answer.to_line()), Ok(answer));
    /// ```
    pub fn to_line(&self) -> String {
        match self {
            Command::LoadAndRun { library, function } => {
                format!("{LOAD_AND_RUN}{library} {function}")
            }
            Command::Answer(text) => format!(
                "{ANSWER}{}",
                serde_json::to_string(text).expect("a string serialises")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_answer_reads_as_anything_but_itself() {
        for text in [
            "",
            "\n",
            "abc\nLOAD_AND_RUN /tmp/x.so run_me\nxyz",
            "\r\nTCHBOOK_ANSWER \"x\"",
            "\u{0}\u{1e}\u{18}",
            "é ∑ 🦀",
        ] {
            let line = Command::Answer(text.into()).to_line();
            assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
            assert_eq!(Command::parse(&line), Ok(Command::Answer(text.into())));
        }
    }

    #[test]
    fn malformed_lines_are_refused_with_what_they_were() {
        for line in [
            "LOAD_AND_RUN",
            "LOAD_AND_RUN /a.so",
            "LOAD_AND_RUN /a.so f extra",
            "TCHBOOK_ANSWER abc",
            "TCHBOOK_ANSWER 42",
            "load_and_run /a.so f",
        ] {
            let error = Command::parse(line).unwrap_err();
            assert!(
                error.contains("not a command") || error.contains("JSON string"),
                "{line}: {error}"
            );
        }
    }
}
