//! JupyterLab's panels on the fake engine: the debugger's requests as the Variables panel
//! sends them (`debug_request`), and `usage_request`, each answered on control with ipykernel's
//! shapes, from the fake's side channel (`fake_side_channel`).

use super::{SOON, run, types};
use crate::fake_engine::FakeKernel;
use crate::fake_side_channel::fake_gpu;
use crate::support::panels::{debug, named, usage};
use jupyter_protocol::{ExecuteRequest, JupyterMessageContent, KernelInfoRequest};
use serde_json::{Value, json};

const TENSOR: &str = "Tensor[64, 10] f32 cpu 2.5 KiB requires_grad";

#[tokio::test(flavor = "multi_thread")]
async fn kernel_info_offers_the_debugger() {
    let mut kernel = FakeKernel::start().await;
    let reply = kernel.request(KernelInfoRequest {}).await;
    let JupyterMessageContent::KernelInfoReply(info) = &reply.content else {
        panic!("{reply:?}")
    };
    assert!(info.debugger);
    assert_eq!(info.protocol_version, "5.3");
}

#[tokio::test(flavor = "multi_thread")]
async fn debug_info_is_answered_before_initialize_and_says_whether_it_started() {
    let mut kernel = FakeKernel::start().await;
    let info = debug(&mut kernel, "debugInfo", json!({}), SOON).await;
    assert_eq!(info["success"], true);
    let body = &info["body"];
    assert_eq!(body["isStarted"], false);
    assert_eq!(body["richRendering"], true);
    assert_eq!(body["hashMethod"], "Murmur2");
    assert_eq!(body["tmpFileSuffix"], ".rs");
    assert_eq!(body["breakpoints"], json!([]));
    assert_eq!(body["stoppedThreads"], json!([]));
    let initialize =
        json!({"clientID": "jupyterlab", "adapterID": "tchbook", "pathFormat": "path"});
    let reply = debug(&mut kernel, "initialize", initialize, SOON).await;
    assert_eq!(reply["success"], true);
    for command in ["attach", "configurationDone"] {
        assert_eq!(
            debug(&mut kernel, command, json!({}), SOON).await["success"],
            true
        );
    }
    let info = debug(&mut kernel, "debugInfo", json!({}), SOON).await;
    assert_eq!(info["body"]["isStarted"], true);
    let reply = debug(
        &mut kernel,
        "disconnect",
        json!({"terminateDebuggee": false}),
        SOON,
    )
    .await;
    assert_eq!(reply["success"], true);
    let info = debug(&mut kernel, "debugInfo", json!({}), SOON).await;
    assert_eq!(info["body"]["isStarted"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_debug_request_is_answered_between_busy_and_idle_on_iopub() {
    let mut kernel = FakeKernel::start().await;
    let content = json!({"type": "request", "seq": 7, "command": "debugInfo", "arguments": {}});
    let sent = kernel
        .send_control(jupyter_protocol::DebugRequest { content })
        .await;
    kernel.control_reply(SOON).await;
    let iopub = kernel.iopub_until_idle(&sent.header.msg_id, SOON).await;
    assert_eq!(types(&iopub), ["status", "status"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_variables_lists_the_notebooks_variables_with_their_summaries() {
    let mut kernel = FakeKernel::start().await;
    run(
        &mut kernel,
        &format!("let x Tensor = {TENSOR}\nlet n i32 = 42"),
    )
    .await;
    let reply = debug(&mut kernel, "inspectVariables", json!({}), SOON).await;
    assert_eq!(reply["success"], true);
    let x = named(&reply, "x");
    assert_eq!(x["value"], TENSOR);
    // No type: JupyterLab's tree would show it instead of the value (`dap_variable`).
    assert!(x.get("type").is_none(), "{x}");
    assert_eq!(x["evaluateName"], "x");
    let n = named(&reply, "n");
    assert_eq!(
        (n["value"].as_str(), n["variablesReference"].as_u64()),
        (Some("42"), Some(0))
    );

    // The tensor expands into its fields.
    let reference = x["variablesReference"].clone();
    assert_ne!(reference, 0);
    let fields = debug(
        &mut kernel,
        "variables",
        json!({"variablesReference": reference}),
        SOON,
    )
    .await;
    assert_eq!(fields["success"], true);
    let shape = named(&fields, "shape");
    assert_eq!(shape["value"], "[64, 10]");
    assert_eq!(shape["evaluateName"], "x.shape");
    assert_eq!(shape["variablesReference"], 0);
    // A reference nothing has is an error that says so.
    let none = debug(
        &mut kernel,
        "variables",
        json!({"variablesReference": 999}),
        SOON,
    )
    .await;
    assert_eq!(none["success"], false);
    assert!(
        none["message"].as_str().unwrap().contains("reference 999"),
        "{none}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn while_a_cell_runs_the_panel_shows_the_last_finished_cells_values_and_says_so() {
    let mut kernel = FakeKernel::start().await;
    run(&mut kernel, &format!("let x Tensor = {TENSOR}")).await;
    let first = debug(&mut kernel, "inspectVariables", json!({}), SOON).await;
    assert_eq!(first["body"]["variables"].as_array().unwrap().len(), 1);
    let sent = kernel
        .send_shell(ExecuteRequest::new(
            "print started\nsleep 1500\nlet y i32 = 1".into(),
        ))
        .await;
    loop {
        let message = kernel.next_iopub(SOON).await;
        if matches!(&message.content, JupyterMessageContent::StreamContent(_)) {
            break;
        }
    }
    let during = debug(&mut kernel, "inspectVariables", json!({}), SOON).await;
    let variables = during["body"]["variables"].as_array().unwrap();
    assert_eq!(variables[0]["name"], "(cell running)", "{during}");
    assert_eq!(named(&during, "x")["value"], TENSOR);
    assert!(variables.iter().all(|v| v["name"] != "y"));
    // Render variable says when it can.
    let rich = debug(
        &mut kernel,
        "richInspectVariables",
        json!({"variableName": "x"}),
        SOON,
    )
    .await;
    let text = rich["body"]["data"]["text/plain"].as_str().unwrap();
    assert!(text.contains("once the running cell has ended"), "{text}");
    kernel.execute_reply_to(&sent, SOON).await;
    let after = debug(&mut kernel, "inspectVariables", json!({}), SOON).await;
    assert_eq!(named(&after, "y")["value"], "1");
    assert!(
        after["body"]["variables"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["name"] != "(cell running)")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rich_inspect_variables_returns_the_variables_bundle() {
    let mut kernel = FakeKernel::start().await;
    run(&mut kernel, &format!("let x Tensor = {TENSOR}")).await;
    let rich = debug(
        &mut kernel,
        "richInspectVariables",
        json!({"variableName": "x"}),
        SOON,
    )
    .await;
    assert_eq!(rich["success"], true);
    assert_eq!(rich["body"]["data"]["text/plain"], format!("rich {TENSOR}"));
    assert_eq!(rich["body"]["metadata"], json!({}));
    let missing = debug(
        &mut kernel,
        "richInspectVariables",
        json!({"variableName": "nope"}),
        SOON,
    )
    .await;
    assert_eq!(missing["body"]["data"]["text/plain"], "no variable `nope`");
    // A group's title is no variable: an empty bundle, as ipykernel answers.
    let group = json!({"variableName": "special variables"});
    let reply = debug(&mut kernel, "richInspectVariables", group, SOON).await;
    assert_eq!(reply["body"], json!({"data": {}, "metadata": {}}));
}

#[tokio::test(flavor = "multi_thread")]
async fn breakpoints_without_a_debugger_attached_are_unverified_saying_why() {
    let mut kernel = FakeKernel::start().await;
    let dumped = debug(&mut kernel, "dumpCell", json!({"code": "let x = 1;"}), SOON).await;
    assert_eq!(dumped["success"], true);
    let path = dumped["body"]["sourcePath"].as_str().unwrap().to_owned();
    assert!(path.ends_with(".rs"), "{path}");
    let arguments = json!({
        "source": {"path": path}, "breakpoints": [{"line": 1}, {"line": 3}], "sourceModified": false
    });
    let reply = debug(&mut kernel, "setBreakpoints", arguments, SOON).await;
    assert_eq!(reply["success"], true);
    let breakpoints = reply["body"]["breakpoints"].as_array().unwrap();
    assert_eq!(breakpoints.len(), 2);
    for (breakpoint, line) in breakpoints.iter().zip([1, 3]) {
        assert_eq!(breakpoint["verified"], false);
        assert_eq!(breakpoint["line"], line);
        assert!(
            breakpoint["message"]
                .as_str()
                .unwrap()
                .contains("not attached")
        );
    }
    let trace = debug(&mut kernel, "stackTrace", json!({"threadId": 1}), SOON).await;
    assert_eq!(trace["body"], json!({"stackFrames": [], "totalFrames": 0}));
    let source = debug(
        &mut kernel,
        "source",
        json!({"source": {"path": path}}),
        SOON,
    )
    .await;
    // Only a file a stopped frame named is read back; with no frame, none is.
    assert_eq!(source["success"], false);
    let message = source["message"].as_str().unwrap();
    assert!(
        message.contains("`source`") && message.contains("frame"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_debug_command_without_a_debugger_attached_gets_an_error_response_naming_it() {
    let mut kernel = FakeKernel::start().await;
    let reply = debug(&mut kernel, "stepIn", json!({"threadId": 1}), SOON).await;
    assert_eq!(reply["success"], false);
    let message = reply["message"].as_str().unwrap();
    assert!(
        message.contains("`stepIn`") && message.contains("attached"),
        "{message}"
    );
    let reply = debug(&mut kernel, "restart", json!({}), SOON).await;
    assert_eq!(reply["success"], false);
    assert!(reply["message"].as_str().unwrap().contains("`restart`"));
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_request_gets_ipykernels_fields_and_the_gpus() {
    let mut kernel = FakeKernel::start().await;
    let first = usage(&mut kernel, SOON).await;
    for key in [
        "hostname",
        "pid",
        "kernel_cpu",
        "kernel_memory",
        "cpu_count",
        "host_virtual_memory",
    ] {
        assert!(first.get(key).is_some(), "{key} missing: {first}");
    }
    // The kernel here is the test process itself.
    assert_eq!(first["pid"], std::process::id());
    assert!(first["kernel_memory"].as_u64().unwrap() > 0);
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(first["cpu_count"], cores);
    let memory = &first["host_virtual_memory"];
    assert!(memory["total"].as_u64().unwrap() >= memory["available"].as_u64().unwrap());
    assert_eq!(
        first["gpus"],
        json!([serde_json::to_value(fake_gpu()).unwrap()])
    );
    let gpu = &first["gpus"][0];
    assert_eq!(gpu["allocator"]["reserved"], Value::from(2u64 << 30));
    // A second request has a previous sample to measure the host's CPU against.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let second = usage(&mut kernel, SOON).await;
    assert!(second["kernel_cpu"].as_f64().unwrap() >= 0.0);
}
