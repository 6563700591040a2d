//! A notebook's code cells translated into one program: `:` commands into Rust or comments,
//! items to the top level (one definition per name, as evcxr keeps them), statements and final
//! values into the body of `fn cells()`, each cell between the runner's `begin` and `end`.

use super::notebook::{CodeCell, source_hash};
use super::split::split_cell;
use crate::commands::{Cell, Command, Line};
use crate::interrupt_points;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A notebook translated into Rust.
#[derive(Debug, Default)]
pub(super) struct Translation {
    pub(super) dependencies: BTreeMap<String, String>,
    /// Top-level items, in order of appearance.
    pub(super) items: Vec<String>,
    /// The body of `fn cells()`.
    pub(super) body: String,
    /// `(cell index, source hash, source)` per code cell.
    pub(super) cells: Vec<(usize, String, String)>,
}

/// Item name → (cell position, text without spacing): evcxr keeps one definition per name.
type Named = BTreeMap<String, (usize, String)>;

pub(super) fn translate(cells: &[CodeCell]) -> Result<Translation> {
    let mut out = Translation::default();
    let mut named = Named::new();
    for (position, cell) in cells.iter().enumerate() {
        out.cells
            .push((cell.index, source_hash(&cell.source), cell.source.clone()));
        let count = position + 1;
        let (mut body, rust) = commands(cell, count, &mut out.dependencies)?;
        // The loops stop on SIGINT as they do in the kernel (`interrupt_points`).
        let rust = interrupt_points::insert(&rust).code;
        let split = split_cell(&rust).with_context(|| {
            format!(
                "In [{count}] (cell {}) does not parse as Rust; fix it in the notebook",
                cell.index
            )
        })?;
        for (name, text) in split.items {
            if keep_item(&out.items, &mut named, name, &text, cell, position)? {
                out.items.push(text);
            }
        }
        body.push_str(&split.statements);
        if let Some(tail) = &split.tail {
            // As the kernel shows a final value: its `evcxr_display()` between the keyed lines
            // that make what it prints the value's (the prelude gives std values and its own
            // types that method; `()` shows nothing).
            let (before, after) =
                tchbook_wire::value::display_code(Some(crate::engine::VALUE_MARK));
            writeln!(body, "{before}{}{after}", tail.trim())?;
        }
        wrap_cell(&mut out.body, cell, position, &body)?;
    }
    Ok(out)
}

/// A cell's `:` commands: returns their translation (the start of the cell's body) and the
/// cell's Rust without them. `:dep`s go into `dependencies`.
fn commands(
    cell: &CodeCell,
    count: usize,
    dependencies: &mut BTreeMap<String, String>,
) -> Result<(String, String)> {
    let mut body = String::new();
    let parsed = Cell::parse(&cell.source);
    if let Some(expression) = parsed.timeit {
        writeln!(body, "// :timeit {expression}")?;
        body.push_str(&crate::engine::timeit_code(expression));
        body.push('\n');
        return Ok((body, String::new()));
    }
    for line in &parsed.lines {
        let Line::Command(command, text) = line else {
            continue;
        };
        if let Command::Dep(argument) = command {
            let (crate_name, spec) = parse_dep(argument)
                .with_context(|| format!("In [{count}] (cell {}): `{text}`", cell.index))?;
            writeln!(body, "// {text}  (in Cargo.toml)")?;
            dependencies.insert(crate_name, spec);
        } else {
            body.push_str(&command_code(command, text));
        }
    }
    Ok((body, parsed.rust()))
}

/// The code (or comment) a `:` command other than `:dep` and a cell's `:timeit` becomes.
fn command_code(command: &Command, text: &str) -> String {
    match command {
        Command::Timing => "tchbook_runner::toggle_timing();\n".to_owned(),
        Command::Fmt(argument) => format!(
            "{{ let (pretty, types) = tchbook_runner::set_format({argument:?}); \
             tchbook_prelude::display::set_plain_format(pretty, types); }}\n"
        ),
        Command::Types => "{ let (pretty, types) = tchbook_runner::toggle_types(); \
                     tchbook_prelude::display::set_plain_format(pretty, types); }\n"
            .to_owned(),
        _ => format!(
            "// {text}: dropped by `tchbook export` ({})\n",
            dropped_command_reason(command.name())
        ),
    }
}

/// Whether an item of the cell at `position` goes into the program: a named item defined
/// again with the same text, or a `use` already there, is left out; a name defined again with
/// other text is refused, since a program has one definition per name.
fn keep_item(
    items: &[String],
    named: &mut Named,
    name: Option<String>,
    text: &str,
    cell: &CodeCell,
    position: usize,
) -> Result<bool> {
    let key = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match name {
        Some(name) => match named.get(&name) {
            Some((_, earlier)) if *earlier == key => Ok(false),
            Some((first, _)) => bail!(
                "In [{}] (cell {}) redefines `{name}`, first defined in In [{}]: \
                 the kernel replaces a definition, but a program has one per name; \
                 give one of them another name",
                position + 1,
                cell.index,
                first + 1
            ),
            None => {
                named.insert(name, (position, key));
                Ok(true)
            }
        },
        // Identical `use`s in two cells are one import.
        None => Ok(!items
            .iter()
            .any(|i| i.split_whitespace().collect::<Vec<_>>().join(" ") == key)),
    }
}

/// Appends a cell's translated `body` to the body of `fn cells()`, between the runner's
/// `begin` and `end`, inside `allow_error` when the cell is tagged `raises-exception`.
fn wrap_cell(out: &mut String, cell: &CodeCell, position: usize, body: &str) -> Result<()> {
    let allow_error = cell.tags.iter().any(|t| t == "raises-exception");
    writeln!(
        out,
        "\n    // ---- In [{}] (notebook cell {}){} ----",
        position + 1,
        cell.index,
        if allow_error {
            ", tagged raises-exception: a panic here does not stop the run"
        } else {
            ""
        }
    )?;
    writeln!(out, "    tchbook_runner::begin({position});")?;
    // The cell's code goes in as written, not re-indented: indenting would change the
    // text of a multi-line string literal.
    if allow_error {
        out.push_str("    tchbook_runner::allow_error(|| -> Result<(), CellError> {\n");
        out.push_str(body);
        out.push_str("    Ok(())\n    })?;\n");
    } else {
        out.push_str(body);
    }
    out.push_str("    tchbook_runner::end();\n");
    Ok(())
}

/// The `:` commands evcxr has that a compiled program cannot honour, and why.
fn dropped_command_reason(name: &str) -> &'static str {
    match name {
        ":vars" => "the variables' types are known to the kernel only",
        ":help" => "it documents the kernel's commands",
        ":clear" | ":restart" => "an exported program runs the cells once, in one process",
        ":opt" => "the project builds in release mode (Cargo.toml)",
        _ => "it configures the kernel, not the program",
    }
}

/// `:dep NAME = SPEC` (SPEC in Cargo.toml's syntax) or `:dep NAME`.
fn parse_dep(argument: &str) -> Result<(String, String)> {
    let (name, spec) = match argument.split_once('=') {
        Some((name, spec)) => (name.trim(), spec.trim()),
        None => (argument.trim(), "\"*\""),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!("`:dep` wants `name = \"version\"` or `name = {{ ... }}`");
    }
    // The value must be TOML on its own line of Cargo.toml.
    toml::from_str::<toml::Table>(&format!("x = {spec}"))
        .map_err(|e| anyhow::anyhow!("the dependency spec is not TOML: {e}"))?;
    Ok((name.to_owned(), spec.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(index: usize, source: &str) -> CodeCell {
        CodeCell {
            index,
            source: source.to_owned(),
            tags: Vec::new(),
        }
    }

    #[test]
    fn commands_are_translated_or_dropped_with_a_reason() {
        let cells = vec![
            cell(0, ":dep rand = \"0.8\"\nlet x = 1;"),
            cell(1, ":timing"),
            cell(2, ":vars"),
            cell(3, ":timeit x + 1"),
        ];
        let t = translate(&cells).unwrap();
        assert_eq!(t.dependencies["rand"], "\"0.8\"");
        assert!(t.body.contains("tchbook_runner::toggle_timing();"));
        assert!(
            t.body
                .contains("// :vars: dropped by `tchbook export` (the variables' types")
        );
        assert!(t.body.contains("std::hint::black_box({ x + 1 })"));
        assert!(t.body.contains("tchbook_runner::begin(3);"));
    }

    #[test]
    fn identical_uses_merge_and_conflicting_definitions_are_refused() {
        let t = translate(&[
            cell(0, "use std::fmt;"),
            cell(1, "use std::fmt;\nfn f() -> i32 { 1 }"),
            cell(2, "fn f() -> i32 { 1 }"),
        ])
        .unwrap();
        assert_eq!(t.items.len(), 2, "{:?}", t.items);
        let error = translate(&[cell(0, "fn f() {}"), cell(4, "fn f() { println!(); }")])
            .unwrap_err()
            .to_string();
        assert!(error.contains("redefines `f`"), "{error}");
        assert!(error.contains("In [1]"), "{error}");
    }

    #[test]
    fn bad_code_and_bad_deps_name_the_cell() {
        let error = format!("{:#}", translate(&[cell(7, "let x = ;")]).unwrap_err());
        assert!(error.contains("cell 7"), "{error}");
        let error = format!(
            "{:#}",
            translate(&[cell(2, ":dep rand = {version = ")]).unwrap_err()
        );
        assert!(error.contains("not TOML"), "{error}");
    }

    #[test]
    fn raises_exception_cells_run_inside_allow_error() {
        let mut c = cell(5, "panic!(\"boom\");");
        c.tags = vec!["raises-exception".to_owned()];
        let t = translate(&[c]).unwrap();
        assert!(
            t.body
                .contains("tchbook_runner::allow_error(|| -> Result<(), CellError> {")
        );
    }
}
