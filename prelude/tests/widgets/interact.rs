//! `interact`: its closure runs at once and what it returns is shown; a plot filled inside it
//! draws only into the widget's output.

use super::protocol;
use crate::{is_child, run_child};
use serde_json::json;
use tchbook_prelude::prelude::*;
use tchbook_prelude::runtime;
use tchbook_wire::Message;

#[test]
fn interact_runs_its_closure_at_once_and_shows_what_it_returns() {
    let view = interact(
        (
            IntSlider::new().with_value(2),
            Checkbox::new().with_value(true),
        ),
        |(n, double)| if double { n * 2 } else { n }.to_string(),
    );
    assert_eq!(
        view.output().outputs(),
        [json!({"output_type": "stream", "name": "stdout", "text": "4\n"})]
    );
    let plot = interact((FloatSlider::new().with_value(1.0),), |(f,)| {
        let mut plot = LossPlot::new("f");
        plot.push(0.0, f);
        plot
    });
    assert_eq!(plot.output().outputs()[0]["output_type"], "display_data");
    assert!(
        plot.to_string()
            .starts_with("VBox(children=(FloatSlider(value=1.0")
    );
}

const INTERACT_PLOT_CHILD: &str = "widgets::interact::interact_plot_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn interact_plot_child() {
    if !is_child(INTERACT_PLOT_CHILD) {
        return;
    }
    runtime::attach();
    let wave = interact((FloatSlider::new().with_value(1.0),), |(frequency,)| {
        let mut plot = LossPlot::new("wave");
        let mut bar = Progress::new(200, "points");
        for i in 0..200 {
            let x = i as f64 / 200.0;
            plot.push(x, (std::f64::consts::TAU * frequency * x).sin());
            bar.tick();
        }
        plot
    });
    println!("outputs in the widget: {}", wave.output().outputs().len());
    // After interact, a plot of the cell's own draws live again.
    let mut own = LossPlot::new("own");
    own.push(0.0, 1.0);
}

#[test]
fn a_plot_filled_inside_interacts_function_draws_only_into_the_widgets_output() {
    let out = run_child(INTERACT_PLOT_CHILD);
    let messages = protocol(&out);
    let displayed: Vec<&Message> = messages
        .iter()
        .filter(|m| matches!(m, Message::Display { .. } | Message::Update { .. }))
        .collect();
    // Only the cell's own plot, drawn after interact returned; nothing of the wave or its bar.
    assert_eq!(displayed.len(), 1, "{displayed:?}");
    assert!(format!("{displayed:?}").contains("own"), "{displayed:?}");
    assert!(out.contains("outputs in the widget: 1"), "{out}");
}
