//! `tchbook export --merge RECORD NOTEBOOK`: the outputs an exported program recorded with
//! `--record` written into the notebook, as nbformat stores them.

use super::beside::add_beside;
use super::notebook::{joined, read_notebook, source_hash, split_lines};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use tchbook_wire::record::{FORMAT, PROVENANCE_KEY, Record, RecordedCell, widget_state_metadata};

/// Writes the outputs in `record` (from an exported program's `--record`) into `notebook`.
/// Every code cell's outputs are replaced: cells the run did not reach are left empty, as a run
/// that stopped leaves them, so a notebook never mixes outputs of two runs unawares. `beside`,
/// another run's record, adds that run's text under the cells tagged `beside` (beside.rs),
/// headed with where and when it ran.
pub fn merge(record: &Path, notebook: &Path, beside: Option<&Path>) -> Result<()> {
    let record = read_record(record)?;
    let beside = beside.map(read_record).transpose()?;
    let mut nb = read_notebook(notebook)?;
    let name = notebook
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if record.notebook != name {
        eprintln!(
            "tchbook: note: the record is of {}, merging into {name}",
            record.notebook
        );
    }
    let by_cell: BTreeMap<usize, &RecordedCell> = record
        .cells
        .iter()
        .map(|entry| (entry.cell, entry))
        .collect();
    let cells = nb["cells"].as_array_mut().context("no cells")?;
    check_unchanged(cells, &by_cell, &name)?;
    for (index, cell) in cells.iter_mut().enumerate() {
        if cell["cell_type"] == "code" {
            replace_outputs(cell, by_cell.get(&index).copied());
        }
    }
    if let Some(other) = &beside {
        add_beside(cells, other, &name)?;
    }
    // The widget views in the new outputs are drawn from the state this run saved; state
    // saved by an earlier run names models these outputs do not show.
    let metadata = nb["metadata"].as_object_mut().context("no metadata")?;
    if record.widgets.is_empty() {
        metadata.remove("widgets");
    } else {
        metadata.insert("widgets".into(), widget_state_metadata(&record.widgets));
    }
    write_provenance(metadata, &record);
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    serde::Serialize::serialize(&nb, &mut serializer)?;
    bytes.push(b'\n');
    write_atomically(notebook, &bytes).with_context(|| format!("writing {}", notebook.display()))
}

/// Says in the notebook's metadata (`tchbook.provenance`) how the merged outputs were made, as the
/// run recorded it; notebooks/build.py writes the notebook's first-cell sentence from it. A record
/// from before runs recorded it leaves none: the outputs of an earlier run's description would
/// describe another run.
fn write_provenance(metadata: &mut serde_json::Map<String, Value>, record: &Record) {
    let tchbook = metadata
        .entry("tchbook")
        .or_insert_with(|| Value::Object(Default::default()));
    if !tchbook.is_object() {
        *tchbook = Value::Object(Default::default());
    }
    let Some(tchbook) = tchbook.as_object_mut() else {
        return;
    };
    let Some(ran) = &record.ran else {
        tchbook.remove(PROVENANCE_KEY);
        return;
    };
    let mut provenance = serde_json::json!({
        "program": "exported",
        "exported_by": record.exported_by,
        "completed": record.completed,
    });
    if let (Value::Object(fields), Ok(Value::Object(ran))) =
        (&mut provenance, serde_json::to_value(ran))
    {
        fields.extend(ran);
    }
    tchbook.insert(PROVENANCE_KEY.into(), provenance);
}

/// Replaces the file at `path` (a symlink's target, the link kept) with `bytes` so that no one
/// ever finds half a notebook: not a front end reading it meanwhile, not the user after a crash
/// or a full disk. The bytes go to a temporary file in the same directory (a rename is atomic
/// only within one file system), are flushed to the disk, and the file is renamed over the
/// notebook, with the notebook's permissions; then the directory's entry is flushed too.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let path = std::fs::canonicalize(path)?;
    let dir = path.parent().context("the notebook has no directory")?;
    let mut file = tempfile::Builder::new()
        .prefix(".tchbook-merge-")
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file()
        .set_permissions(std::fs::metadata(&path)?.permissions())?;
    file.as_file().sync_all()?;
    file.persist(&path).map_err(|error| error.error)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

fn read_record(path: &Path) -> Result<Record> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the record {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| "the record is not JSON: was it written by `--record`?")?;
    match value["tchbook_record"].as_u64() {
        Some(format) if format == u64::from(FORMAT) => {}
        Some(format) => bail!(
            "the record is in format {format}, written by another version of tchbook (this one \
             reads format {FORMAT}); export the notebook again with this tchbook, run it, then \
             merge"
        ),
        None => bail!("not a record written by an exported notebook's `--record`"),
    }
    serde_json::from_value(value).context("the record does not read as one `--record` writes")
}

/// Refuses a record whose cells' sources are not the notebook's any more.
fn check_unchanged(
    cells: &[Value],
    by_cell: &BTreeMap<usize, &RecordedCell>,
    name: &str,
) -> Result<()> {
    for (index, cell) in cells.iter().enumerate() {
        if cell["cell_type"] != "code" {
            continue;
        }
        if let Some(entry) = by_cell.get(&index) {
            let hash = source_hash(&joined(&cell["source"]));
            if entry.source_hash != hash {
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
fn replace_outputs(cell: &mut Value, entry: Option<&RecordedCell>) {
    let (outputs, count) = match entry {
        Some(entry) => (
            entry
                .outputs
                .iter()
                .filter_map(|output| serde_json::to_value(output).ok())
                .map(|output| nbformat_output(&output))
                .collect(),
            Value::from(entry.execution_count),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_merge_replaces_the_notebook_whole_and_keeps_its_permissions() {
        let dir_temp = tempfile::Builder::new()
            .prefix("tchbook-merge-test-")
            .tempdir()
            .unwrap();
        let dir = dir_temp.path().to_path_buf();
        let notebook = dir.join("n.ipynb");
        let before = serde_json::json!({
            "cells": [{"cell_type": "code", "source": "1 + 1", "metadata": {}, "outputs": []}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
        })
        .to_string();
        std::fs::write(&notebook, &before).unwrap();
        std::fs::set_permissions(&notebook, std::fs::Permissions::from_mode(0o640)).unwrap();
        let record = dir.join("record.json");
        let entry = serde_json::json!({
            "cell": 0, "source_hash": source_hash("1 + 1"), "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "two\n"}],
        });
        let record_json = serde_json::json!({
            "tchbook_record": FORMAT, "notebook": "n.ipynb", "exported_by": "tchbook 0.1.0",
            "completed": true, "cells": [entry],
        });
        std::fs::write(&record, record_json.to_string()).unwrap();
        // A reader that opened the notebook before the merge (a front end loading it).
        let mut reader = std::fs::File::open(&notebook).unwrap();

        merge(&record, &notebook, None).unwrap();

        let mut seen = String::new();
        reader.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, before, "the reader saw the notebook change under it");
        let after: Value =
            serde_json::from_str(&std::fs::read_to_string(&notebook).unwrap()).unwrap();
        assert_eq!(
            after["cells"][0]["outputs"][0]["text"],
            serde_json::json!(["two\n"])
        );
        let mode = std::fs::metadata(&notebook).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
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
}
