//! Jupyter widgets on the real kernel: the prelude's models opened with their whole state and
//! shown by their view, a slider moved while a training loop runs seen by that loop, a button's
//! callback answering between cells, and the progress bar drawn as `tqdm.notebook` draws it.
//! The protocol's routing is tested on the fake engine (`protocol::widgets`); here, what the
//! evaluation process and the prelude put in it.

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{CommId, CommMsg, ExecuteRequest, JupyterMessage, JupyterMessageContent};
use serde_json::{Map, Value, json};

const VIEW: &str = "application/vnd.jupyter.widget-view+json";

/// The comm_opens among `messages`, by comm id: (target, state, message metadata).
fn opened(messages: &[JupyterMessage]) -> Vec<(String, Map<String, Value>, Value)> {
    messages
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::CommOpen(open) => Some((
                open.comm_id.0.clone(),
                open.data["state"].as_object().cloned().unwrap_or_default(),
                m.metadata.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// A MIME bundle as JSON, as the front end reads it.
fn bundle(media: &jupyter_protocol::Media) -> Map<String, Value> {
    match serde_json::to_value(media) {
        Ok(Value::Object(map)) => map,
        other => panic!("not a bundle: {other:?}"),
    }
}

fn update(comm_id: &str, state: Value) -> CommMsg {
    CommMsg {
        comm_id: CommId(comm_id.into()),
        data: json!({"method": "update", "state": state, "buffer_paths": []})
            .as_object()
            .unwrap()
            .clone(),
    }
}

/// Each comm message's method and the `value` in its state, among `iopub`.
fn methods_and_values(iopub: &[JupyterMessage]) -> Vec<(String, Value)> {
    iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::CommMsg(msg) => Some((
                msg.data["method"].as_str().unwrap_or_default().to_owned(),
                msg.data["state"]["value"].clone(),
            )),
            _ => None,
        })
        .collect()
}

/// The comm id of the model named `model` (`IntSliderModel`) among `opens`.
fn id_of(opens: &[(String, Map<String, Value>, Value)], model: &str) -> String {
    opens
        .iter()
        .find(|(_, state, _)| state["_model_name"] == model)
        .unwrap_or_else(|| panic!("no {model} among {opens:?}"))
        .0
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slider_opens_its_layout_and_style_first_and_shows_its_view_with_fallbacks() {
    let mut kernel = Kernel::start().await;
    let cell = kernel
        .run_ok("let epochs = IntSlider::new().min(1).max(20).with_value(5).description(\"epochs\");\nepochs")
        .await;
    let opens = opened(&cell.iopub);
    let names: Vec<&str> = opens
        .iter()
        .map(|(_, s, _)| s["_model_name"].as_str().unwrap())
        .collect();
    // Its layout and style are models of their own, referenced by id, so they come first.
    assert_eq!(names.last(), Some(&"IntSliderModel"), "{names:?}");
    assert!(names.contains(&"LayoutModel") && names.contains(&"SliderStyleModel"));
    let slider = opens.last().unwrap();
    for (_, _, metadata) in &opens {
        assert_eq!(metadata["version"], "2.1.0");
    }
    let state = &slider.1;
    assert_eq!(state["_model_module"], "@jupyter-widgets/controls");
    assert_eq!(state["_model_module_version"], "2.0.0");
    assert_eq!(state["_view_name"], "IntSliderView");
    assert_eq!(
        (&state["value"], &state["min"], &state["max"]),
        (&json!(5), &json!(1), &json!(20))
    );
    assert_eq!(state["description"], "epochs");
    let layout = id_of(&opens, "LayoutModel");
    assert_eq!(state["layout"], format!("IPY_MODEL_{layout}"));

    // The cell's value is the view, with text and HTML for front ends without widgets.
    let data = cell
        .iopub
        .iter()
        .find_map(|m| match &m.content {
            JupyterMessageContent::ExecuteResult(r) => Some(bundle(&r.data)),
            _ => None,
        })
        .expect("an execute_result");
    assert_eq!(data[VIEW]["model_id"], slider.0.as_str());
    assert_eq!(data[VIEW]["version_major"], 2);
    assert!(
        data["text/plain"]
            .as_str()
            .unwrap()
            .starts_with("IntSlider("),
        "{data:?}"
    );
    assert!(data["text/html"].as_str().unwrap().contains("epochs"));

    // A reloaded page asks for the state again.
    let asked = kernel
        .send_shell(CommMsg {
            comm_id: CommId(slider.0.clone()),
            data: json!({"method": "request_state"})
                .as_object()
                .unwrap()
                .clone(),
        })
        .await;
    let iopub = kernel.iopub_until_idle(&asked.header.msg_id, REPLY).await;
    let state = iopub
        .iter()
        .find_map(|m| match &m.content {
            JupyterMessageContent::CommMsg(msg) if msg.data["method"] == "update" => {
                Some(msg.data["state"].clone())
            }
            _ => None,
        })
        .expect("the state");
    assert_eq!(state["value"], 5);
    assert_eq!(state["_view_module"], "@jupyter-widgets/controls");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_training_loop_sees_a_slider_moved_while_it_runs() {
    let mut kernel = Kernel::start().await;
    let shown = kernel
        .run_ok("let lr = IntSlider::new().max(100).description(\"lr\");\nshow(&lr);")
        .await;
    let slider = id_of(&opened(&shown.iopub), "IntSliderModel");
    let cell = kernel
        .send_shell(ExecuteRequest::new(
            "let mut steps = 0u64;\n\
             while lr.value() != 7 {\n\
                 steps += 1;\n\
                 interrupt::check();\n\
                 std::thread::sleep(std::time::Duration::from_millis(2));\n\
             }\n\
             println!(\"saw {} after {} steps\", lr.value(), steps > 0);"
                .into(),
        ))
        .await;
    // The loop runs once the cell printed nothing yet and its build is done: wait for the
    // cell's `execute_input`, then a while, as a person would take to move the slider.
    loop {
        let message = kernel.next_iopub(STARTUP).await;
        if message.header.msg_type == "execute_input" {
            break;
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let moved = kernel
        .send_shell(update(&slider, json!({"value": 7})))
        .await;
    let iopub = kernel.iopub_until_idle(&cell.header.msg_id, STARTUP).await;
    let reply = kernel.shell_reply(REPLY).await;
    assert!(
        matches!(&reply.content, JupyterMessageContent::ExecuteReply(r) if r.status == jupyter_protocol::ReplyStatus::Ok),
        "{reply:?}\n{}",
        kernel.log()
    );
    let text: String = iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "saw 7 after true steps\n");
    let echo = kernel
        .drain_backlog()
        .into_iter()
        .find(|m| {
            m.header.msg_type == "comm_msg"
                && m.parent_header
                    .as_ref()
                    .is_some_and(|p| p.msg_id == moved.header.msg_id)
        })
        .expect("the update's echo");
    let JupyterMessageContent::CommMsg(echo) = &echo.content else {
        panic!("{echo:?}")
    };
    assert_eq!(echo.data["method"], "echo_update");
    assert_eq!(echo.data["state"]["value"], 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_buttons_callback_runs_between_cells_and_its_change_reaches_the_front_end() {
    let mut kernel = Kernel::start().await;
    let cell = kernel
        .run_ok(
            "let button = Button::new().description(\"Go\");\n\
             let said = Label::new(\"not yet\");\n\
             { let said = said.clone(); button.on_click(move || said.set_value(\"clicked\")); }\n\
             show(&VBox::new(&[&button, &said]));",
        )
        .await;
    let opens = opened(&cell.iopub);
    let (button, label) = (id_of(&opens, "ButtonModel"), id_of(&opens, "LabelModel"));
    let click = kernel
        .send_shell(CommMsg {
            comm_id: CommId(button),
            data: json!({"method": "custom", "content": {"event": "click"}})
                .as_object()
                .unwrap()
                .clone(),
        })
        .await;
    // The callback runs on the prelude's thread after the click's idle; its update is a child of
    // the click.
    let mut seen = None;
    for _ in 0..20 {
        let message = kernel.next_iopub(REPLY).await;
        if let JupyterMessageContent::CommMsg(msg) = &message.content
            && msg.comm_id.0 == label
        {
            assert_eq!(
                message.parent_header.as_ref().unwrap().msg_id,
                click.header.msg_id
            );
            seen = Some(msg.data["state"]["value"].clone());
            break;
        }
    }
    assert_eq!(seen, Some(json!("clicked")));
    let cell = kernel
        .run_ok("println!(\"{} {}\", said.value(), button.clicks());")
        .await;
    assert_eq!(cell.stdout(), "clicked 1\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_progress_bar_is_a_tqdm_widget_with_its_html_bar_beside_it() {
    let mut kernel = Kernel::start().await;
    let cell = kernel
        .run_ok(
            "let mut bar = Progress::new(40, \"batch\").description(\"epoch 1\");\n\
             for _ in 0..40 { bar.tick(); std::thread::sleep(std::time::Duration::from_millis(5)); }\n\
             bar.finish();",
        )
        .await;
    let opens = opened(&cell.iopub);
    let names: Vec<&str> = opens
        .iter()
        .map(|(_, s, _)| s["_model_name"].as_str().unwrap())
        .collect();
    for model in ["HBoxModel", "FloatProgressModel", "HTMLModel"] {
        assert!(names.contains(&model), "{model} missing from {names:?}");
    }
    let hbox = &opens[names.iter().position(|n| *n == "HBoxModel").unwrap()].1;
    assert_eq!(hbox["children"].as_array().unwrap().len(), 3, "{hbox:?}");
    // One display, carrying the view and the HTML bar; no second rendering of the bar.
    let displays: Vec<Map<String, Value>> = cell
        .iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::DisplayData(d) => Some(&d.data),
            _ => None,
        })
        .map(bundle)
        .collect();
    assert_eq!(displays.len(), 1, "{displays:?}");
    assert!(displays[0].contains_key(VIEW) && displays[0].contains_key("text/html"));
    // At the end the bar is full, in the widget and in the HTML the saved notebook keeps.
    let progress = id_of(&opens, "FloatProgressModel");
    let last_value = cell
        .iopub
        .iter()
        .rev()
        .find_map(|m| match &m.content {
            JupyterMessageContent::CommMsg(msg) if msg.comm_id.0 == progress => {
                msg.data["state"].get("value").cloned()
            }
            _ => None,
        })
        .expect("updates of the bar");
    assert_eq!(last_value, json!(40.0));
    let last_html = cell
        .iopub
        .iter()
        .rev()
        .find_map(|m| match &m.content {
            JupyterMessageContent::UpdateDisplayData(u) => Some(bundle(&u.data)),
            _ => None,
        })
        .expect("the final update of the display");
    assert!(
        last_html["text/html"].as_str().unwrap().contains("40/40"),
        "{last_html:?}"
    );
}

/// What a front end (or whoever holds its connection) sends is checked against the model, as
/// ipywidgets' traits check it. Before, a slider of range 0..100 took `1e15`, `-5` and `"abc"`
/// as they came, and a loop read them.
#[tokio::test(flavor = "multi_thread")]
async fn a_slider_keeps_its_range_and_type_whatever_the_front_end_sends() {
    let mut kernel = Kernel::start().await;
    let cell = kernel
        .run_ok("let lr = IntSlider::new().min(0).max(100).with_value(5);\nlr")
        .await;
    let slider = id_of(&opened(&cell.iopub), "IntSliderModel");
    let mut deep = json!(1);
    // Deeper than a model's value may be, within what the kernel's JSON reader takes.
    for _ in 0..100 {
        deep = json!([deep]);
    }
    // (sent, what the model holds after it, what the front end is told back)
    let cases = [
        (json!(1e15), 100, "update"),
        (json!(-5), 0, "update"),
        (json!("abc"), 0, "update"),
        (deep, 0, "update"),
        (json!(42), 42, "echo_update"),
    ];
    for (sent, kept, told) in cases {
        let moved = kernel
            .send_shell(update(&slider, json!({"value": sent})))
            .await;
        let iopub = kernel.iopub_until_idle(&moved.header.msg_id, REPLY).await;
        let back = methods_and_values(&iopub);
        assert_eq!(back, [(told.to_owned(), json!(kept))], "{sent}");
        let stderr = crate::support::streamed(&iopub);
        if sent.is_string() {
            assert!(
                stderr.contains("refused") && stderr.contains("`value`"),
                "{stderr}"
            );
        }
        let read = kernel.run_ok("lr.value()").await;
        assert_eq!(read.result(), Some(kept.to_string()), "after {sent}");
    }
}

/// The kernel's peak resident memory so far, in bytes (`VmHWM`).
fn peak_memory(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test(flavor = "multi_thread")]
async fn a_widget_message_over_the_limit_is_refused_unread_and_the_slider_keeps_its_state() {
    let mut kernel = Kernel::start().await;
    let cell = kernel
        .run_ok("let lr = IntSlider::new().min(0).max(100).with_value(5);\nlr")
        .await;
    let slider = id_of(&opened(&cell.iopub), "IntSliderModel");
    let before = peak_memory(kernel.pid());
    // 100 MB of JSON in the content: a front end's widget state is never this (binary data
    // travels in buffers), and reading it whole once cost the kernel 478 MiB.
    let huge = "9".repeat(100_000_000);
    let started = std::time::Instant::now();
    let moved = kernel
        .send_shell(update(&slider, json!({ "value": huge })))
        .await;
    drop(huge);
    let iopub = kernel.iopub_until_idle(&moved.header.msg_id, REPLY).await;
    let grown = peak_memory(kernel.pid()).saturating_sub(before);
    assert_eq!(crate::support::states(&iopub), ["Busy", "Idle"]);
    let stderr = crate::support::streamed(&iopub);
    assert!(
        stderr.contains("comm_msg of 95.4 MiB") && stderr.contains("refused unread"),
        "{stderr}"
    );
    // The front end is given the model's whole state back, its value among it.
    assert_eq!(
        methods_and_values(&iopub),
        [("update".to_owned(), json!(5))]
    );
    // The socket holds the message's frames while they arrive; the JSON is never read.
    assert!(grown < 250 << 20, "the kernel grew by {} MiB", grown >> 20);
    eprintln!(
        "peak memory grew by {} MiB; refused in {:?}",
        grown >> 20,
        started.elapsed()
    );
    let read = kernel.run_ok("lr.value()").await;
    assert_eq!(read.result().as_deref(), Some("5"));
}
