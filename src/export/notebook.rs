//! Reading a notebook file: its code cells as the export translates them, and the hash that ties
//! a record's cells to the sources that were run.

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::Path;

/// One code cell of a notebook.
#[derive(Debug, Clone)]
pub(super) struct CodeCell {
    /// Its index among all the notebook's cells.
    pub(super) index: usize,
    pub(super) source: String,
    pub(super) tags: Vec<String>,
}

pub(super) fn read_notebook(path: &Path) -> Result<Value> {
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
pub(super) fn joined(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

pub(super) fn read_code_cells(path: &Path) -> Result<Vec<CodeCell>> {
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

/// The first 64 bits of a cell's source's SHA-256: `--merge` checks the cell is still the one
/// that was run.
pub(super) fn source_hash(source: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(source.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The commit of the git checkout `notebook` lies in (short hash), with " (with uncommitted
/// changes)" where the checkout's tracked files differ from it; none outside a checkout or
/// without git. An exported program records it, so a notebook merged from its run says which
/// sources made its outputs.
pub(super) fn source_commit(notebook: &Path) -> Option<String> {
    let dir = match notebook.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    };
    let head = git(&["rev-parse", "--short=7", "HEAD"])?;
    let hash = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    if !head.status.success() || hash.is_empty() {
        return None;
    }
    let clean = git(&["diff", "--quiet", "HEAD", "--"]).is_some_and(|diff| diff.status.success());
    Some(if clean {
        hash
    } else {
        format!("{hash} (with uncommitted changes)")
    })
}

/// Python's `str.splitlines(keepends=True)` for `\n`, as nbformat stores text.
pub(super) fn split_lines(text: &str) -> Value {
    Value::Array(
        text.split_inclusive('\n')
            .map(|line| Value::String(line.to_owned()))
            .collect(),
    )
}
