//! Jupyter widgets on the fake engine: the evaluation process's comm messages published in order
//! with the cell's output and listed by `comm_info_request`; the front end's reaching the
//! evaluation process while a cell runs, between cells, and on a reloaded page.

use super::{SOON, run, types};
use crate::fake_engine::FakeKernel;
use jupyter_protocol::{
    CommClose, CommId, CommInfoRequest, CommMsg, CommOpen, ExecuteRequest, JupyterMessage,
    JupyterMessageContent,
};
use serde_json::{Map, Value, json};
use std::time::Duration;

fn comm_msg(comm_id: &str, data: Value) -> CommMsg {
    CommMsg {
        comm_id: CommId(comm_id.into()),
        data: data.as_object().unwrap().clone(),
    }
}

/// The data of a `comm_msg` on iopub.
fn data(message: &JupyterMessage) -> &Map<String, Value> {
    match &message.content {
        JupyterMessageContent::CommMsg(msg) => &msg.data,
        other => panic!("not a comm_msg: {other:?}"),
    }
}

async fn open_comms(kernel: &mut FakeKernel, target: Option<&str>) -> Vec<(String, String)> {
    let reply = kernel
        .request(CommInfoRequest {
            target_name: target.map(str::to_owned),
        })
        .await;
    let JupyterMessageContent::CommInfoReply(info) = reply.content else {
        panic!("{reply:?}")
    };
    let mut comms: Vec<(String, String)> = info
        .comms
        .into_iter()
        .map(|(id, info)| (id.0, info.target_name))
        .collect();
    comms.sort();
    comms
}

#[tokio::test(flavor = "multi_thread")]
async fn a_widget_opens_in_order_with_the_output_and_stays_listed_until_closed() {
    let mut kernel = FakeKernel::start().await;
    let cell = run(&mut kernel, "print before\nwidget w1 3\nprint after").await;
    assert_eq!(
        types(&cell.iopub),
        [
            "status",
            "execute_input",
            "stream",
            "comm_open",
            "stream",
            "status"
        ]
    );
    let open = &cell.iopub[3];
    let JupyterMessageContent::CommOpen(content) = &open.content else {
        panic!("{open:?}")
    };
    assert_eq!(content.comm_id.0, "w1");
    assert_eq!(content.target_name, "jupyter.widget");
    assert_eq!(content.data["state"]["value"], 3);
    assert_eq!(content.data["buffer_paths"], json!([]));
    // The front end's widget manager refuses a model without the protocol's version.
    assert_eq!(open.metadata["version"], "2.1.0");
    assert_eq!(
        open.parent_header.as_ref().unwrap().msg_id,
        cell.request.header.msg_id
    );

    let widget = ("w1".to_owned(), "jupyter.widget".to_owned());
    assert_eq!(
        open_comms(&mut kernel, None).await,
        std::slice::from_ref(&widget)
    );
    assert_eq!(
        open_comms(&mut kernel, Some("jupyter.widget")).await,
        [widget]
    );
    assert!(open_comms(&mut kernel, Some("other")).await.is_empty());

    let cell = run(&mut kernel, "close w1").await;
    assert!(types(&cell.iopub).contains(&"comm_close"));
    assert!(open_comms(&mut kernel, None).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slider_moved_while_a_cell_runs_reaches_the_running_cell() {
    let mut kernel = FakeKernel::start().await;
    let cell = kernel
        .send_shell(ExecuteRequest::new("widget w2 0\nawait-value w2 7".into()))
        .await;
    // The cell runs once its widget is on iopub.
    loop {
        let message = kernel.next_iopub(SOON).await;
        if message.header.msg_type == "comm_open" {
            break;
        }
    }
    let moved = kernel
        .send_shell(comm_msg(
            "w2",
            json!({"method": "update", "state": {"value": 7}, "buffer_paths": []}),
        ))
        .await;
    let iopub = kernel.iopub_until_idle(&cell.header.msg_id, SOON).await;
    let out: String = iopub
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(out, "saw 7\n");
    let reply = kernel.execute_reply_to(&cell, SOON).await;
    assert_eq!(reply.status, jupyter_protocol::ReplyStatus::Ok);

    // The echo the protocol asks for came as the update's child, between its busy and idle
    // (ipywidgets' front end sends a widget's next change only after that idle), and a busy of
    // the running cell at once after it.
    let backlog = kernel.drain_backlog();
    let answers: Vec<&JupyterMessage> = backlog
        .iter()
        .filter(|m| {
            m.parent_header
                .as_ref()
                .is_some_and(|p| p.msg_id == moved.header.msg_id)
        })
        .collect();
    assert_eq!(
        answers
            .iter()
            .map(|m| m.header.msg_type.as_str())
            .collect::<Vec<_>>(),
        ["status", "comm_msg", "status"]
    );
    assert_eq!(data(answers[1])["method"], "echo_update");
    assert_eq!(data(answers[1])["state"], json!({"value": 7}));
    assert_eq!(answers[1].metadata["version"], "2.1.0");
    let busy_again = iopub
        .iter()
        .filter(|m| m.header.msg_type == "status")
        .map(|m| serde_json::to_value(&m.content).unwrap()["execution_state"].clone())
        .collect::<Vec<_>>();
    // (The cell's own first busy came before its widget, read above.)
    assert_eq!(busy_again, ["busy", "idle"], "{iopub:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn between_cells_an_update_gets_its_echo_and_the_callbacks_message() {
    let mut kernel = FakeKernel::start().await;
    run(&mut kernel, "widget cb-1 0").await;
    let moved = kernel
        .send_shell(comm_msg(
            "cb-1",
            json!({"method": "update", "state": {"value": 4}, "buffer_paths": []}),
        ))
        .await;
    let iopub = kernel.iopub_until_idle(&moved.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "comm_msg", "status"]);
    assert_eq!(data(&iopub[1])["method"], "echo_update");
    // The callback runs on a thread of the evaluation process, after the answer: its update
    // arrives between cells, as a child of the message that caused it.
    let callback = kernel.next_iopub(SOON).await;
    assert_eq!(
        callback.parent_header.as_ref().unwrap().msg_id,
        moved.header.msg_id
    );
    assert_eq!(data(&callback)["method"], "update");
    assert_eq!(data(&callback)["state"]["description"], "moved to 4");

    // The cell's own change travels as an update too.
    let cell = run(&mut kernel, "set cb-1 9").await;
    let update = cell
        .iopub
        .iter()
        .find(|m| m.header.msg_type == "comm_msg")
        .expect("an update");
    assert_eq!(data(update)["state"], json!({"value": 9}));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reloaded_page_gets_every_state_back() {
    let mut kernel = FakeKernel::start().await;
    run(&mut kernel, "widget w3 5\nwidget w4 6").await;

    // ipywidgets 8: one control comm, `request_states`.
    let control = kernel
        .send_shell(CommOpen {
            comm_id: CommId("control-1".into()),
            target_name: "jupyter.widget.control".into(),
            data: Map::new(),
            target_module: None,
        })
        .await;
    let iopub = kernel.iopub_until_idle(&control.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "status"], "kept open, not closed");
    let asked = kernel
        .send_shell(comm_msg("control-1", json!({"method": "request_states"})))
        .await;
    let iopub = kernel.iopub_until_idle(&asked.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "comm_msg", "status"]);
    let answer = data(&iopub[1]);
    assert_eq!(answer["method"], "update_states");
    assert_eq!(answer["states"]["w3"]["state"]["value"], 5);
    assert_eq!(answer["states"]["w4"]["state"]["value"], 6);

    // The older way: each widget's comm, listed by comm_info, asked for its state.
    let widgets = open_comms(&mut kernel, Some("jupyter.widget")).await;
    assert_eq!(widgets.len(), 2);
    let asked = kernel
        .send_shell(comm_msg("w4", json!({"method": "request_state"})))
        .await;
    let iopub = kernel.iopub_until_idle(&asked.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "comm_msg", "status"]);
    assert_eq!(data(&iopub[1])["method"], "update");
    assert_eq!(data(&iopub[1])["state"]["_model_name"], "IntSliderModel");
    assert_eq!(data(&iopub[1])["state"]["value"], 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_comms_and_closed_widgets_are_let_go_quietly() {
    let mut kernel = FakeKernel::start().await;
    // A message for a comm nobody opened: no answer but busy/idle.
    let stray = kernel
        .send_shell(comm_msg("nobody", json!({"method": "update", "state": {}})))
        .await;
    let iopub = kernel.iopub_until_idle(&stray.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "status"]);

    // A front end closes a widget: it is no longer listed, and the kernel keeps serving.
    run(&mut kernel, "widget w5 1").await;
    let closed = kernel
        .send_shell(CommClose {
            comm_id: CommId("w5".into()),
            data: Map::new(),
        })
        .await;
    kernel.iopub_until_idle(&closed.header.msg_id, SOON).await;
    assert!(open_comms(&mut kernel, None).await.is_empty());
    let asked = kernel
        .send_shell(comm_msg("w5", json!({"method": "request_state"})))
        .await;
    let iopub = kernel.iopub_until_idle(&asked.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "status"]);
    // Nothing else came, but the busy/idle of the requests before.
    let rest = kernel.drain_backlog();
    assert!(types(&rest).iter().all(|t| *t == "status"), "{rest:?}");
    kernel.assert_iopub_quiet(Duration::from_millis(100)).await;
}
