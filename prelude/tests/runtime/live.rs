//! Plots, progress bars and run tables update in place inside a kernel.

use crate::{is_child, run_child};
use tchbook_prelude::runtime;
use tchbook_wire::PREFIX;

const LIVE_CHILD: &str = "runtime::live::live_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn live_child() {
    use tchbook_prelude::prelude::*;
    if !is_child(LIVE_CHILD) {
        return;
    }
    runtime::attach();
    let mut plot = LossPlot::new("live loss");
    let mut bar = Progress::new(3, "epoch");
    for epoch in 1..=3 {
        plot.push(epoch as f64, 1.0 / epoch as f64);
        bar.tick();
        std::thread::sleep(std::time::Duration::from_millis(550));
    }
    plot.finish();
    bar.finish();
    let ds = TensorDataset::new(
        Tensor::zeros([4, 2], (Kind::Float, Device::Cpu)),
        Tensor::zeros([4], (Kind::Int64, Device::Cpu)),
    );
    let loader = DataLoader::new(&ds, 2);
    let mut m = RunManager::new().without_tensorboard();
    for run in RunBuilder::get_runs(&RunParams::new().lr(&[0.1, 0.01])) {
        m.begin_run(&run);
        m.begin_epoch();
        for (x, y) in &loader {
            m.track_loss(&Tensor::from(0.25f32), 2);
            m.track_num_correct(&x, &y);
        }
        m.end_epoch();
        m.end_run();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
}

#[test]
fn plots_progress_bars_and_run_tables_update_in_place_inside_a_kernel() {
    use base64::Engine;
    let out = run_child(LIVE_CHILD);
    let messages: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| l.find(PREFIX).map(|i| &l[i + PREFIX.len()..]))
        .map(|j| serde_json::from_str(j).expect("valid JSON"))
        .collect();
    let plot_id = messages
        .iter()
        .find(|m| {
            m["op"] == "display"
                && m["data"]["application/vnd.tchbook.loss-plot+json"]["title"] == "live loss"
        })
        .expect("the plot is displayed")["display_id"]
        .as_str()
        .unwrap()
        .to_string();
    let updates: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|m| m["op"] == "update" && m["display_id"] == plot_id.as_str())
        .collect();
    assert!(
        updates.len() >= 2,
        "the plot redraws in place: {} updates",
        updates.len()
    );
    let last = updates.last().unwrap();
    assert_eq!(
        last["data"]["application/vnd.tchbook.loss-plot+json"]["series"][0]["y"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(last["data"]["image/png"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let bar_id = messages
        .iter()
        .find(|m| {
            m["op"] == "display" && m["data"]["application/vnd.tchbook.progress+json"]["total"] == 3
        })
        .expect("the progress bar is displayed")["display_id"]
        .clone();
    // The run table: shown after the first epoch, updated in place after the second.
    let table = messages
        .iter()
        .find(|m| {
            m["op"] == "display"
                && m["data"]["application/vnd.tchbook.run-table+json"]["columns"][0] == "run"
        })
        .expect("the run table is displayed");
    assert_eq!(
        table["data"]["application/vnd.tchbook.run-table+json"]["rows"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let update = messages
        .iter()
        .find(|m| m["op"] == "update" && m["display_id"] == table["display_id"])
        .expect("the run table updates in place");
    assert_eq!(
        update["data"]["application/vnd.tchbook.run-table+json"]["rows"][1]["lr"],
        0.01
    );
    assert!(
        update["data"]["text/html"]
            .as_str()
            .unwrap()
            .contains("<td>0.01</td>")
    );
    let final_bar = messages
        .iter()
        .rev()
        .find(|m| m["op"] == "update" && m["display_id"] == bar_id)
        .unwrap();
    assert_eq!(
        final_bar["data"]["application/vnd.tchbook.progress+json"]["done"],
        3
    );
}
