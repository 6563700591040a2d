//! Breakpoints from JupyterLab's cells to gdb's crates.
//!
//! JupyterLab sets breakpoints on a cell's lines; gdb places them by file and line of the code
//! it sees, the crates evcxr built. A cell's lines may be in several crates: its own, and every
//! later one, since evcxr emits each item (a `fn`, an `impl`) again into every crate and a
//! later cell calls its own copy. Each crate's debug information names the file of the cell it
//! was built for, so gdb is given, per crate file, every breakpoint of every cell on a line that
//! crate holds (`Cells::for_adapter`); gdb's `setBreakpoints` replaces a file's breakpoints, so
//! a change to one cell's breakpoints is sent again for each crate that holds its lines.

use super::cells::{self, Placed};
use super::{PATIENCE, Session};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tchbook_cellcode::CodeOrigin;

impl Session {
    /// `setBreakpoints`: kept for the cell's file; passed on for each crate built for the
    /// debugger that holds the cell's lines. The reply lists each breakpoint at its cell line,
    /// verified by gdb or saying why it does not stop yet.
    pub(crate) fn set_breakpoints(&self, arguments: &Value) -> Value {
        let path = arguments["source"]["path"].as_str().unwrap_or_default();
        let wanted: Vec<Value> = arguments["breakpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let (adapter, requests, missing, built) = {
            let mut state = self.state.lock().unwrap();
            state.cells.set_breakpoints(path, wanted.clone());
            let mut crates = state.cells.crates_with(path);
            // The cell's own crate first: its answer is the one the reply shows.
            crates.sort_by_key(|file| file != path);
            let requests: Vec<(Value, Vec<Placed>)> = crates
                .iter()
                .filter_map(|file| state.cells.for_adapter(file))
                .collect();
            let built = state.cells.map(path).is_some();
            (
                state.adapter.clone(),
                requests,
                state.missing.clone(),
                built,
            )
        };
        // Each with its source: JupyterLab's breakpoint list names a breakpoint by its source's
        // path, and one without a source stops the whole list from rendering.
        let pending = |line: &Value, message: &str| json!({"verified": false, "line": line, "message": message, "source": {"path": path}});
        let Some(adapter) = adapter else {
            let why = missing.unwrap_or_else(|| {
                "the debugger is not attached to the evaluation process; switch it on".into()
            });
            let listed: Vec<Value> = wanted.iter().map(|b| pending(&b["line"], &why)).collect();
            return json!({"breakpoints": listed});
        };
        // For each of this cell's breakpoints, gdb's first answer.
        let mut answers: Vec<Option<Result<Value, String>>> = vec![None; wanted.len()];
        for (arguments, placed) in requests {
            let answered = adapter.request("setBreakpoints", arguments, PATIENCE);
            for (k, placed) in placed.iter().enumerate() {
                if placed.cell != path || answers[placed.index].is_some() {
                    continue;
                }
                answers[placed.index] = Some(match &answered {
                    Ok(body) => Ok(body["breakpoints"][k].clone()),
                    Err(error) => Err(error.clone()),
                });
            }
        }
        let listed: Vec<Value> = wanted
            .iter()
            .zip(answers)
            .map(|(wanted, answer)| match answer {
                Some(Ok(mut breakpoint)) => {
                    // At the line the user set (gdb's is the crate's).
                    breakpoint["line"] = wanted["line"].clone();
                    breakpoint["source"] = json!({"path": path});
                    breakpoint
                }
                Some(Err(error)) => pending(&wanted["line"], &error),
                None if let Err(why) = cells::for_gdb(wanted, 0) => pending(&wanted["line"], &why),
                None if built => pending(&wanted["line"], &format!(
                    "line {} of this cell has no code at or after it; set the breakpoint on a line with a statement",
                    wanted["line"])),
                None => pending(&wanted["line"],
                    "this cell has not run since the debugger was switched on (or was edited since): it stops here when it runs"),
            })
            .collect();
        json!({"breakpoints": listed})
    }

    /// A cell built for the debugger is about to load: where its crate's lines came from is
    /// kept, and the breakpoints on them go to gdb, which places them as its library loads.
    /// The earlier cells' code the crate holds again (evcxr's items) is traced by its text to
    /// the cells' files in the folder JupyterLab and the kernel dump them to.
    pub(crate) fn cell_built(&self, source: &Path, segments: &[(CodeOrigin, &str)]) {
        let path = source.to_string_lossy().into_owned();
        let own: Arc<str> = Arc::from(path.as_str());
        let built_files = self.state.lock().unwrap().cells.built_files();
        let codes = cell_codes(built_files);
        let map = cells::line_map(&own, segments, &codes);
        let (adapter, arguments) = {
            let mut state = self.state.lock().unwrap();
            state.cells.built(&path, map);
            (state.adapter.clone(), state.cells.for_adapter(&path))
        };
        tracing::debug!("debugger: {path} built; breakpoints {arguments:?}");
        if let (Some(adapter), Some((arguments, placed))) = (adapter, arguments)
            && !placed.is_empty()
            && let Err(error) = adapter.request("setBreakpoints", arguments, PATIENCE)
        {
            tracing::warn!("debugger: breakpoints of {path}: {error}");
        }
    }
}

/// The code of every cell file, those built for the debugger first (the latest first: an item
/// defined again the same way is traced to the cell that ran last), then the others dumped
/// (cells JupyterLab set breakpoints in, which may have run before the debugger was on).
fn cell_codes(built_files: Vec<String>) -> Vec<(Arc<str>, String)> {
    let mut files = built_files;
    if let Ok(entries) = std::fs::read_dir(cells::prefix()) {
        let mut dumped: Vec<String> = entries
            .flatten()
            .map(|entry| entry.path().to_string_lossy().into_owned())
            .filter(|file| file.ends_with(".rs") && !files.contains(file))
            .collect();
        dumped.sort();
        files.extend(dumped);
    }
    files
        .into_iter()
        .filter_map(|file| {
            let code = std::fs::read_to_string(&file).ok()?;
            Some((Arc::from(file.as_str()), code))
        })
        .collect()
}
