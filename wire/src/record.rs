//! The `--record` file of an exported program: every cell it ran with its outputs as nbformat
//! stores them (text kept whole; `tchbook export --merge` splits it into lines as it writes the
//! notebook). The runner writes it and the kernel's `--merge` reads it, with these types.

use crate::{MimeData, StreamName};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
}

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
        };
        let json = serde_json::to_value(&record).unwrap();
        let outputs = &json["cells"][0]["outputs"];
        assert_eq!(outputs[0]["output_type"], "stream");
        assert_eq!(outputs[0]["name"], "stderr");
        assert_eq!(outputs[1]["output_type"], "display_data");
        assert_eq!(outputs[2]["output_type"], "execute_result");
        assert_eq!(outputs[3]["output_type"], "error");
        assert_eq!(serde_json::from_value::<Record>(json).unwrap(), record);
    }
}
