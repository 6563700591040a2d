//! The `--record` file: every cell run so far with its outputs, rewritten (atomically) after
//! each cell so a killed job keeps what it did; `tchbook export --merge` reads it. It says how
//! the outputs were made too ([`this_run`]), for the notebook's first cell.

use super::Notebook;
use super::outputs::Recorder;
use super::process::{lock, runner};
use tchbook_wire::StreamName;
use tchbook_wire::record::{FORMAT, Ran, Record, RecordedCell, cpu_model};

impl Recorder {
    fn record(&self, notebook: &Notebook, ran: &Ran, completed: bool) -> Record {
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
            ran: Some(ran.clone()),
        }
    }
}

/// Writes the record file (when `--record` was given); false when that failed.
pub(super) fn write_record(completed: bool) -> bool {
    let runner = runner();
    let Some(path) = &runner.record else {
        return true;
    };
    let record = lock(runner).record(runner.notebook, &runner.ran, completed);
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

/// How this run's outputs are made, as the record states it (`tchbook_wire::record::Ran`):
/// taken when the run starts, from this machine and this program's build.
pub(super) fn this_run(notebook: &Notebook) -> Ran {
    Ran {
        at: utc_now(),
        cpu: cpu_model(),
        cores: std::thread::available_parallelism().map_or(0, usize::from),
        gpu: visible_gpu(),
        profile: if cfg!(debug_assertions) {
            "dev"
        } else {
            "release"
        }
        .to_owned(),
        commit: notebook.commit.map(str::to_owned),
    }
}

fn utc_now() -> String {
    // SAFETY: `time` with a null pointer only returns the time; `gmtime_r` writes into the
    // zeroed `tm` we own and reads `now`, both alive for the call.
    let tm = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::gmtime_r(&now, &mut tm);
        tm
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min
    )
}

/// The first NVIDIA GPU's name, as its driver reports it, unless CUDA is hidden from the run
/// (`CUDA_VISIBLE_DEVICES` empty or `-1`, as the GPU check runs a notebook on the CPU).
fn visible_gpu() -> Option<String> {
    if let Ok(visible) = std::env::var("CUDA_VISIBLE_DEVICES")
        && matches!(visible.trim(), "" | "-1")
    {
        return None;
    }
    let output = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name", "--format=csv,noheader"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let name = text.lines().next()?.trim();
    (output.status.success() && !name.is_empty()).then(|| name.to_owned())
}
