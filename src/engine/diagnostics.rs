//! evcxr's errors as plain values: [`Diagnostic`]s with spans in the cell's own lines, or the
//! text a user reads.

use super::{Diagnostic, DiagnosticSpan};

/// evcxr's error as one text: rustc's rendering of each compile error where there is one.
pub(super) fn describe_evcxr_error(error: &evcxr::Error) -> String {
    match error {
        evcxr::Error::CompilationErrors(errors) => errors
            .iter()
            .map(|e| {
                let rendered = e.rendered();
                if rendered.is_empty() {
                    e.message()
                } else {
                    rendered
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

pub(super) fn diagnostic(error: &evcxr::CompilationError) -> Diagnostic {
    let spans = error
        .spanned_messages()
        .iter()
        .chain(error.help_spanned())
        .filter_map(|message| {
            let span = message.span?;
            Some(DiagnosticSpan {
                start_line: span.start_line,
                start_column: span.start_column,
                end_line: span.end_line,
                end_column: span.end_column,
                label: message.label.clone(),
                primary: message.is_primary,
            })
        })
        .collect();
    Diagnostic {
        level: error.level().to_owned(),
        code: error.code().map(str::to_owned),
        message: error.message(),
        spans,
        help: error.help(),
        rendered: error.rendered(),
    }
}
