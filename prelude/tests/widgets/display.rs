//! A widget shown: the order its comms open in, its display bundle (view, text and HTML at once),
//! an output area's dicts, and what a widget is outside a kernel and in the variables panel.

use super::{call, opened, protocol};
use crate::{is_child, run_child};
use serde_json::{Map, Value, json};
use std::ffi::c_void;
use tchbook_prelude::prelude::*;
use tchbook_prelude::runtime;
use tchbook_wire::Message;
use tchbook_wire::side_channel::{Answer, Entry, Request};
use tchbook_wire::widgets::VIEW_MIME;

const SHOW_CHILD: &str = "widgets::display::show_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn show_child() {
    if !is_child(SHOW_CHILD) {
        return;
    }
    runtime::attach();
    let epochs = IntSlider::new()
        .min(0)
        .max(10)
        .with_value(3)
        .description("epochs");
    let status = Label::new("ready");
    let controls = HBox::new(&[&epochs, &status]);
    // A cell ending with the box: evcxr calls `evcxr_display`.
    controls.evcxr_display();
    epochs.set_value(7);
    epochs.set_value(7); // unchanged: no second update
    epochs.close();
}

#[test]
fn a_shown_box_opens_its_children_first_and_displays_view_text_and_html_at_once() {
    let out = run_child(SHOW_CHILD);
    let messages = protocol(&out);
    let opened = opened(&messages);
    let name = |id: &str| {
        opened
            .iter()
            .position(|(i, _)| i == id)
            .map(|p| (p, opened[p].1["_model_name"].as_str().unwrap().to_owned()))
            .unwrap_or_else(|| panic!("{id} was never opened"))
    };
    let (box_at, box_state) = opened
        .iter()
        .enumerate()
        .find(|(_, (_, s))| s["_model_name"] == "HBoxModel")
        .map(|(p, (_, s))| (p, s.clone()))
        .expect("the box is opened");
    let children: Vec<String> = box_state["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c.as_str()
                .unwrap()
                .strip_prefix("IPY_MODEL_")
                .unwrap()
                .to_owned()
        })
        .collect();
    let names: Vec<String> = children
        .iter()
        .map(|c| {
            let (at, model) = name(c);
            assert!(at < box_at, "child {model} opened before the box");
            model
        })
        .collect();
    assert_eq!(names, ["IntSliderModel", "LabelModel"]);
    let slider_id = children[0].clone();
    let slider = &opened[name(&slider_id).0].1;
    assert_eq!(
        (
            &slider["value"],
            &slider["min"],
            &slider["max"],
            &slider["description"]
        ),
        (&json!(3), &json!(0), &json!(10), &json!("epochs"))
    );
    // The cell's value: one message, after the comm lines.
    let value_at = messages
        .iter()
        .position(|m| matches!(m, Message::Value { .. }))
        .expect("the value's message");
    let last_open = messages
        .iter()
        .rposition(|m| matches!(m, Message::CommOpen { .. }))
        .unwrap();
    assert!(last_open < value_at, "comms open before the display");
    let Message::Value { data, .. } = &messages[value_at] else {
        unreachable!()
    };
    let block = |mime: &str| data[mime].as_str().map(str::to_owned).unwrap_or_default();
    let box_id = &opened[box_at].0;
    assert_eq!(
        data[VIEW_MIME],
        json!({"model_id": box_id, "version_major": 2, "version_minor": 0})
    );
    assert_eq!(
        block("text/plain"),
        "HBox(children=(IntSlider(value=3, min=0, max=10, description='epochs'), Label(value='ready')))"
    );
    let html = block("text/html");
    assert!(
        html.contains("type=\"range\"") && html.contains("value=\"3\""),
        "{html}"
    );
    assert!(html.contains("epochs") && html.contains("ready"), "{html}");
    // After the show, a change is one update of the changed key; closing closes the slider and
    // its own layout and style.
    let updates: Vec<&Map<String, Value>> = messages
        .iter()
        .filter_map(|m| match m {
            Message::CommMsg { comm_id, data, .. } if *comm_id == slider_id => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(
        updates,
        [
            json!({"method": "update", "state": {"value": 7}, "buffer_paths": []})
                .as_object()
                .unwrap()
        ]
    );
    let closed: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::CommClose { comm_id, .. } => Some(comm_id.as_str()),
            _ => None,
        })
        .collect();
    let slider_refs = [&slider["layout"], &slider["style"]].map(|r| {
        r.as_str()
            .unwrap()
            .strip_prefix("IPY_MODEL_")
            .unwrap()
            .to_owned()
    });
    assert_eq!(
        closed,
        [slider_id.as_str(), &slider_refs[0], &slider_refs[1]]
    );
}

#[test]
fn outside_a_kernel_widgets_open_nothing_and_their_bundle_has_no_view() {
    let slider = IntSlider::new().with_value(3);
    let bundle = slider.bundle();
    assert!(!slider.is_open());
    assert!(bundle.widget.is_none());
    assert!(!bundle.data().contains_key(VIEW_MIME));
    assert_eq!(bundle.text, "IntSlider(value=3, min=0, max=100)");
}

#[test]
fn an_output_area_keeps_jupyters_output_dicts() {
    let out = Output::new();
    out.append_stdout("a\n");
    out.append_stderr("b\n");
    out.append_display(&tchbook_prelude::display::Bundle::text("c").with_html("<i>c</i>"));
    let outputs = out.outputs();
    assert_eq!(
        outputs[0],
        json!({"output_type": "stream", "name": "stdout", "text": "a\n"})
    );
    assert_eq!(outputs[1]["name"], "stderr");
    assert_eq!(
        outputs[2],
        json!({"output_type": "display_data", "data": {"text/plain": "c", "text/html": "<i>c</i>"}, "metadata": {}})
    );
    let html = out.bundle().html.unwrap();
    assert!(
        html.contains("<pre style=\"margin:0\">a\n</pre>") && html.contains("<i>c</i>"),
        "{html}"
    );
    out.clear();
    assert!(out.outputs().is_empty());
}

#[test]
fn the_variables_panel_shows_a_widget_by_its_repr_without_opening_it() {
    let slider: Box<dyn std::any::Any> = Box::new(IntSlider::new().with_value(3));
    let (name, type_name) = ("epochs", std::any::type_name::<IntSlider>());
    let entry = Entry {
        name: name.as_ptr(),
        name_len: name.len(),
        type_name: type_name.as_ptr(),
        type_len: type_name.len(),
        value: &slider as *const Box<dyn std::any::Any> as *const c_void,
    };
    let Answer::Variables { variables } = call(&Request::Variables, &[entry]) else {
        panic!("the variables")
    };
    assert_eq!(variables[0].value, "IntSlider(value=3, min=0, max=100)");
    assert!(!slider.downcast_ref::<IntSlider>().unwrap().is_open());
}
