//! Jupyter widgets: the models' full states against ipywidgets 8's model specification, the
//! order comms open in, the display bundle, the front end's messages answered through the same
//! C entry point the evaluation process's runtime calls, live values seen by a running loop,
//! and progress bars as widgets inside a kernel and as text outside.

use crate::{is_child, run_child};
use serde_json::{Map, Value, json};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tchbook_prelude::display::{Render, show};
use tchbook_prelude::prelude::*;
use tchbook_prelude::runtime;
use tchbook_wire::panels::{Answer, CommType, Entry, Request};
use tchbook_wire::widgets::{CONTROL_TARGET, PROTOCOL_VERSION, TARGET, VIEW_MIME};
use tchbook_wire::{Message, PREFIX};

unsafe extern "C" {
    /// The prelude's entry point for the kernel's panels socket (`tchbook_wire::panels`).
    fn tchbook_prelude_panels(
        request: *const u8,
        request_len: usize,
        entries: *const Entry,
        count: usize,
        answer: extern "C" fn(*mut c_void, *const u8, usize),
        context: *mut c_void,
    );
}

/// Asks the prelude as the evaluation process's socket thread does (also for `debugger`).
pub(crate) fn call(request: &Request, entries: &[Entry]) -> Answer {
    extern "C" fn keep(context: *mut c_void, bytes: *const u8, len: usize) {
        // SAFETY: `context` is the `String` below; the bytes are the answer's, valid for the call.
        unsafe {
            *(context as *mut String) =
                String::from_utf8_lossy(std::slice::from_raw_parts(bytes, len)).into_owned();
        }
    }
    let request = serde_json::to_string(request).unwrap();
    let mut answer = String::new();
    // SAFETY: the request is `len` bytes; the entries point to live `Box<dyn Any>`s; `keep`
    // writes into `answer`.
    unsafe {
        tchbook_prelude_panels(
            request.as_ptr(),
            request.len(),
            entries.as_ptr(),
            entries.len(),
            keep,
            &mut answer as *mut String as *mut c_void,
        )
    };
    serde_json::from_str(answer.trim()).expect("the answer is one JSON line")
}

/// A comm request, as the kernel passes on a front end's comm message (no variables).
fn ask(msg_type: CommType, comm_id: &str, target: Option<&str>, data: Value) -> Answer {
    let Value::Object(data) = data else {
        panic!("comm data is an object")
    };
    let request = Request::Comm {
        msg_type,
        comm_id: comm_id.to_owned(),
        target_name: target.map(str::to_owned),
        data,
    };
    call(&request, &[])
}

/// The comm messages of an answer (panics on an error).
fn messages(answer: Answer) -> Vec<Message> {
    match answer {
        Answer::Comm { messages } => messages,
        other => panic!("expected comm messages, got {other:?}"),
    }
}

/// The protocol messages a child printed.
fn protocol(out: &str) -> Vec<Message> {
    out.lines()
        .filter_map(|l| l.find(PREFIX).map(|i| &l[i..]))
        .map(|l| {
            Message::parse_line(l)
                .unwrap()
                .expect("a message line reads")
        })
        .collect()
}

/// Each comm_open's id and state, in order.
fn opened(messages: &[Message]) -> Vec<(String, Map<String, Value>)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::CommOpen {
                comm_id,
                target_name,
                data,
                metadata,
            } => {
                assert_eq!(target_name, TARGET);
                assert_eq!(metadata["version"], PROTOCOL_VERSION);
                assert_eq!(data["buffer_paths"], json!([]));
                Some((comm_id.clone(), data["state"].as_object().unwrap().clone()))
            }
            _ => None,
        })
        .collect()
}

/// Every model's state once the child was done: its comm_open's, with its updates applied.
fn replay(messages: &[Message]) -> Map<String, Value> {
    let mut states = Map::new();
    for m in messages {
        match m {
            Message::CommOpen { comm_id, data, .. } => {
                states.insert(comm_id.clone(), data["state"].clone());
            }
            Message::CommMsg { comm_id, data, .. } if data["method"] == "update" => {
                let state = states[comm_id].as_object_mut().unwrap();
                for (key, value) in data["state"].as_object().unwrap() {
                    state.insert(key.clone(), value.clone());
                }
            }
            _ => {}
        }
    }
    states
}

/// The attributes of each model beyond its names, at the defaults ipywidgets 8's specification
/// (`packages/schema/jupyterwidgetmodels.latest.md`) gives them; `layout` and `style` are
/// references checked apart.
fn specified(model: &str) -> Value {
    let dom = json!({"_dom_classes": [], "tabbable": null, "tooltip": null});
    let described = json!({"description": "", "description_allow_html": false});
    let slider = json!({"behavior": "drag-tap", "continuous_update": true, "disabled": false,
        "orientation": "horizontal", "readout": true});
    let fonts = json!({"font_family": null, "font_size": null, "font_style": null,
        "font_variant": null, "font_weight": null, "text_color": null, "text_decoration": null});
    let own = match model {
        "IntSliderModel" => [described, slider, json!({"max": 100, "min": 0, "readout_format": "d", "step": 1, "value": 0})].to_vec(),
        "FloatSliderModel" => [described, slider, json!({"max": 100.0, "min": 0.0, "readout_format": ".2f", "step": 0.1, "value": 0.0})].to_vec(),
        "IntProgressModel" => [described, json!({"bar_style": "", "max": 100, "min": 0, "orientation": "horizontal", "value": 0})].to_vec(),
        "FloatProgressModel" => [described, json!({"bar_style": "", "max": 100.0, "min": 0.0, "orientation": "horizontal", "value": 0.0})].to_vec(),
        "ButtonModel" => vec![json!({"button_style": "", "description": "", "disabled": false, "icon": ""})],
        "CheckboxModel" => [described, json!({"disabled": false, "indent": true, "value": false})].to_vec(),
        "DropdownModel" => [described, json!({"_options_labels": [], "disabled": false, "index": null})].to_vec(),
        "TextModel" => [described, json!({"continuous_update": true, "disabled": false, "placeholder": "\u{200b}", "value": ""})].to_vec(),
        "LabelModel" | "HTMLModel" => [described, json!({"placeholder": "\u{200b}", "value": ""})].to_vec(),
        "HBoxModel" | "VBoxModel" => vec![json!({"box_style": "", "children": []})],
        "OutputModel" => vec![json!({"msg_id": "", "outputs": []})],
        "LayoutModel" => {
            let keys = "align_content align_items align_self border_bottom border_left border_right \
                border_top bottom display flex flex_flow grid_area grid_auto_columns grid_auto_flow \
                grid_auto_rows grid_column grid_gap grid_row grid_template_areas grid_template_columns \
                grid_template_rows height justify_content justify_items left margin max_height max_width \
                min_height min_width object_fit object_position order overflow padding right top \
                visibility width";
            return Value::Object(keys.split_whitespace().map(|k| (k.to_owned(), Value::Null)).collect());
        }
        "SliderStyleModel" => return json!({"description_width": "", "handle_color": null}),
        "ProgressStyleModel" => return json!({"bar_color": null, "description_width": ""}),
        "ButtonStyleModel" => {
            let mut style = fonts.as_object().unwrap().clone();
            style.insert("button_color".into(), Value::Null);
            return Value::Object(style);
        }
        "CheckboxStyleModel" => return json!({"background": null, "description_width": ""}),
        "DescriptionStyleModel" => return json!({"description_width": ""}),
        "TextStyleModel" | "HTMLStyleModel" => return json!({"background": null,
            "description_width": "", "font_size": null, "text_color": null}),
        "LabelStyleModel" => {
            let mut style = fonts.as_object().unwrap().clone();
            style.insert("background".into(), Value::Null);
            style.insert("description_width".into(), "".into());
            return Value::Object(style);
        }
        other => panic!("no specification for {other}"),
    };
    let mut all = dom.as_object().unwrap().clone();
    for part in own {
        all.extend(part.as_object().unwrap().clone());
    }
    Value::Object(all)
}

/// The model's and view's names, modules and versions the specification registers it with.
fn registered(model: &str) -> [&'static str; 5] {
    const CONTROLS: &str = "@jupyter-widgets/controls";
    const BASE: &str = "@jupyter-widgets/base";
    const OUTPUT: &str = "@jupyter-widgets/output";
    match model {
        "LayoutModel" => [BASE, "2.0.0", "LayoutView", BASE, "2.0.0"],
        "OutputModel" => [OUTPUT, "1.0.0", "OutputView", OUTPUT, "1.0.0"],
        m if m.ends_with("StyleModel") => [CONTROLS, "2.0.0", "StyleView", BASE, "2.0.0"],
        "IntProgressModel" | "FloatProgressModel" => {
            [CONTROLS, "2.0.0", "ProgressView", CONTROLS, "2.0.0"]
        }
        "IntSliderModel" => [CONTROLS, "2.0.0", "IntSliderView", CONTROLS, "2.0.0"],
        "FloatSliderModel" => [CONTROLS, "2.0.0", "FloatSliderView", CONTROLS, "2.0.0"],
        "ButtonModel" => [CONTROLS, "2.0.0", "ButtonView", CONTROLS, "2.0.0"],
        "CheckboxModel" => [CONTROLS, "2.0.0", "CheckboxView", CONTROLS, "2.0.0"],
        "DropdownModel" => [CONTROLS, "2.0.0", "DropdownView", CONTROLS, "2.0.0"],
        "TextModel" => [CONTROLS, "2.0.0", "TextView", CONTROLS, "2.0.0"],
        "LabelModel" => [CONTROLS, "2.0.0", "LabelView", CONTROLS, "2.0.0"],
        "HTMLModel" => [CONTROLS, "2.0.0", "HTMLView", CONTROLS, "2.0.0"],
        "HBoxModel" => [CONTROLS, "2.0.0", "HBoxView", CONTROLS, "2.0.0"],
        "VBoxModel" => [CONTROLS, "2.0.0", "VBoxView", CONTROLS, "2.0.0"],
        other => panic!("no registration for {other}"),
    }
}

/// The style model each described widget references.
fn style_of(model: &str) -> Option<&'static str> {
    Some(match model {
        "IntSliderModel" | "FloatSliderModel" => "SliderStyleModel",
        "IntProgressModel" | "FloatProgressModel" => "ProgressStyleModel",
        "ButtonModel" => "ButtonStyleModel",
        "CheckboxModel" => "CheckboxStyleModel",
        "DropdownModel" => "DescriptionStyleModel",
        "TextModel" => "TextStyleModel",
        "LabelModel" => "LabelStyleModel",
        "HTMLModel" => "HTMLStyleModel",
        _ => return None,
    })
}

const DEFAULTS_CHILD: &str = "widgets::defaults_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn defaults_child() {
    if !is_child(DEFAULTS_CHILD) {
        return;
    }
    runtime::attach();
    show(&IntSlider::new());
    show(&FloatSlider::new());
    show(&IntProgress::new());
    show(&FloatProgress::new());
    show(&Button::new());
    show(&Checkbox::new());
    show(&Dropdown::new());
    show(&Text::new());
    show(&Label::new(""));
    show(&HTML::new(""));
    show(&Output::new());
    show(&HBox::new(&[]));
    show(&VBox::new(&[]));
}

#[test]
fn every_widget_opens_with_the_specifications_full_default_state_after_its_layout_and_style() {
    let messages = protocol(&run_child(DEFAULTS_CHILD));
    let opened = opened(&messages);
    let mut seen: Map<String, Value> = Map::new();
    let mut widgets = Vec::new();
    for (id, state) in &opened {
        assert_eq!(id.len(), 32, "a uuid4 in hex: {id}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        let model = state["_model_name"].as_str().unwrap().to_owned();
        let [module, version, view, view_module, view_version] = registered(&model);
        assert_eq!(state["_model_module"], module, "{model}");
        assert_eq!(state["_model_module_version"], version, "{model}");
        assert_eq!(state["_view_name"], view, "{model}");
        assert_eq!(state["_view_module"], view_module, "{model}");
        assert_eq!(state["_view_module_version"], view_version, "{model}");
        let mut rest = state.clone();
        for key in [
            "_model_module",
            "_model_module_version",
            "_model_name",
            "_view_name",
            "_view_module",
            "_view_module_version",
        ] {
            rest.remove(key);
        }
        // References name models opened before, of the right kind.
        for (key, kind) in [("layout", Some("LayoutModel")), ("style", style_of(&model))] {
            let Some(reference) = rest.remove(key) else {
                assert!(
                    model.ends_with("StyleModel") || model == "LayoutModel" || kind.is_none(),
                    "{model} has no {key}"
                );
                continue;
            };
            let target = reference
                .as_str()
                .unwrap()
                .strip_prefix("IPY_MODEL_")
                .unwrap();
            assert_eq!(
                seen.get(target).and_then(Value::as_str),
                kind,
                "{model}'s {key} names a model opened before it"
            );
        }
        assert_eq!(
            Value::Object(rest),
            specified(&model),
            "{model}'s attributes"
        );
        if !model.ends_with("StyleModel") && model != "LayoutModel" {
            widgets.push(model.clone());
        }
        seen.insert(id.clone(), model.into());
    }
    assert_eq!(
        widgets,
        [
            "IntSliderModel",
            "FloatSliderModel",
            "IntProgressModel",
            "FloatProgressModel",
            "ButtonModel",
            "CheckboxModel",
            "DropdownModel",
            "TextModel",
            "LabelModel",
            "HTMLModel",
            "OutputModel",
            "HBoxModel",
            "VBoxModel"
        ]
    );
    // Each widget is displayed once, after its comms, by its view.
    let displays = messages
        .iter()
        .filter(|m| matches!(m, Message::Display { .. }))
        .count();
    assert_eq!(displays, widgets.len());
}

const SHOW_CHILD: &str = "widgets::show_child";

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

const COMM_CHILD: &str = "widgets::comm_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn comm_child() {
    if !is_child(COMM_CHILD) {
        return;
    }
    runtime::attach();
    let lr = FloatSlider::new()
        .max(1.0)
        .with_value(0.1)
        .description("lr");
    show(&lr);
    let id = lr.model_id().to_owned();

    // update → echo_update with the same keys, the value applied, on_change on the callback
    // thread.
    let (tx, changes) = channel();
    let tx = Mutex::new(tx);
    lr.on_change(move |v| {
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        tx.lock().unwrap().send((v, thread)).unwrap();
    });
    let echo = messages(ask(
        CommType::Msg,
        &id,
        None,
        json!({"method": "update", "state": {"value": 0.5, "not_an_attribute": 1}, "buffer_paths": []}),
    ));
    assert_eq!(
        echo,
        [Message::CommMsg {
            comm_id: id.clone(),
            data: json!({"method": "echo_update", "state": {"value": 0.5}, "buffer_paths": []})
                .as_object()
                .unwrap()
                .clone(),
            metadata: tchbook_wire::widgets::metadata(),
        }]
    );
    assert_eq!(lr.value(), 0.5, "applied before the answer");
    let (value, thread) = changes.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!((value, thread.as_str()), (0.5, "tchbook-widgets"));

    // request_state → the full state.
    let full = messages(ask(
        CommType::Msg,
        &id,
        None,
        json!({"method": "request_state"}),
    ));
    let [Message::CommMsg { data, .. }] = full.as_slice() else {
        panic!("one update: {full:?}")
    };
    assert_eq!(data["method"], "update");
    assert_eq!(data["state"]["_model_name"], "FloatSliderModel");
    assert_eq!(data["state"]["value"], 0.5);
    assert_eq!(data["state"]["description"], "lr");
    assert_eq!(data["buffer_paths"], json!([]));

    // A button's click: counted at once, on_click on the callback thread.
    let stop = Button::new().description("Stop");
    show(&stop);
    let (tx, clicks) = channel();
    let tx = Mutex::new(tx);
    stop.on_click(move || tx.lock().unwrap().send(()).unwrap());
    let answer = messages(ask(
        CommType::Msg,
        stop.model_id(),
        None,
        json!({"method": "custom", "content": {"event": "click"}}),
    ));
    assert!(answer.is_empty());
    assert_eq!(stop.clicks(), 1);
    clicks.recv_timeout(Duration::from_secs(60)).unwrap();

    // A reloaded page: the control comm, and every open model's state on it.
    assert!(messages(ask(CommType::Open, "ctl", Some(CONTROL_TARGET), json!({}))).is_empty());
    let states = messages(ask(
        CommType::Msg,
        "ctl",
        None,
        json!({"method": "request_states"}),
    ));
    let [Message::CommMsg { comm_id, data, .. }] = states.as_slice() else {
        panic!("one update_states: {states:?}")
    };
    assert_eq!(comm_id, "ctl");
    assert_eq!(data["method"], "update_states");
    assert_eq!(data["buffer_paths"], json!([]));
    let entry = &data["states"][&id];
    assert_eq!(entry["model_name"], "FloatSliderModel");
    assert_eq!(entry["model_module"], "@jupyter-widgets/controls");
    assert_eq!(entry["model_module_version"], "2.0.0");
    assert_eq!(entry["state"]["value"], 0.5);
    let layout = entry["state"]["layout"]
        .as_str()
        .unwrap()
        .strip_prefix("IPY_MODEL_")
        .unwrap();
    assert_eq!(data["states"][layout]["model_name"], "LayoutModel");
    assert!(data["states"][stop.model_id()].is_object());
    assert!(messages(ask(CommType::Close, "ctl", None, json!({}))).is_empty());

    // Unknown comms, and comms the front end opens, are errors (the kernel closes an open).
    for answer in [
        ask(
            CommType::Msg,
            "nope",
            None,
            json!({"method": "update", "state": {}}),
        ),
        ask(CommType::Open, "fresh", Some(TARGET), json!({"state": {}})),
        ask(
            CommType::Msg,
            &id,
            None,
            json!({"method": "no_such_method"}),
        ),
    ] {
        assert!(matches!(answer, Answer::Error { .. }), "{answer:?}");
    }

    // A loop running while the update arrives reads it at its next step: every read that starts
    // after the socket thread's answer sees the new value.
    let answered = Arc::new(AtomicBool::new(false));
    let training = {
        let (lr, answered) = (lr.clone(), Arc::clone(&answered));
        std::thread::spawn(move || {
            let mut steps = 0u64;
            loop {
                let after = answered.load(Ordering::SeqCst);
                let rate = lr.value();
                steps += 1;
                if after {
                    return (rate, steps);
                }
            }
        })
    };
    messages(ask(
        CommType::Msg,
        &id,
        None,
        json!({"method": "update", "state": {"value": 0.25}}),
    ));
    answered.store(true, Ordering::SeqCst);
    let (rate, _) = training.join().unwrap();
    assert_eq!(rate, 0.25);

    // interact re-runs its closure when a control moves; its output follows.
    let n = IntSlider::new().max(10).with_value(2);
    let view = interact((n.clone(),), |(n,)| format!("{n} squared is {}", n * n));
    show(&view);
    let (tx, done) = channel();
    let tx = Mutex::new(tx);
    // Listeners run in order on one thread: this one runs after interact's re-run.
    n.on_change(move |_| tx.lock().unwrap().send(()).unwrap());
    messages(ask(
        CommType::Msg,
        n.model_id(),
        None,
        json!({"method": "update", "state": {"value": 3}}),
    ));
    done.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(view.output().outputs()[0]["text"], "3 squared is 9\n");

    // The front end closes the comm: the model is forgotten.
    assert!(messages(ask(CommType::Close, &id, None, json!({}))).is_empty());
    assert!(matches!(
        ask(CommType::Msg, &id, None, json!({"method": "request_state"})),
        Answer::Error { .. }
    ));
    assert!(!lr.is_open());
    println!("comm child done");
}

#[test]
fn the_front_ends_messages_are_answered_applied_and_called_back_while_code_runs() {
    let out = run_child(COMM_CHILD);
    assert!(out.contains("comm child done"), "{out}");
    // interact's output area got the re-run's text as an update of `outputs`.
    let messages = protocol(&out);
    assert!(messages.iter().any(|m| matches!(m,
        Message::CommMsg { data, .. }
            if data["state"]["outputs"][0]["text"] == "3 squared is 9\n")));
}

const PROGRESS_CHILD: &str = "widgets::progress_child";

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

const PLAIN_PROGRESS_CHILD: &str = "widgets::plain_progress_child";

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
fn bounded_values_stay_within_their_bounds_as_ipywidgets_keeps_them() {
    let s = IntSlider::new().min(0).max(10).with_value(30);
    assert_eq!(s.value(), 10);
    s.set_value(-5);
    assert_eq!(s.value(), 0);
    let f = FloatSlider::new().with_value(50.0).max(1.0);
    assert_eq!(f.value(), 1.0);
    let p = IntProgress::new().min(5);
    assert_eq!(p.value(), 5);
}

#[test]
fn a_dropdown_chooses_by_label_and_names_its_options_when_the_label_is_missing() {
    let d = Dropdown::new().options(["sgd", "adam"]);
    assert_eq!(d.value().as_deref(), Some("sgd"));
    d.set_value("adam");
    assert_eq!(d.index(), Some(1));
    let error = d.f_set_value("lbfgs").unwrap_err();
    assert_eq!(error.options, ["sgd", "adam"]);
    assert_eq!(
        d.to_string(),
        "Dropdown(options=('sgd', 'adam'), value='adam')"
    );
    d.set_options(Vec::<String>::new());
    assert_eq!(d.value(), None);
}

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

const INTERACT_PLOT_CHILD: &str = "widgets::interact_plot_child";

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

const RUN_MANAGER_CHILD: &str = "widgets::run_manager_child";

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
