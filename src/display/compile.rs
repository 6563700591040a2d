//! rustc's diagnostics drawn against the cell's own lines.

use super::reports::ErrorReport;
use crate::engine::{Diagnostic, DiagnosticSpan};
use tchbook_wire::report::{BLUE, BOLD, RED, RESET};

/// rustc diagnostics rendered against the cell's own lines, rustc style:
///
/// ```text
/// error[E0308]: mismatched types
///  --> cell:1:14
///   |
/// 1 | let x: i32 = "a";
///   |              ^^^ expected `i32`, found `&str`
/// ```
pub(crate) fn compile_report(code: &str, diagnostics: &[Diagnostic]) -> ErrorReport {
    let lines: Vec<&str> = code.lines().collect();
    let mut traceback = Vec::new();
    for diagnostic in diagnostics {
        traceback.push(render_diagnostic(&lines, diagnostic));
    }
    let first = diagnostics.first();
    let evalue = first
        .map(|d| match &d.code {
            Some(code) => format!("[{code}] {}", d.message),
            None => d.message.clone(),
        })
        .unwrap_or_else(|| "compilation failed".to_owned());
    ErrorReport {
        ename: "CompilationError".into(),
        evalue,
        traceback,
    }
}

fn render_diagnostic(lines: &[&str], diagnostic: &Diagnostic) -> String {
    let mut out = String::new();
    let code = diagnostic
        .code
        .as_deref()
        .map(|c| format!("[{c}]"))
        .unwrap_or_default();
    let level = if diagnostic.level.is_empty() {
        "error"
    } else {
        &diagnostic.level
    };
    out.push_str(&format!(
        "{RED}{level}{code}{RESET}{BOLD}: {}{RESET}\n",
        diagnostic.message
    ));
    let spans: Vec<&DiagnosticSpan> = diagnostic
        .spans
        .iter()
        .filter(|s| s.start_line >= 1 && s.start_line <= lines.len())
        .collect();
    if spans.is_empty() {
        if !diagnostic.rendered.is_empty() {
            return diagnostic.rendered.trim_end().to_owned();
        }
        for help in &diagnostic.help {
            out.push_str(&format!("  = help: {help}\n"));
        }
        return out.trim_end().to_owned();
    }
    let width = spans
        .iter()
        .map(|s| s.end_line.max(s.start_line).to_string().len())
        .max()
        .unwrap_or(1);
    let pad = " ".repeat(width);
    let primary = spans.iter().find(|s| s.primary).unwrap_or(&spans[0]);
    out.push_str(&format!(
        "{pad}{BLUE}-->{RESET} cell:{}:{}\n",
        primary.start_line, primary.start_column
    ));
    out.push_str(&format!("{pad} {BLUE}|{RESET}\n"));
    let mut by_line: Vec<&DiagnosticSpan> = spans.clone();
    by_line.sort_by_key(|s| (s.start_line, s.start_column));
    let mut shown_line = 0;
    for span in by_line {
        let text = lines[span.start_line - 1];
        if span.start_line != shown_line {
            out.push_str(&format!(
                "{BLUE}{:>width$} |{RESET} {text}\n",
                span.start_line
            ));
            shown_line = span.start_line;
        }
        out.push_str(&underline(text, span, &pad));
    }
    out.push_str(&helps(diagnostic, &spans, &pad));
    out.trim_end().to_owned()
}

/// The diagnostic's `= help:` lines, but for those already drawn as a span.
fn helps(diagnostic: &Diagnostic, spans: &[&DiagnosticSpan], pad: &str) -> String {
    let mut out = String::new();
    for help in &diagnostic.help {
        // A help with a suggestion is also a span ("help: a local variable with a similar
        // name exists: `value`"), already drawn under the code above; evcxr's text of it
        // ends with the bare replacement on a line of its own. Shown once, as the span.
        let first = help.lines().next().unwrap_or_default().trim();
        if !first.is_empty() && spans.iter().any(|s| s.label.contains(first)) {
            continue;
        }
        let help = help.trim_end().replace('\n', &format!("\n{pad}   "));
        out.push_str(&format!("{pad} {BLUE}={RESET} {BOLD}help{RESET}: {help}\n"));
    }
    out
}

/// The line under a span's source line: spaces (tabs kept, so columns line up) up to the span,
/// then `^^^` (primary) or `---` (secondary) under it, and its label.
fn underline(text: &str, span: &DiagnosticSpan, pad: &str) -> String {
    let line_chars = text.chars().count();
    let start = span.start_column.saturating_sub(1).min(line_chars);
    let end = if span.end_line == span.start_line {
        span.end_column.saturating_sub(1).min(line_chars)
    } else {
        line_chars
    };
    let prefix: String = text
        .chars()
        .take(start)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let marker = if span.primary { '^' } else { '-' };
    let carets = marker.to_string().repeat(end.saturating_sub(start).max(1));
    let colour = if span.primary { RED } else { BLUE };
    let label = span.label.strip_prefix("error: ").unwrap_or(&span.label);
    format!("{pad} {BLUE}|{RESET} {prefix}{colour}{carets} {label}{RESET}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suggestion_is_shown_once_under_the_code() {
        let diagnostic = Diagnostic {
            level: "error".into(),
            code: Some("E0425".into()),
            message: "cannot find value `r2` in this scope".into(),
            spans: vec![
                DiagnosticSpan {
                    start_line: 1,
                    start_column: 9,
                    end_line: 1,
                    end_column: 11,
                    label: "not found in this scope".into(),
                    primary: true,
                },
                DiagnosticSpan {
                    start_line: 1,
                    start_column: 9,
                    end_line: 1,
                    end_column: 11,
                    label: "help: a local variable with a similar name exists: `r`".into(),
                    primary: false,
                },
            ],
            help: vec!["a local variable with a similar name exists\n\nr".into()],
            rendered: String::new(),
        };
        let report = compile_report("let y = r2 + 1;", &[diagnostic]);
        let text = report.traceback.join("\n");
        assert_eq!(text.matches("similar name exists").count(), 1, "{text}");
        assert!(
            !text.lines().any(|line| line.trim() == "r"),
            "no stray replacement line: {text}"
        );
    }

    #[test]
    fn compile_errors_point_at_the_cell_line() {
        let diagnostic = Diagnostic {
            level: "error".into(),
            code: Some("E0308".into()),
            message: "mismatched types".into(),
            spans: vec![DiagnosticSpan {
                start_line: 2,
                start_column: 14,
                end_line: 2,
                end_column: 17,
                label: "expected `i32`".into(),
                primary: true,
            }],
            help: vec![],
            rendered: String::new(),
        };
        let report = compile_report("let a = 1;\nlet x: i32 = \"a\";", &[diagnostic]);
        assert_eq!(report.evalue, "[E0308] mismatched types");
        let text = &report.traceback[0];
        assert!(text.contains("cell:2:14"), "{text}");
        assert!(text.contains("let x: i32 = \"a\";"), "{text}");
        assert!(text.contains("^^^"), "{text}");
    }
}
