//! `tchbook export --merge RECORD NOTEBOOK`: the outputs an exported program recorded with
//! `--record` written into the notebook, as nbformat stores them.

use super::notebook::{joined, read_notebook, source_hash};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Writes the outputs in `record` (from an exported program's `--record`) into `notebook`.
/// Every code cell's outputs are replaced: cells the run did not reach are left empty, as a run
/// that stopped leaves them, so a notebook never mixes outputs of two runs.
pub fn merge(record: &Path, notebook: &Path) -> Result<()> {
    let record = read_record(record)?;
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
    check_unchanged(cells, &by_cell, &name)?;
    for (index, cell) in cells.iter_mut().enumerate() {
        if cell["cell_type"] == "code" {
            replace_outputs(cell, by_cell.get(&index).copied());
        }
    }
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    serde::Serialize::serialize(&nb, &mut serializer)?;
    bytes.push(b'\n');
    std::fs::write(notebook, bytes).with_context(|| format!("writing {}", notebook.display()))
}

fn read_record(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the record {}", path.display()))?;
    let record: Value = serde_json::from_str(&text)
        .with_context(|| "the record is not JSON: was it written by `--record`?")?;
    if record["tchbook_record"] != 1 {
        bail!("not a record written by an exported notebook's `--record`");
    }
    Ok(record)
}

/// Refuses a record whose cells' sources are not the notebook's any more.
fn check_unchanged(cells: &[Value], by_cell: &BTreeMap<usize, &Value>, name: &str) -> Result<()> {
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
    Ok(())
}

/// A code cell's outputs and count from its record `entry`, or none when the run did not reach it.
fn replace_outputs(cell: &mut Value, entry: Option<&Value>) {
    let (outputs, count) = match entry {
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
}
