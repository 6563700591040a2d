//! The `--record` file: every cell run so far with its outputs, rewritten (atomically) after
//! each cell so a killed job keeps what it did; `tchbook export --merge` reads it.

use super::process::{lock, runner};
use super::recorder::Recorder;
use super::Notebook;
use serde_json::{json, Value};
use tchbook_wire::StreamName;

impl Recorder {
    fn to_json(&self, notebook: &Notebook, completed: bool) -> Value {
        let cells: Vec<Value> = self
            .cells
            .iter()
            .map(|c| {
                json!({
                    "cell": c.cell,
                    "source_hash": c.hash,
                    "execution_count": c.execution_count,
                    "outputs": c.outputs,
                })
            })
            .collect();
        json!({
            "tchbook_record": 1,
            "notebook": notebook.name,
            "exported_by": notebook.exported_by,
            "completed": completed,
            "cells": cells,
        })
    }
}

/// Writes the record file (when `--record` was given); false when that failed.
pub(super) fn write_record(completed: bool) -> bool {
    let runner = runner();
    let Some(path) = &runner.record else {
        return true;
    };
    let json = lock(runner).to_json(runner.notebook, completed);
    let temporary = path.with_extension("partial");
    let written = serde_json::to_vec_pretty(&json)
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
