//! Progress bars: inside a kernel tqdm's widget with the HTML bar as its fallback, and the run
//! manager's epochs on one bar; outside a kernel one line of text.

use super::{opened, protocol, replay};
use crate::{is_child, run_child};
use serde_json::{Map, Value, json};
use tchbook_prelude::display::show;
use tchbook_prelude::prelude::*;
use tchbook_prelude::runtime;
use tchbook_wire::widgets::VIEW_MIME;
use tchbook_wire::{Message, PREFIX};

const PROGRESS_CHILD: &str = "widgets::progress::progress_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn progress_child() {
    if !is_child(PROGRESS_CHILD) {
        return;
    }
    runtime::attach();
    let mut bar = Progress::new(3, "batch").description("epoch 1");
    for _ in 0..3 {
        bar.tick();
    }
    bar.finish();
    let panicked = std::panic::catch_unwind(|| {
        let mut bar = Progress::new(10, "batch").description("epoch 2");
        bar.tick();
        panic!("diverged");
    });
    assert!(panicked.is_err());
}

#[test]
fn inside_a_kernel_a_progress_bar_is_tqdms_widget_with_the_html_bar_as_its_fallback() {
    let messages = protocol(&run_child(PROGRESS_CHILD));
    let opened = opened(&messages);
    let rows: Vec<&(String, Map<String, Value>)> = opened
        .iter()
        .filter(|(_, s)| s["_model_name"] == "HBoxModel")
        .collect();
    assert_eq!(rows.len(), 2, "one widget per bar");
    for ((row_id, row), (description, style)) in rows
        .iter()
        .zip([("epoch 1", "success"), ("epoch 2", "danger")])
    {
        let children: Vec<&str> = row["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().strip_prefix("IPY_MODEL_").unwrap())
            .collect();
        let model = |id: &str| {
            opened.iter().find(|(i, _)| i == id).unwrap().1["_model_name"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            children.iter().map(|c| model(c)).collect::<Vec<_>>(),
            ["HTMLModel", "FloatProgressModel", "HTMLModel"]
        );
        // One display carries every view: the widget, the HTML bar, the text line.
        let displays: Vec<(&Map<String, Value>, &Option<String>)> = messages
            .iter()
            .filter_map(|m| match m {
                Message::Display {
                    data, display_id, ..
                } if data[VIEW_MIME]["model_id"] == row_id.as_str() => Some((data, display_id)),
                _ => None,
            })
            .collect();
        let [(data, Some(display_id))] = displays.as_slice() else {
            panic!("one display of the bar: {displays:?}")
        };
        assert!(data["text/html"].as_str().unwrap().contains("<progress"));
        assert!(
            data["text/plain"]
                .as_str()
                .unwrap()
                .starts_with(description)
        );
        // The bar's state moves by comm updates; it ends in its colour, and the display is
        // replaced once with the final state (the saved notebook's fallback).
        assert!(
            messages.iter().any(|m| matches!(m,
                Message::CommMsg { comm_id, data, .. }
                    if comm_id == children[1] && data["state"]["bar_style"] == style)),
            "{description} ends {style}"
        );
        let finals: Vec<&Map<String, Value>> = messages
            .iter()
            .filter_map(|m| match m {
                Message::Update {
                    data,
                    display_id: d,
                    ..
                } if d == display_id => Some(data),
                _ => None,
            })
            .collect();
        let last = finals.last().expect("the display replaced at the end");
        assert_eq!(last[VIEW_MIME]["model_id"], row_id.as_str());
        let (done, total) = if style == "success" { (3, 3) } else { (1, 10) };
        assert_eq!(last["application/vnd.tchbook.progress+json"]["done"], done);
        let states = replay(&messages);
        let bar = &states[children[1]];
        // tqdm.notebook's bar counts steps: its value is the steps done, its max the total.
        assert_eq!(
            (&bar["value"], &bar["max"]),
            (&json!(done as f64), &json!(total as f64))
        );
        assert_eq!(bar["bar_style"], style);
        let left = states[children[0]]["value"].as_str().unwrap();
        assert!(
            left.starts_with(description) && left.ends_with('%'),
            "{left}"
        );
        let right = states[children[2]]["value"].as_str().unwrap();
        assert!(
            right.starts_with(&format!("{done}/{total} [")) && right.contains("batch/s"),
            "{right}"
        );
    }
}

const PLAIN_PROGRESS_CHILD: &str = "widgets::progress::plain_progress_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn plain_progress_child() {
    if !is_child(PLAIN_PROGRESS_CHILD) {
        return;
    }
    let mut bar = Progress::new(3, "batch").description("epoch 1");
    for _ in 0..3 {
        bar.tick();
    }
    bar.finish();
    let slider = IntSlider::new().with_value(4).description("n");
    show(&slider);
}

#[test]
fn outside_a_kernel_progress_prints_its_one_line_and_widgets_their_text() {
    let out = run_child(PLAIN_PROGRESS_CHILD);
    assert!(!out.contains(PREFIX), "no protocol lines: {out}");
    assert!(!out.contains("EVCXR_BEGIN_CONTENT"), "{out}");
    let bar: Vec<&str> = out.lines().filter(|l| l.contains("epoch 1")).collect();
    assert_eq!(bar.len(), 1, "{out}");
    assert!(
        bar[0].contains("100% 3/3 [") && bar[0].contains("batch/s]"),
        "{out}"
    );
    assert!(
        out.contains("IntSlider(value=4, min=0, max=100, description='n')"),
        "{out}"
    );
}

const RUN_MANAGER_CHILD: &str = "widgets::progress::run_manager_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn run_manager_child() {
    if !is_child(RUN_MANAGER_CHILD) {
        return;
    }
    runtime::attach();
    let ds = TensorDataset::new(
        Tensor::rand([10, 1, 28, 28], (Kind::Float, Device::Cpu)),
        Tensor::zeros([10], (Kind::Int64, Device::Cpu)),
    );
    let params = RunParams::new().lr(&[0.01]).batch_size(&[4, 5]);
    let mut m = RunManager::new().without_tensorboard();
    let vs = nn::VarStore::new(Device::Cpu);
    for run in RunBuilder::get_runs(&params) {
        let loader = DataLoader::new(&ds, run.batch_size);
        m.begin_run_with(&run, &vs, &loader);
        m.begin_epoch();
        for (images, _) in loader.iter() {
            m.track_loss(&Tensor::from(1.0f32), images.size()[0]);
        }
        m.end_epoch();
        m.end_run();
    }
}

#[test]
fn inside_a_kernel_the_run_manager_shows_each_epochs_batches_on_one_tqdm_bar() {
    let messages = protocol(&run_child(RUN_MANAGER_CHILD));
    let opened = opened(&messages);
    let rows: Vec<&(String, Map<String, Value>)> = opened
        .iter()
        .filter(|(_, s)| s["_model_name"] == "HBoxModel")
        .collect();
    assert_eq!(rows.len(), 1, "one bar for every run: {opened:?}");
    let children: Vec<String> = rows[0].1["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap()["IPY_MODEL_".len()..].to_owned())
        .collect();
    let views = messages
        .iter()
        .filter(|m| matches!(m, Message::Display { data, .. } if data.contains_key(VIEW_MIME)))
        .count();
    assert_eq!(views, 1, "one display");
    // The second run (batch size 5: 2 batches of 10 samples) left the bar full and green,
    // named after its run and epoch.
    let states = replay(&messages);
    let bar = &states[&children[1]];
    assert_eq!((&bar["value"], &bar["max"]), (&json!(2.0), &json!(2.0)));
    assert_eq!(bar["bar_style"], "success");
    let left = states[&children[0]]["value"].as_str().unwrap();
    assert!(left.starts_with("run 2 epoch 1"), "{left}");
    // The first run's three batches were counted on the same bar before: its state as opened.
    let first = &opened.iter().find(|(id, _)| *id == children[1]).unwrap().1;
    assert_eq!(first["max"], json!(3.0), "{first:?}");
}
