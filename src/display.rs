//! Turns what a cell produces into Jupyter content: the live display line protocol (this module
//! owns the reading side; `prelude/src/runtime.rs` owns the writing side, see DEVELOPERS.md),
//! final values, panics, compile errors, interrupts and crashes.

use crate::engine::{Diagnostic, DiagnosticSpan, Table};
use jupyter_protocol::{Media, MediaType};
use serde_json::{Map, Value};

/// Prefix of a live display line (written by the prelude).
pub const DISPLAY_PREFIX: &str = "TCHBOOK_DISPLAY ";
/// Prefix of a panic report (written by the panic hook the engine installs).
pub const PANIC_PREFIX: &str = "TCHBOOK_PANIC ";

/// One stdout line of a running cell, understood.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Ordinary output (the newline the line ended with is not included).
    Text(String),
    /// `display_data`, with a `display_id` when the display can be updated later.
    Display {
        data: Map<String, Value>,
        metadata: Map<String, Value>,
        display_id: Option<String>,
    },
    /// `update_display_data` of an earlier display.
    Update {
        data: Map<String, Value>,
        metadata: Map<String, Value>,
        display_id: String,
    },
    /// `clear_output`.
    Clear { wait: bool },
    /// Text without a trailing newline (flushed by the prelude's stdout pump).
    Stream { stderr: bool, text: String },
    /// A panic in the evaluation process.
    Panic(Panic),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panic {
    pub message: String,
    /// `file:line:column`.
    pub location: String,
    pub thread: String,
    /// Whether it happened on the thread cells run on (the evaluation process's main thread).
    pub on_main: bool,
}

impl Panic {
    /// A panic in a thread the cell spawned does not end the cell.
    pub fn ends_cell(&self) -> bool {
        self.on_main
    }
}

/// Reads one line. Lines that merely look like protocol lines but do not parse are shown as
/// text (and logged), never lost.
pub fn parse_line(line: &str) -> Line {
    if let Some(json) = line.strip_prefix(DISPLAY_PREFIX) {
        match parse_display(json) {
            Some(parsed) => return parsed,
            None => tracing::warn!("unreadable display line: {line}"),
        }
    } else if let Some(json) = line.strip_prefix(PANIC_PREFIX) {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(json) {
            let text = |key: &str| {
                map.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            return Line::Panic(Panic {
                message: text("message"),
                location: text("location"),
                thread: text("thread"),
                on_main: map.get("main").and_then(Value::as_bool).unwrap_or(true),
            });
        }
        tracing::warn!("unreadable panic line: {line}");
    }
    Line::Text(line.to_owned())
}

fn parse_display(json: &str) -> Option<Line> {
    let Value::Object(mut map) = serde_json::from_str::<Value>(json).ok()? else {
        return None;
    };
    let object = |map: &mut Map<String, Value>, key: &str| match map.remove(key) {
        Some(Value::Object(inner)) => Some(inner),
        None | Some(Value::Null) => Some(Map::new()),
        Some(_) => None,
    };
    let display_id = match map.get("display_id") {
        Some(Value::String(id)) => Some(id.clone()),
        _ => None,
    };
    match map.get("op")?.as_str()? {
        "display" => Some(Line::Display {
            data: object(&mut map, "data")?,
            metadata: object(&mut map, "metadata")?,
            display_id,
        }),
        "update" => Some(Line::Update {
            data: object(&mut map, "data")?,
            metadata: object(&mut map, "metadata")?,
            display_id: display_id?,
        }),
        "clear" => Some(Line::Clear {
            wait: map.get("wait").and_then(Value::as_bool).unwrap_or(false),
        }),
        "stream" => Some(Line::Stream {
            stderr: map.get("name").and_then(Value::as_str) == Some("stderr"),
            text: map.get("text")?.as_str()?.to_owned(),
        }),
        _ => None,
    }
}

/// A MIME bundle as `jupyter_protocol` types it.
pub fn media(data: Map<String, Value>) -> Media {
    serde_json::from_value(Value::Object(data)).unwrap_or_default()
}

/// A cell's final value (evcxr gives one string per MIME type; JSON types must become values).
pub fn value_media(mime: &[(String, String)]) -> Media {
    let mut data = Map::new();
    for (kind, text) in mime {
        let value = if kind == "application/json" || kind.ends_with("+json") {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        } else {
            Value::String(text.clone())
        };
        data.insert(kind.clone(), value);
    }
    media(data)
}

/// A table the kernel lays out itself (`:help`, `:vars`): aligned text, and HTML whose cells are
/// left-aligned inline (JupyterLab's default style right-aligns table cells, which makes a column
/// of names and sentences hard to read).
pub fn table_media(table: &Table) -> Media {
    let widths: Vec<usize> = (0..table.header.len())
        .map(|column| {
            std::iter::once(&table.header)
                .chain(&table.rows)
                .filter_map(|row| row.get(column))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let text_row = |row: &Vec<String>| {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        cells.join("  ").trim_end().to_owned()
    };
    let mut text = text_row(&table.header);
    for row in &table.rows {
        text.push('\n');
        text.push_str(&text_row(row));
    }
    let html_row = |tag: &str, row: &Vec<String>| {
        let cells: String = row
            .iter()
            .map(|cell| {
                format!(
                    "<{tag} style=\"text-align: left; vertical-align: top\">{}</{tag}>",
                    escape_html(cell)
                )
            })
            .collect();
        format!("<tr>{cells}</tr>")
    };
    let body: String = table.rows.iter().map(|row| html_row("td", row)).collect();
    let mut html = format!(
        "<table><thead>{}</thead><tbody>{body}</tbody></table>",
        html_row("th", &table.header)
    );
    if let Some(note) = &table.note {
        text.push_str("\n\n");
        text.push_str(note);
        html.push_str(&format!("<p>{}</p>", escape_html(note)));
    }
    Media::new(vec![MediaType::Plain(text), MediaType::Html(html)])
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A cell whose final expression is `()` (a `for`, an `if` that prints): evcxr sends its Debug
/// form, but like Python's `None` it is not a value worth showing.
pub fn is_unit(mime: &[(String, String)]) -> bool {
    matches!(mime, [(kind, text)] if kind == "text/plain" && text.trim() == "()")
}

/// What an `error` message and an error reply carry.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReport {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

const RED: &str = "\x1b[1;31m";
const BLUE: &str = "\x1b[1;34m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// A panic: the message, where it happened and, when the location is in the cell, that line
/// (numbered as in the cell when the line can be found there).
///
/// A libtorch error (`Torch("...")`, what tch's panicking methods unwrap) is one line of its
/// message first; the C++ frames libtorch appends follow at the end of the traceback, for those
/// who want them. Out of memory names the size asked for and the memory free. A panic inside a
/// library (tch's `tensor_generated.rs`) is traced back to the cell line that called the
/// library function it happened in. An interrupt never points into the prelude's sources.
pub fn panic_report(panic: &Panic, cell: &str, generated_source: Option<&str>) -> ErrorReport {
    const INTERRUPT: &str = "KeyboardInterrupt";
    let torch = torch_error(&panic.message);
    let (ename, evalue) = match (panic.message.strip_prefix(INTERRUPT), &torch) {
        (Some(rest), _) => (
            INTERRUPT.to_owned(),
            rest.trim_start_matches(':').trim().to_owned(),
        ),
        (None, Some(torch)) => match out_of_memory(&torch.summary) {
            Some(short) => ("OutOfMemoryError".to_owned(), short),
            None => ("TorchError".to_owned(), torch.summary.clone()),
        },
        (None, None) => ("panic".to_owned(), panic.message.clone()),
    };
    let mut traceback = vec![format!(
        "{RED}{ename}{RESET}{BOLD}: {evalue}{RESET}",
        evalue = if evalue.is_empty() {
            "interrupted"
        } else {
            &evalue
        }
    )];
    if !panic.location.is_empty() {
        let in_cell = cell_line(&panic.location, generated_source).map(|line| {
            // evcxr wraps the cell in generated code; its lines keep their text, so the
            // cell's own line number is where that text is.
            let wanted = line.trim().to_owned();
            let number = cell.lines().position(|l| l.trim() == wanted);
            (number, wanted)
        });
        match in_cell {
            Some((number, wanted)) => {
                let at = match number {
                    Some(number) => format!("  at cell line {}", number + 1),
                    None => format!("  at {}", panic.location),
                };
                traceback.push(format!("{at}\n{BLUE}   |{RESET} {wanted}"));
            }
            None => {
                let caller = enclosing_function(&panic.location)
                    .and_then(|function| calling_line(cell, &function).map(|l| (function, l)));
                if let Some((function, (number, text))) = caller {
                    traceback.push(format!(
                        "  at cell line {number}, in `{function}`\n{BLUE}   |{RESET} {text}"
                    ));
                }
                // The prelude's interrupt check lives in the build cache: where it was
                // reached says nothing the user can act on.
                if ename != INTERRUPT {
                    traceback.push(format!("  (panicked at {})", panic.location));
                }
            }
        }
    }
    if let Some(torch) = torch.filter(|t| !t.rest.is_empty()) {
        traceback.push(format!("libtorch's full report:\n{}", torch.rest));
    }
    ErrorReport {
        ename,
        evalue,
        traceback,
    }
}

/// The source line a panic location in the cell's generated crate points at.
fn cell_line(location: &str, generated_source: Option<&str>) -> Option<String> {
    let mut parts = location.rsplitn(3, ':');
    let _column = parts.next()?;
    let line: usize = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    if !file.ends_with("src/lib.rs") {
        return None;
    }
    let text = generated_source?.lines().nth(line.checked_sub(1)?)?;
    Some(text.to_owned())
}

/// A libtorch error inside a panic message: its first sentence(s) and everything after.
struct TorchError {
    summary: String,
    rest: String,
}

/// `called Result::unwrap() on an Err value: Torch("msg\nException raised from ...")` → the
/// message (unescaped) split where libtorch's own frames begin.
fn torch_error(message: &str) -> Option<TorchError> {
    let start = message.find("Torch(\"")? + "Torch(\"".len();
    let end = message.rfind("\")").filter(|&end| end >= start)?;
    let text = unescape_debug(&message[start..end]);
    let cut = text
        .find("\nException raised from")
        .or_else(|| text.find("Exception raised from"))
        .unwrap_or(text.len());
    let (head, rest) = text.split_at(cut);
    let summary = head
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Some(TorchError {
        summary,
        rest: rest.trim().to_owned(),
    })
}

/// Undoes `{:?}` escaping of a string (`\n`, `\"`, `\\`, `\t`, `\'`, `\u{..}`).
fn unescape_debug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let code: String = chars
                    .by_ref()
                    .skip_while(|&c| c == '{')
                    .take_while(|&c| c != '}')
                    .collect();
                if let Some(c) = u32::from_str_radix(&code, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The short form of libtorch's out-of-memory errors, CPU and CUDA, or `None` for others.
fn out_of_memory(summary: &str) -> Option<String> {
    if let Some(at) = summary.find("you tried to allocate ") {
        // CPU: "[enforce fail at alloc_cpu.cpp:..] ... DefaultCPUAllocator: not enough memory:
        // you tried to allocate 40000000000 bytes."
        let digits: String = summary[at + "you tried to allocate ".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let asked = digits.parse::<u64>().ok()?;
        let free = match available_memory() {
            Some((available, total)) => {
                format!(
                    "{} is available (of {})",
                    human_bytes(available),
                    human_bytes(total)
                )
            }
            None => "the memory available is unknown".to_owned(),
        };
        return Some(format!(
            "not enough memory: the cell asked for {} on the CPU; {free}. Variables are kept.",
            human_bytes(asked)
        ));
    }
    if summary.contains("CUDA out of memory") {
        // "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of
        // 79.19 GiB of which 3.12 GiB is free. ..."
        // A size is the two words after `key`: "20.00 GiB".
        let after = |key: &str| {
            let at = summary.find(key)? + key.len();
            let words: Vec<&str> = summary[at..].split_whitespace().take(2).collect();
            (words.len() == 2).then(|| words.join(" ").trim_end_matches(['.', ',']).to_owned())
        };
        let asked = after("Tried to allocate ").unwrap_or_else(|| "?".to_owned());
        let gpu = summary
            .find("GPU ")
            .map(|at| {
                summary[at..]
                    .split(" has")
                    .next()
                    .unwrap_or("GPU")
                    .to_owned()
            })
            .unwrap_or_else(|| "the GPU".to_owned());
        let free = after("of which ");
        return Some(match free {
            Some(free) => format!(
                "CUDA out of memory: the cell asked for {asked} on {gpu}; {free} is free. \
                 Variables are kept (`cuda::empty_cache()` returns cached blocks)."
            ),
            None => format!("CUDA out of memory: the cell asked for {asked}. Variables are kept."),
        });
    }
    None
}

/// `MemAvailable` and `MemTotal` of this machine, in bytes.
fn available_memory() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    };
    Some((field("MemAvailable:")?, field("MemTotal:")?))
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The name of the function whose body holds `file:line:col` (a library's source on disk).
fn enclosing_function(location: &str) -> Option<String> {
    let mut parts = location.rsplitn(3, ':');
    let _column = parts.next()?;
    let line: usize = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    let text = std::fs::read_to_string(file).ok()?;
    let lines: Vec<&str> = text.lines().take(line).collect();
    lines.iter().rev().find_map(|l| {
        let rest = l.trim_start();
        let rest = rest.strip_prefix("pub ").unwrap_or(rest);
        let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
        let name: String = rest
            .strip_prefix("fn ")?
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    })
}

/// The first cell line calling `function` (`.name(` or `::name(`), 1-based, with its text.
fn calling_line(cell: &str, function: &str) -> Option<(usize, String)> {
    let method = format!(".{function}(");
    let path = format!("::{function}(");
    cell.lines()
        .position(|l| l.contains(&method) || l.contains(&path))
        .map(|index| {
            (
                index + 1,
                cell.lines().nth(index).unwrap_or("").trim().to_owned(),
            )
        })
}

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

/// rustc diagnostics rendered against the cell's own lines, rustc style:
///
/// ```text
/// error[E0308]: mismatched types
///  --> cell:1:14
///   |
/// 1 | let x: i32 = "a";
///   |              ^^^ expected `i32`, found `&str`
/// ```
pub fn compile_report(code: &str, diagnostics: &[Diagnostic]) -> ErrorReport {
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
        let label = span
            .label
            .strip_prefix("error: ")
            .unwrap_or(&span.label)
            .to_owned();
        out.push_str(&format!(
            "{pad} {BLUE}|{RESET} {prefix}{colour}{carets} {label}{RESET}\n"
        ));
    }
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
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_lines_parse_into_operations() {
        let line = r#"TCHBOOK_DISPLAY {"op":"display","data":{"text/html":"<b>x</b>"},"metadata":{},"display_id":"d1"}"#;
        match parse_line(line) {
            Line::Display {
                data, display_id, ..
            } => {
                assert_eq!(data["text/html"], "<b>x</b>");
                assert_eq!(display_id.as_deref(), Some("d1"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_line(r#"TCHBOOK_DISPLAY {"op":"clear","wait":true}"#),
            Line::Clear { wait: true }
        );
        assert_eq!(
            parse_line(r#"TCHBOOK_DISPLAY {"op":"stream","name":"stdout","text":"50%"}"#),
            Line::Stream {
                stderr: false,
                text: "50%".into()
            }
        );
    }

    #[test]
    fn tables_are_left_aligned_with_their_note_below() {
        let table = Table {
            header: vec!["Variable".into(), "Type".into()],
            rows: vec![vec!["v".into(), "Vec<i32>".into()]],
            note: Some("a <note>".into()),
        };
        let media = serde_json::to_value(table_media(&table)).unwrap();
        let html = media["text/html"].as_str().unwrap();
        assert_eq!(html.matches("text-align: left").count(), 4, "{html}");
        assert!(html.contains("Vec&lt;i32&gt;") && html.ends_with("<p>a &lt;note&gt;</p>"));
        let text = media["text/plain"].as_str().unwrap();
        assert_eq!(text, "Variable  Type\nv         Vec<i32>\n\na <note>");
    }

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
    fn malformed_display_lines_are_kept_as_text() {
        let line = "TCHBOOK_DISPLAY {not json";
        assert_eq!(parse_line(line), Line::Text(line.into()));
        let update_without_id = r#"TCHBOOK_DISPLAY {"op":"update","data":{}}"#;
        assert_eq!(
            parse_line(update_without_id),
            Line::Text(update_without_id.into())
        );
    }

    #[test]
    fn keyboard_interrupt_panics_are_named_so() {
        let panic = Panic {
            message: "KeyboardInterrupt: interrupted by the user".into(),
            location: "src/lib.rs:3:5".into(),
            thread: "<unnamed>".into(),
            on_main: true,
        };
        let report = panic_report(
            &panic,
            "let x = 1;\nloop_body();",
            Some("a\nb\n    loop_body();\n"),
        );
        assert_eq!(report.ename, "KeyboardInterrupt");
        assert_eq!(report.evalue, "interrupted by the user");
        assert!(report.traceback[1].contains("at cell line 2"), "{report:?}");
        assert!(report.traceback[1].contains("loop_body();"));
    }

    #[test]
    fn an_interrupt_outside_the_cell_does_not_point_into_the_build_cache() {
        let panic = Panic {
            message: "KeyboardInterrupt: interrupted by the user".into(),
            location: "/home/u/.cache/tchbook/build/x/prelude/src/data/loader.rs:200:13".into(),
            thread: "<unnamed>".into(),
            on_main: true,
        };
        let report = panic_report(&panic, "for b in &loader {}", None);
        assert_eq!(report.traceback.len(), 1, "{report:?}");
        assert!(!report.traceback[0].contains(".cache"));
    }

    #[test]
    fn cpu_out_of_memory_is_one_short_line_then_the_details() {
        let frames = "Exception raised from allocate at alloc_cpu.cpp:117 (most recent call \
                      first):\nframe #0: c10::Error::Error() + 0x1f";
        let panic = Panic {
            message: format!(
                "called `Result::unwrap()` on an `Err` value: Torch(\"[enforce fail at \
                 alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to \
                 allocate 17592186044416 bytes.\\n{frames}\")"
            ),
            location: "/nonexistent/tensor_generated.rs:10:5".into(),
            thread: "<unnamed>".into(),
            on_main: true,
        };
        let report = panic_report(
            &panic,
            "let a = 1;\nlet big = Tensor::zeros([1], opts);",
            None,
        );
        assert_eq!(report.ename, "OutOfMemoryError");
        assert!(
            report.evalue.contains("16.0 TiB on the CPU"),
            "{}",
            report.evalue
        );
        assert!(report.evalue.contains("available"), "{}", report.evalue);
        assert!(report.evalue.len() < 200, "{}", report.evalue);
        assert!(report.traceback.last().unwrap().contains("frame #0"));
    }

    #[test]
    fn cuda_out_of_memory_names_the_size_and_the_free_memory() {
        let short = out_of_memory(
            "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of \
             79.19 GiB of which 3.12 GiB is free. Of the allocated memory 70 GiB is allocated",
        )
        .unwrap();
        assert!(short.contains("asked for 20.00 GiB on GPU 0"), "{short}");
        assert!(short.contains("3.12 GiB is free"), "{short}");
    }

    #[test]
    fn a_panic_in_a_library_function_points_at_the_cell_line_calling_it() {
        let dir = std::env::temp_dir().join(format!("tchbook-display-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tensor_generated.rs");
        std::fs::write(&file, "impl Tensor {\n    pub fn zeros(size: i64) -> Tensor {\n        Self::f_zeros(size).unwrap()\n    }\n}\n").unwrap();
        let panic = Panic {
            message: "called `Result::unwrap()` on an `Err` value: Torch(\"bad size\")".into(),
            location: format!("{}:3:29", file.display()),
            thread: "<unnamed>".into(),
            on_main: true,
        };
        let report = panic_report(&panic, "let a = 1;\nlet t = Tensor::zeros(-1);", None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(report.ename, "TorchError");
        assert_eq!(report.evalue, "bad size");
        assert!(
            report.traceback[1].contains("at cell line 2, in `zeros`"),
            "{report:?}"
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
