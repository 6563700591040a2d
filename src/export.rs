//! `tchbook export`: a notebook as a standalone Cargo project whose one binary runs the notebook
//! headless, and `--merge`, which writes the outputs that binary recorded back into the notebook.
//!
//! The project (`DIR/`):
//!
//! ```text
//! Cargo.toml             the package, `:dep` lines as [dependencies], the prelude by path
//! Cargo.lock             this kernel's own lock file: the versions the kernel was tested with
//! src/main.rs            the cells in order: items (fn, struct, impl, use, ...) at the top level
//!                        as evcxr keeps them, statements in one function, each cell's final
//!                        expression shown as the kernel shows it
//! src/tchbook_runner.rs  the headless runner (src/export/runner.rs): output, --record, errors
//! tchbook-prelude/       the prelude's sources, embedded in this kernel (unless --prelude)
//! ```
//!
//! Why the prelude is copied in: a batch job on a cluster, or a GPU machine that has no Rust
//! toolchain (the binary travels there), must not need this kernel's build cache or a checkout;
//! the project directory alone builds anywhere with a Rust toolchain and libtorch. `--prelude
//! DIR` names a prelude checkout instead (CI and `scripts/gpu-check` use the workspace's, so
//! every exported project shares one build of tch and the prelude in one target directory).
//!
//! `:` commands are translated where a compiled program has an equivalent (`:dep`, `:timing`,
//! `:timeit`, `:fmt`, `:types`) and otherwise dropped with a comment saying why (`:vars`,
//! `:help`, `:clear`, ...).

use anyhow::{bail, Context, Result};
use ra_ap_syntax::ast::{self, HasName};
use ra_ap_syntax::{AstNode, Edition, SourceFile, SyntaxKind};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The runner every exported project carries as `src/tchbook_runner.rs`.
const RUNNER: &str = include_str!("export/runner.rs");
/// This workspace's lock file: an exported project resolves to the same versions.
const LOCK: &str = include_str!("../Cargo.lock");

#[cfg(test)]
#[path = "export/runner.rs"]
mod runner;

/// What `tchbook export NOTEBOOK` was asked for.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub notebook: PathBuf,
    /// Default: the notebook's name without `.ipynb`, next to it.
    pub out_dir: Option<PathBuf>,
    /// A prelude crate to depend on by path instead of a copy of the embedded one.
    pub prelude: Option<PathBuf>,
}

/// One code cell of a notebook.
#[derive(Debug, Clone)]
struct CodeCell {
    /// Its index among all the notebook's cells.
    index: usize,
    source: String,
    tags: Vec<String>,
}

/// A notebook translated into Rust.
#[derive(Debug, Default)]
struct Translation {
    dependencies: BTreeMap<String, String>,
    /// Top-level items, in order of appearance.
    items: Vec<String>,
    /// The body of `fn cells()`.
    body: String,
    /// `(cell index, source hash, source)` per code cell.
    cells: Vec<(usize, String, String)>,
}

/// Writes the project; returns its directory.
pub fn export(options: &ExportOptions) -> Result<PathBuf> {
    let notebook = &options.notebook;
    let cells = read_code_cells(notebook)?;
    let name = notebook
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "notebook.ipynb".to_owned());
    let stem = name.trim_end_matches(".ipynb").to_owned();
    let out_dir = match &options.out_dir {
        Some(dir) => dir.clone(),
        None => notebook.with_file_name(&stem),
    };
    let translation = translate(&cells)?;
    let package = package_name(&stem);

    std::fs::create_dir_all(out_dir.join("src"))
        .with_context(|| format!("creating {}", out_dir.display()))?;
    let prelude_path = match &options.prelude {
        Some(dir) => {
            let dir = std::fs::canonicalize(dir)
                .with_context(|| format!("--prelude {}: no such directory", dir.display()))?;
            if !dir.join("Cargo.toml").is_file() {
                bail!(
                    "--prelude {}: no Cargo.toml there; name the prelude crate's directory \
                     (prelude/ in a tchbook checkout)",
                    dir.display()
                );
            }
            dir.display().to_string()
        }
        None => {
            let dir = out_dir.join("tchbook-prelude");
            for (relative, contents) in crate::cache::PRELUDE_FILES {
                let path = dir.join(relative);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                write_if_changed(&path, contents)?;
            }
            "tchbook-prelude".to_owned()
        }
    };
    write_if_changed(
        &out_dir.join("Cargo.toml"),
        manifest(&package, &prelude_path, &translation.dependencies).as_bytes(),
    )?;
    // Only seeds the resolution: cargo keeps the versions it can use and drops the rest.
    if !out_dir.join("Cargo.lock").exists() {
        std::fs::write(out_dir.join("Cargo.lock"), LOCK)?;
    }
    write_if_changed(
        &out_dir.join("src/main.rs"),
        main_rs(&name, &translation).as_bytes(),
    )?;
    write_if_changed(&out_dir.join("src/tchbook_runner.rs"), RUNNER.as_bytes())?;
    Ok(out_dir)
}

/// A file rewritten with the same bytes would make cargo rebuild it.
fn write_if_changed(path: &Path, contents: &[u8]) -> Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// `01-using-the-gpu` → `nb-01-using-the-gpu` (a package name starts with a letter).
fn package_name(stem: &str) -> String {
    let cleaned: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    match cleaned.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => cleaned,
        _ => format!("nb-{cleaned}"),
    }
}

fn read_notebook(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the notebook {}", path.display()))?;
    let notebook: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a notebook (not JSON)", path.display()))?;
    if !notebook["cells"].is_array() {
        bail!("{} is not a notebook (no cells)", path.display());
    }
    Ok(notebook)
}

/// nbformat keeps multi-line text as a list of lines or as one string.
fn joined(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fn read_code_cells(path: &Path) -> Result<Vec<CodeCell>> {
    let notebook = read_notebook(path)?;
    let cells = notebook["cells"].as_array().cloned().unwrap_or_default();
    Ok(cells
        .iter()
        .enumerate()
        .filter(|(_, cell)| cell["cell_type"] == "code")
        .map(|(index, cell)| CodeCell {
            index,
            source: joined(&cell["source"]),
            tags: cell["metadata"]["tags"]
                .as_array()
                .map(|tags| {
                    tags.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect())
}

/// FNV-1a of a cell's source: `--merge` checks the cell is still the one that was run.
fn source_hash(source: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in source.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
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

fn translate(cells: &[CodeCell]) -> Result<Translation> {
    let mut out = Translation::default();
    // Item name → (cell position, text): evcxr keeps one definition per name.
    let mut named: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (position, cell) in cells.iter().enumerate() {
        out.cells
            .push((cell.index, source_hash(&cell.source), cell.source.clone()));
        let count = position + 1;
        let mut body = String::new();
        let mut rust = String::new();
        let trimmed = cell.source.trim_start();
        if let Some(expression) = command_argument(trimmed, ":timeit") {
            writeln!(body, "// :timeit {expression}")?;
            body.push_str(&crate::engine::timeit_code(expression));
            body.push('\n');
        } else {
            for line in cell.source.lines() {
                let command = line.trim();
                if !command.starts_with(':') || command.starts_with("::") {
                    rust.push_str(line);
                    rust.push('\n');
                    continue;
                }
                let name = command.split_whitespace().next().unwrap_or(command);
                let argument = command[name.len()..].trim();
                match name {
                    ":dep" => {
                        let (crate_name, spec) = parse_dep(argument).with_context(|| {
                            format!("In [{count}] (cell {}): `{command}`", cell.index)
                        })?;
                        writeln!(body, "// {command}  (in Cargo.toml)")?;
                        out.dependencies.insert(crate_name, spec);
                    }
                    ":timing" => body.push_str("tchbook_runner::toggle_timing();\n"),
                    ":fmt" => writeln!(
                        body,
                        "{{ let (pretty, types) = tchbook_runner::set_format({argument:?}); \
                         tchbook_prelude::display::set_plain_format(pretty, types); }}"
                    )?,
                    ":types" => body.push_str(
                        "{ let (pretty, types) = tchbook_runner::toggle_types(); \
                         tchbook_prelude::display::set_plain_format(pretty, types); }\n",
                    ),
                    _ => writeln!(
                        body,
                        "// {command}: dropped by `tchbook export` ({})",
                        dropped_command_reason(name)
                    )?,
                }
            }
        }
        let split = split_cell(&rust).with_context(|| {
            format!(
                "In [{count}] (cell {}) does not parse as Rust; fix it in the notebook",
                cell.index
            )
        })?;
        for (name, text) in split.items {
            let key = text.split_whitespace().collect::<Vec<_>>().join(" ");
            match name {
                Some(name) => match named.get(&name) {
                    Some((_, earlier)) if *earlier == key => continue,
                    Some((first, _)) => bail!(
                        "In [{count}] (cell {}) redefines `{name}`, first defined in In [{}]: \
                         the kernel replaces a definition, but a program has one per name; \
                         give one of them another name",
                        cell.index,
                        first + 1
                    ),
                    None => {
                        named.insert(name, (position, key));
                    }
                },
                // Identical `use`s in two cells are one import.
                None if out
                    .items
                    .iter()
                    .any(|i| i.split_whitespace().collect::<Vec<_>>().join(" ") == key) =>
                {
                    continue;
                }
                None => {}
            }
            out.items.push(text);
        }
        body.push_str(&split.statements);
        if let Some(tail) = &split.tail {
            // As evcxr shows a final value: `(expr).evcxr_display();` (the prelude gives std
            // values and its own types that method; `()` shows nothing).
            writeln!(body, "({}).evcxr_display();", tail.trim())?;
        }
        let allow_error = cell.tags.iter().any(|t| t == "raises-exception");
        writeln!(
            out.body,
            "\n    // ---- In [{count}] (notebook cell {}){} ----",
            cell.index,
            if allow_error {
                ", tagged raises-exception: a panic here does not stop the run"
            } else {
                ""
            }
        )?;
        writeln!(out.body, "    tchbook_runner::begin({position});")?;
        // The cell's code goes in as written, not re-indented: indenting would change the
        // text of a multi-line string literal.
        if allow_error {
            out.body
                .push_str("    tchbook_runner::allow_error(|| -> Result<(), CellError> {\n");
            out.body.push_str(&body);
            out.body.push_str("    Ok(())\n    })?;\n");
        } else {
            out.body.push_str(&body);
        }
        out.body.push_str("    tchbook_runner::end();\n");
    }
    Ok(out)
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

fn command_argument<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(name)?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// A cell's Rust split as evcxr splits it: items (with their names, `None` for `use` and
/// other unnamed items), the statements in order, and the final expression.
#[derive(Debug, Default)]
struct SplitCell {
    items: Vec<(Option<String>, String)>,
    statements: String,
    tail: Option<String>,
}

fn split_cell(code: &str) -> Result<SplitCell> {
    let mut split = SplitCell::default();
    if code.trim().is_empty() {
        return Ok(split);
    }
    let prefix = "fn tchbook_cell() {\n";
    let wrapped = format!("{prefix}{code}\n}}");
    let parsed = SourceFile::parse(&wrapped, Edition::Edition2021);
    if let Some(error) = parsed.errors().first() {
        let at = usize::from(error.range().start()).saturating_sub(prefix.len());
        let line = code[..at.min(code.len())].lines().count().max(1);
        bail!("line {line}: {error}");
    }
    let list = parsed
        .tree()
        .syntax()
        .descendants()
        .find_map(ast::StmtList::cast)
        .context("no function body in the parse")?;
    let text = |node: &ra_ap_syntax::SyntaxNode| {
        let range = node.text_range();
        let start = usize::from(range.start()) - prefix.len();
        let end = usize::from(range.end()) - prefix.len();
        code[start..end].to_owned()
    };
    // Every element in order, comments and blank lines included, so the cell reads as written.
    let tail = list.tail_expr().map(|t| t.syntax().clone());
    for element in list.syntax().children_with_tokens() {
        let node = match element {
            ra_ap_syntax::NodeOrToken::Token(token) => {
                if !matches!(token.kind(), SyntaxKind::L_CURLY | SyntaxKind::R_CURLY) {
                    split.statements.push_str(token.text());
                }
                continue;
            }
            ra_ap_syntax::NodeOrToken::Node(node) => node,
        };
        if Some(&node) == tail.as_ref() {
            split.tail = Some(text(&node));
            continue;
        }
        match ast::Item::cast(node.clone()) {
            Some(item) if !matches!(item, ast::Item::MacroCall(_)) => {
                let name = match &item {
                    ast::Item::Fn(i) => i.name(),
                    ast::Item::Struct(i) => i.name(),
                    ast::Item::Enum(i) => i.name(),
                    ast::Item::Union(i) => i.name(),
                    ast::Item::Trait(i) => i.name(),
                    ast::Item::TypeAlias(i) => i.name(),
                    ast::Item::Const(i) => i.name(),
                    ast::Item::Static(i) => i.name(),
                    ast::Item::Module(i) => i.name(),
                    ast::Item::MacroRules(i) => i.name(),
                    _ => None,
                };
                split
                    .items
                    .push((name.map(|n| n.text().to_string()), text(&node)));
            }
            _ => split.statements.push_str(&text(&node)),
        }
    }
    split.statements = split.statements.trim_matches('\n').to_owned();
    if !split.statements.is_empty() {
        split.statements.push('\n');
    }
    Ok(split)
}

fn manifest(package: &str, prelude: &str, dependencies: &BTreeMap<String, String>) -> String {
    let mut text = format!(
        "# Written by `tchbook export` (tchbook {version}). Build: `cargo build --release`, with\n\
         # libtorch found as for the kernel (LIBTORCH, or the torch package of the Python on PATH);\n\
         # run with libtorch's lib/ on LD_LIBRARY_PATH. See src/main.rs.\n\
         [package]\n\
         name = {package:?}\n\
         version = \"0.1.0\"\n\
         edition = \"2021\"\n\
         publish = false\n\
         \n\
         [dependencies]\n\
         tchbook-prelude = {{ path = {prelude:?} }}\n\
         libc = \"0.2\"\n\
         serde_json = \"1\"\n",
        version = crate::VERSION,
    );
    for (name, spec) in dependencies {
        if matches!(name.as_str(), "tchbook-prelude" | "libc" | "serde_json") {
            continue;
        }
        let _ = writeln!(text, "{name} = {spec}");
    }
    // The same release profile as the kernel's workspace, so a shared target directory reuses
    // its build of tch and the prelude; line tables keep panic backtraces readable.
    text.push_str(
        "\n[profile.release]\ndebug = \"line-tables-only\"\n\n\
         # Its own workspace: the project builds wherever it is copied, inside another one too.\n\
         [workspace]\n",
    );
    if prelude == "tchbook-prelude" {
        text.push_str("exclude = [\"tchbook-prelude\"]\n");
    }
    text
}

fn main_rs(notebook: &str, translation: &Translation) -> String {
    let mut text = format!(
        "//! `{notebook}`, exported by `tchbook export` (tchbook {version}): the notebook's cells in\n\
         //! order, run headless by one binary. Rich output prints as text; `--record FILE` also\n\
         //! writes every cell's outputs as Jupyter outputs, and `tchbook export --merge FILE\n\
         //! {notebook}` puts them into the notebook. A panic stops the run as \"run all\" stops\n\
         //! (cells tagged raises-exception excepted); an error returned by `?` is printed and\n\
         //! stops it too. Generated: edit the notebook and export again.\n\
         \n\
         #![allow(warnings)]\n\
         \n\
         mod tchbook_runner;\n\
         \n\
         use tchbook_prelude::prelude::*;\n\
         use tchbook_runner::CellError;\n\
         \n\
         static NOTEBOOK: tchbook_runner::Notebook = tchbook_runner::Notebook {{\n\
         \x20   name: {notebook:?},\n\
         \x20   exported_by: \"tchbook {version}\",\n\
         \x20   cells: &[\n",
        version = crate::VERSION,
    );
    for (index, hash, source) in &translation.cells {
        let _ = writeln!(text, "        ({index}, {hash:?}, {source:?}),");
    }
    text.push_str(
        "    ],\n    main_rs: include_str!(\"main.rs\"),\n};\n\n\
         fn main() -> std::process::ExitCode {\n\
         \x20   tchbook_runner::run(\n\
         \x20       &NOTEBOOK,\n\
         \x20       tchbook_prelude::runtime::attach,\n\
         \x20       tchbook_prelude::interrupt::is_pending,\n\
         \x20       cells,\n\
         \x20   )\n\
         }\n",
    );
    if !translation.items.is_empty() {
        text.push_str(
            "\n// ---- Items defined in the cells (evcxr keeps them at the top level too)\n",
        );
        for item in &translation.items {
            text.push('\n');
            text.push_str(item.trim_end());
            text.push('\n');
        }
    }
    text.push_str("\nfn cells() -> Result<(), CellError> {");
    text.push_str(&translation.body);
    text.push_str("    Ok(())\n}\n");
    text
}

// ---------------------------------------------------------------------------------------------
// --merge

/// Writes the outputs in `record` (from an exported program's `--record`) into `notebook`.
/// Every code cell's outputs are replaced: cells the run did not reach are left empty, as a run
/// that stopped leaves them, so a notebook never mixes outputs of two runs.
pub fn merge(record: &Path, notebook: &Path) -> Result<()> {
    let text = std::fs::read_to_string(record)
        .with_context(|| format!("reading the record {}", record.display()))?;
    let record: Value = serde_json::from_str(&text)
        .with_context(|| "the record is not JSON: was it written by `--record`?")?;
    if record["tchbook_record"] != 1 {
        bail!("not a record written by an exported notebook's `--record`");
    }
    let mut nb = read_notebook(notebook)?;
    let name = notebook
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if record["notebook"].as_str() != Some(name.as_str()) {
        eprintln!(
            "tchbook: note: the record is of {}, merging into {name}",
            record["notebook"]
        );
    }
    let mut by_cell: BTreeMap<usize, &Value> = BTreeMap::new();
    for entry in record["cells"].as_array().into_iter().flatten() {
        let Some(index) = entry["cell"].as_u64() else {
            continue;
        };
        by_cell.insert(index as usize, entry);
    }
    let cells = nb["cells"].as_array_mut().context("no cells")?;
    for (index, cell) in cells.iter().enumerate() {
        if cell["cell_type"] != "code" {
            continue;
        }
        if let Some(entry) = by_cell.get(&index) {
            let hash = source_hash(&joined(&cell["source"]));
            if entry["source_hash"].as_str() != Some(hash.as_str()) {
                bail!(
                    "cell {index} of {name} changed since it was exported and run; export and \
                     run it again, then merge"
                );
            }
        }
    }
    for (index, cell) in cells.iter_mut().enumerate() {
        if cell["cell_type"] != "code" {
            continue;
        }
        let (outputs, count) = match by_cell.get(&index) {
            Some(entry) => (
                entry["outputs"]
                    .as_array()
                    .map(|outputs| outputs.iter().map(nbformat_output).collect())
                    .unwrap_or_default(),
                entry["execution_count"].clone(),
            ),
            None => (Vec::new(), Value::Null),
        };
        cell["outputs"] = Value::Array(outputs);
        cell["execution_count"] = count;
        // Timings of the earlier run would describe another run.
        if let Some(metadata) = cell["metadata"].as_object_mut() {
            metadata.remove("execution");
        }
    }
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    serde::Serialize::serialize(&nb, &mut serializer)?;
    bytes.push(b'\n');
    std::fs::write(notebook, bytes).with_context(|| format!("writing {}", notebook.display()))
}

/// An output as nbformat writes it: multi-line text as a list of lines (stream text, `text/*`,
/// SVG), JSON values as they are.
fn nbformat_output(output: &Value) -> Value {
    let mut output = output.clone();
    if let Some(Value::String(text)) = output.get("text") {
        output["text"] = split_lines(text);
    }
    if let Some(Value::Object(data)) = output.get_mut("data") {
        let keys: Vec<String> = data.keys().cloned().collect();
        for key in keys {
            let split = key.starts_with("text/") || key == "image/svg+xml";
            if let (true, Some(Value::String(text))) = (split, data.get(&key)) {
                let lines = split_lines(text);
                data.insert(key, lines);
            }
        }
    }
    output
}

/// Python's `str.splitlines(keepends=True)` for `\n`, as nbformat stores text.
fn split_lines(text: &str) -> Value {
    Value::Array(
        text.split_inclusive('\n')
            .map(|line| Value::String(line.to_owned()))
            .collect(),
    )
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
    fn items_go_to_the_top_level_and_the_final_expression_is_displayed() {
        let split = split_cell(
            "#[derive(Debug)]\nstruct A { x: i64 }\nimpl A { fn new() -> A { A { x: 1 } } }\n\
             use std::collections::HashMap;\nlet a = A::new();\nprintln!(\"{}\", a.x);\na",
        )
        .unwrap();
        assert_eq!(split.items.len(), 3, "{split:?}");
        assert_eq!(split.items[0].0.as_deref(), Some("A"));
        assert!(split.items[0].1.starts_with("#[derive(Debug)]"));
        assert_eq!(split.items[2].0, None);
        assert!(split.statements.contains("let a = A::new();"));
        assert!(split.statements.contains("println!"));
        assert_eq!(split.tail.as_deref(), Some("a"));
    }

    #[test]
    fn a_loop_ending_a_cell_is_a_statement_or_a_unit_value() {
        let split = split_cell("for i in 0..3 {\n    println!(\"{i}\");\n};").unwrap();
        assert_eq!(split.tail, None);
        let split = split_cell("if true { 1 } else { 2 }").unwrap();
        assert_eq!(split.tail.as_deref(), Some("if true { 1 } else { 2 }"));
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
        assert!(t
            .body
            .contains("// :vars: dropped by `tchbook export` (the variables' types"));
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
        assert!(t
            .body
            .contains("tchbook_runner::allow_error(|| -> Result<(), CellError> {"));
    }

    #[test]
    fn merged_text_is_split_into_lines_as_nbformat_writes_it() {
        let output = serde_json::json!({
            "output_type": "execute_result",
            "data": {"text/plain": "a\nb", "image/png": "AAA", "application/json": {"x": 1}},
        });
        let merged = nbformat_output(&output);
        assert_eq!(
            merged["data"]["text/plain"],
            serde_json::json!(["a\n", "b"])
        );
        assert_eq!(merged["data"]["image/png"], "AAA");
        assert_eq!(merged["data"]["application/json"]["x"], 1);
    }

    #[test]
    fn package_names_start_with_a_letter() {
        assert_eq!(package_name("01-using-the-gpu"), "nb-01-using-the-gpu");
        assert_eq!(package_name("My Notebook"), "my-notebook");
    }
}
