//! The front end's messages, answered through the same C entry point the evaluation process's
//! runtime calls: applied, called back while code runs, seen by a running loop; values kept
//! within their bounds and options, as ipywidgets keeps them.

use super::{ask, messages, protocol};
use crate::{is_child, run_child};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tchbook_prelude::display::show;
use tchbook_prelude::prelude::*;
use tchbook_prelude::runtime;
use tchbook_wire::Message;
use tchbook_wire::side_channel::{Answer, CommType};
use tchbook_wire::widgets::{CONTROL_TARGET, TARGET};

const COMM_CHILD: &str = "widgets::comms::comm_child";

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
