//! The `--record` file of an exported program: every cell it ran with its outputs as nbformat
//! stores them (text kept whole; `tchbook export --merge` splits it into lines as it writes the
//! notebook). The runner writes it and the kernel's `--merge` reads it, with these types.

use crate::{MimeData, StreamName};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The version of the format, [`Record::tchbook_record`]: 2 since cells' sources are hashed
/// with SHA-256 (1 had FNV-1a).
pub const FORMAT: u32 = 2;

/// A run's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// [`FORMAT`]: a file without it is not a record.
    pub tchbook_record: u32,
    /// The notebook's file name.
    pub notebook: String,
    /// `tchbook <version>` that exported it.
    pub exported_by: String,
    /// Whether every cell ran (a run that stopped at an error, or was killed, did not).
    pub completed: bool,
    pub cells: Vec<RecordedCell>,
    /// Each widget model the run left open, by comm id, as its `comm_open` and `update`s left it
    /// (what a front end saves as the notebook's widget state, so the views in the outputs can
    /// be drawn again). Written only when there is one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub widgets: BTreeMap<String, Map<String, Value>>,
    /// Where, when and from what the outputs were made, which a notebook's first cell states:
    /// `--merge` writes it into the notebook's metadata as [`PROVENANCE_KEY`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<Ran>,
}

/// How a run's outputs were made, as the run itself saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ran {
    /// When the run started, `YYYY-MM-DD HH:MM UTC`.
    pub at: String,
    /// The CPU's model name (`/proc/cpuinfo`) and how many cores the run could use.
    pub cpu: String,
    pub cores: usize,
    /// The NVIDIA GPU the run could see (none where CUDA was hidden or absent).
    pub gpu: Option<String>,
    /// The cargo profile the program was built with (`release`, or `dev`).
    pub profile: String,
    /// The commit of the repository the notebook was exported from (`tchbook export` asks git;
    /// none outside a git checkout), with ` (with uncommitted changes)` where the tree differed.
    pub commit: Option<String>,
}

/// The CPU's model name from /proc/cpuinfo (e.g. "AMD EPYC 7B13"), else the architecture: what a
/// record's [`Ran::cpu`] and the prelude's device card call the CPU, read one way for both.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Where a notebook's metadata holds how its outputs were made: `metadata.tchbook.provenance`.
/// notebooks/build.py writes the first cell's sentence from it.
pub const PROVENANCE_KEY: &str = "provenance";

/// The notebook metadata that holds saved widget state (ipywidgets' `widget-state+json`, as
/// JupyterLab's "Save Widget State" and nbclient write it) for the `models` a run left, by id.
pub fn widget_state_metadata(models: &BTreeMap<String, Map<String, Value>>) -> Value {
    let state: Map<String, Value> = models
        .iter()
        .filter(|(_, state)| state.contains_key("_model_name"))
        .map(|(id, state)| {
            let field = |name: &str| state.get(name).cloned().unwrap_or(Value::Null);
            let model = serde_json::json!({
                "model_name": field("_model_name"),
                "model_module": field("_model_module"),
                "model_module_version": field("_model_module_version"),
                "state": state,
            });
            (id.clone(), model)
        })
        .collect();
    serde_json::json!({
        WIDGET_STATE_MIME: {"version_major": 2, "version_minor": 0, "state": state}
    })
}

/// The MIME type of saved widget state in a notebook's `metadata.widgets`.
pub const WIDGET_STATE_MIME: &str = "application/vnd.jupyter.widget-state+json";

/// One code cell that ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCell {
    /// Its index among the notebook's cells (all kinds).
    pub cell: usize,
    /// The hash of its source when it was exported: `--merge` refuses a changed cell.
    pub source_hash: String,
    pub execution_count: usize,
    pub outputs: Vec<Output>,
}

/// One output, as nbformat has it (`output_type` names the kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output_type", rename_all = "snake_case")]
pub enum Output {
    Stream {
        name: StreamName,
        text: String,
    },
    DisplayData {
        data: MimeData,
        metadata: Map<String, Value>,
    },
    ExecuteResult {
        execution_count: usize,
        data: MimeData,
        metadata: Map<String, Value>,
    },
    Error {
        ename: String,
        evalue: String,
        traceback: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_itself_in_nbformats_words() {
        let data = MimeData::from_iter([("text/plain".to_owned(), Value::from("2"))]);
        let record = Record {
            tchbook_record: FORMAT,
            notebook: "n.ipynb".into(),
            exported_by: "tchbook 0.1.0".into(),
            completed: false,
            cells: vec![RecordedCell {
                cell: 3,
                source_hash: "ab".into(),
                execution_count: 1,
                outputs: vec![
                    Output::Stream {
                        name: StreamName::Stderr,
                        text: "a\nb\n".into(),
                    },
                    Output::DisplayData {
                        data: data.clone(),
                        metadata: Map::new(),
                    },
                    Output::ExecuteResult {
                        execution_count: 1,
                        data,
                        metadata: Map::new(),
                    },
                    Output::Error {
                        ename: "panic".into(),
                        evalue: "boom".into(),
                        traceback: vec!["boom".into()],
                    },
                ],
            }],
            widgets: BTreeMap::from([(
                "7f3a".to_owned(),
                serde_json::from_value(serde_json::json!({
                    "_model_name": "FloatProgressModel",
                    "_model_module": "@jupyter-widgets/controls",
                    "_model_module_version": "2.0.0",
                    "value": 3.0,
                }))
                .unwrap(),
            )]),
            ran: Some(Ran {
                at: "2026-11-29 06:30 UTC".into(),
                cpu: "Intel(R) Xeon(R) Processor".into(),
                cores: 16,
                gpu: Some("NVIDIA H200".into()),
                profile: "release".into(),
                commit: Some("a20240c".into()),
            }),
        };
        let json = serde_json::to_value(&record).unwrap();
        let outputs = &json["cells"][0]["outputs"];
        assert_eq!(outputs[0]["output_type"], "stream");
        assert_eq!(outputs[0]["name"], "stderr");
        assert_eq!(outputs[1]["output_type"], "display_data");
        assert_eq!(outputs[2]["output_type"], "execute_result");
        assert_eq!(outputs[3]["output_type"], "error");
        assert_eq!(serde_json::from_value::<Record>(json).unwrap(), record);
        let saved = widget_state_metadata(&record.widgets);
        let model = &saved[WIDGET_STATE_MIME]["state"]["7f3a"];
        assert_eq!(model["model_name"], "FloatProgressModel");
        assert_eq!(model["model_module_version"], "2.0.0");
        assert_eq!(model["state"]["value"], 3.0);
        assert_eq!(saved[WIDGET_STATE_MIME]["version_major"], 2);
    }
}
