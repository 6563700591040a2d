//! The `--record` file: every cell run so far with its outputs, rewritten (atomically) after
//! each cell so a killed job keeps what it did; `tchbook export --merge` reads it.

use super::Notebook;
use super::outputs::Recorder;
use super::process::{lock, runner};
use tchbook_wire::StreamName;
use tchbook_wire::record::{FORMAT, Record, RecordedCell};

impl Recorder {
    fn record(&self, notebook: &Notebook, completed: bool) -> Record {
        Record {
            tchbook_record: FORMAT,
            notebook: notebook.name.to_owned(),
            exported_by: notebook.exported_by.to_owned(),
            completed,
            cells: self
                .cells
                .iter()
                .map(|c| RecordedCell {
                    cell: c.cell,
                    source_hash: c.hash.to_owned(),
                    execution_count: c.execution_count,
                    outputs: c.outputs.clone(),
                })
                .collect(),
            widgets: self.widgets.clone(),
        }
    }
}

/// Writes the record file (when `--record` was given); false when that failed.
pub(super) fn write_record(completed: bool) -> bool {
    let runner = runner();
    let Some(path) = &runner.record else {
        return true;
    };
    let record = lock(runner).record(runner.notebook, completed);
    let temporary = path.with_extension("partial");
    let written = serde_json::to_vec_pretty(&record)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&temporary, bytes))
        .and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = written {
        lock(runner).print(
            StreamName::Stderr,
            &format!(
                "tchbook: could not write the record {}: {error}\n",
                path.display()
            ),
        );
        return false;
    }
    true
}
