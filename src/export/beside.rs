//! `tchbook export --merge RECORD NOTEBOOK --beside OTHER`: under each code cell tagged
//! `beside`, the text the same cell printed in another run of the same exported program (a
//! second `--record`), as one text output that names where that run was made. The GPU check runs
//! notebooks 03 and 05 a second time with CUDA hidden, so their training cells show the CPU's
//! printout and time under the GPU's, from one check on one machine.

use super::notebook::{joined, source_hash, split_lines};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use tchbook_wire::record::{Output, Ran, Record};

/// The tag of the cells that show the other run's text under their own outputs.
pub(super) const TAG: &str = "beside";

/// Appends to each code cell tagged [`TAG`] what `other` recorded for it. Only text goes in
/// (streams and errors): the other run's plots and progress bars would repeat the first run's.
/// Refuses a record whose cells' sources are not the notebook's.
pub(super) fn add_beside(cells: &mut [Value], other: &Record, name: &str) -> Result<()> {
    for (index, cell) in cells.iter_mut().enumerate() {
        let tagged = cell["metadata"]["tags"]
            .as_array()
            .is_some_and(|tags| tags.iter().any(|tag| tag == TAG));
        if cell["cell_type"] != "code" || !tagged {
            continue;
        }
        let Some(entry) = other.cells.iter().find(|entry| entry.cell == index) else {
            continue;
        };
        if entry.source_hash != source_hash(&joined(&cell["source"])) {
            bail!(
                "cell {index} of {name} changed since the run given to --beside was exported; \
                 export and run it again, then merge"
            );
        }
        let mut text = heading(other.ran.as_ref());
        for output in &entry.outputs {
            match output {
                Output::Stream { text: printed, .. } => text.push_str(printed),
                Output::Error { ename, evalue, .. } => {
                    text.push_str(&format!("{ename}: {evalue}\n"))
                }
                Output::DisplayData { .. } | Output::ExecuteResult { .. } => {}
            }
        }
        let device = match other.ran.as_ref().and_then(|ran| ran.gpu.as_deref()) {
            Some(_) => "cuda:0",
            None => "cpu",
        };
        let output = json!({
            "output_type": "display_data",
            "data": {"text/plain": split_lines(&text)},
            "metadata": {"tchbook": {"beside": {"device": device, "ran": other.ran}}},
        });
        if let Some(outputs) = cell["outputs"].as_array_mut() {
            outputs.push(output);
        }
    }
    Ok(())
}

/// The first line of the other run's text: where and when it ran, as it recorded.
fn heading(ran: Option<&Ran>) -> String {
    let Some(ran) = ran else {
        return "The same cell in another run of this program:\n".to_owned();
    };
    let device = match &ran.gpu {
        Some(gpu) => format!("on the {gpu}"),
        None => "on the CPU, no GPU visible".to_owned(),
    };
    format!(
        "The same cell in a second run of this program, {device} ({}, {} cores), {}:\n",
        ran.cpu, ran.cores, ran.at
    )
}
