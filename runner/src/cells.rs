//! What the generated `fn cells()` calls: each cell's start and end, `raises-exception` cells,
//! and the `:` commands a program honours (`:timing`, `:fmt`, `:types`).

use super::CellError;
use super::capture::sync;
use super::failure::record_panic;
use super::process::{lock, runner};
use super::record::write_record;
use std::time::Instant;

/// Starts code cell number `position` (0-based, in notebook order).
pub fn begin(position: usize) {
    let runner = runner();
    let (cell, hash, _) = runner.notebook.cells[position];
    {
        let mut state = runner.state();
        state.position = position;
        state.started = Some(Instant::now());
    }
    lock(runner).begin(cell, hash, position + 1);
}

/// Ends the current cell: waits for its output, then shows `Took` (under `:timing`) and its
/// final value, and rewrites the record.
pub fn end() {
    let runner = runner();
    sync();
    let took = {
        let state = runner.state();
        state.started.filter(|_| state.timing).map(|s| s.elapsed())
    };
    lock(runner).end(took);
    write_record(false);
}

/// Runs a cell tagged `raises-exception`: a panic ends the cell with its error, and the run goes
/// on with the next cell (what the cell defined is gone, as in the kernel).
pub fn allow_error(cell: impl FnOnce() -> Result<(), CellError>) -> Result<(), CellError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(cell)) {
        Ok(result) => result,
        Err(_) => {
            record_panic();
            Ok(())
        }
    }
}

/// `:timing`: toggles printing each cell's run time, and shows the new state as evcxr does.
pub fn toggle_timing() {
    let timing = {
        let mut state = runner().state();
        state.timing = !state.timing;
        state.timing
    };
    command_output(&format!("Timing: {timing}"));
}

/// `:fmt FORMAT`: returns what the prelude's `set_plain_format(pretty, types)` should be told.
pub fn set_format(format: &str) -> (bool, bool) {
    let (pretty, types) = {
        let mut state = runner().state();
        state.pretty = format.trim() == "{:#?}";
        (state.pretty, state.types)
    };
    let shown = if format.trim().is_empty() {
        "{:?}"
    } else {
        format.trim()
    };
    command_output(&format!("Output format: {shown}"));
    (pretty, types)
}

/// `:types`: toggles type names before std values; returns the prelude's new setting.
pub fn toggle_types() -> (bool, bool) {
    let (pretty, types) = {
        let mut state = runner().state();
        state.types = !state.types;
        (state.pretty, state.types)
    };
    command_output(&format!("Types: {types}"));
    (pretty, types)
}

/// A `:` command's answer: the cell's value, as evcxr gives it.
fn command_output(text: &str) {
    let mut recorder = lock(runner());
    recorder.value.retain(|(mime, _)| mime != "text/plain");
    recorder
        .value
        .push(("text/plain".to_owned(), format!("{text}\n")));
}
