//! JupyterLab's panels on the real kernel: the Variables panel's requests read the notebook's
//! variables from the evaluation process (tensors with their summaries and fields, a rich view),
//! and `usage_request` measures the kernel's process tree. The replies' shapes are tested on
//! the fake engine (`protocol::panels`); here, what the real processes put in them.

use crate::support::panels::{StandInNvml, debug, named, usage, variables};
use crate::support::{Kernel, REPLY, STARTUP, children};
use jupyter_protocol::ReplyStatus;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_variables_panel_lists_a_tensor_with_its_summary_expands_it_and_renders_it() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok(
            "let x = Tensor::ones([64, 10], (Kind::Float, Device::Cpu)).set_requires_grad(true);\n\
             let n = 42;\nlet name = String::from(\"tchbook\");\n\
             let vs = nn::VarStore::new(Device::Cpu);\n\
             let layer = nn::linear(vs.root() / \"fc\", 4, 3, Default::default());",
        )
        .await;
    let reply = variables(&mut kernel).await;
    let x = named(&reply, "x");
    assert_eq!(
        x["value"], "Tensor[64, 10] f32 cpu 2.5 KiB requires_grad",
        "{reply}"
    );
    assert_eq!(named(&reply, "n")["value"], "42");
    assert_eq!(named(&reply, "name")["value"], "\"tchbook\"");
    assert_eq!(
        named(&reply, "vs")["value"],
        "VarStore 15 parameters 60 B cpu"
    );

    let fields = debug(
        &mut kernel,
        "variables",
        json!({"variablesReference": x["variablesReference"]}),
        REPLY,
    )
    .await;
    for (field, value) in [
        ("shape", "[64, 10]"),
        ("dtype", "f32"),
        ("device", "cpu"),
        ("numel", "640"),
        ("bytes", "2560"),
        ("requires_grad", "true"),
        ("grad", "None"),
        ("min", "1.000000"),
        ("mean", "1.000000"),
    ] {
        assert_eq!(named(&fields, field)["value"], value, "{fields}");
    }
    let parameters = debug(
        &mut kernel,
        "variables",
        json!({"variablesReference": named(&reply, "vs")["variablesReference"]}),
        REPLY,
    )
    .await;
    assert_eq!(
        named(&parameters, "fc.weight")["value"],
        "Tensor[3, 4] f32 cpu 48 B requires_grad"
    );

    let rich = debug(
        &mut kernel,
        "richInspectVariables",
        json!({"variableName": "x"}),
        REPLY,
    )
    .await;
    assert_eq!(rich["success"], true);
    let data = &rich["body"]["data"];
    assert!(
        data["text/plain"]
            .as_str()
            .unwrap()
            .starts_with("tensor([[1., 1., 1."),
        "{data}"
    );
    // Two dimensions: a heat map beside the printed tensor.
    assert!(
        data["image/png"]
            .as_str()
            .is_some_and(|png| png.len() > 100),
        "{data}"
    );
    assert!(
        data["text/html"]
            .as_str()
            .unwrap()
            .contains("data:image/png;base64,")
    );
    assert!(
        rich["body"]["metadata"]["image/png"]["alt"]
            .as_str()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_reply_sums_the_kernel_and_its_evaluation_process() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let v = vec![0u8; 64 << 20];").await;
    let first = usage(&mut kernel, STARTUP).await;
    assert_eq!(first["pid"], kernel.pid());
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(first["cpu_count"], cores);
    assert!(first["hostname"].as_str().is_some_and(|h| !h.is_empty()));
    // The evaluation process holds the 64 MiB vector and libtorch: more than the kernel alone.
    let memory = first["kernel_memory"].as_u64().unwrap();
    assert!(memory > 64 << 20, "{first}");
    assert!(!children(kernel.pid()).is_empty());
    assert!(first["gpus"].is_array(), "{first}");
    assert!(first["host_virtual_memory"]["total"].as_u64().unwrap() > memory);
    let second = usage(&mut kernel, REPLY).await;
    assert!(second["kernel_cpu"].as_f64().is_some());
}

const H100: &str =
    "driver 550.54.15\ncuda 12040\ngpu 3221225472 85899345920 42 NVIDIA Stand-in H100\n";

/// The GPUs of a `usage_reply` come from NVML in the evaluation process (here the stand-in, with
/// scripted figures that change between requests), with the driver's and CUDA's versions; a GPU
/// NVML can no longer read is listed with NVML's words instead of zeros, a failing NVML gives no
/// GPUs, and none of it touches the notebook.
#[tokio::test(flavor = "multi_thread")]
async fn usage_reply_carries_nvmls_gpus_and_says_what_nvml_could_not_read() {
    let nvml = StandInNvml::build();
    nvml.script(H100);
    let env = nvml.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut kernel = Kernel::start_with_env(&env).await;
    kernel.run_ok("let kept = 41;").await;
    let reply = usage(&mut kernel, STARTUP).await;
    let gpu = &reply["gpus"][0];
    assert_eq!(gpu["name"], "NVIDIA Stand-in H100", "{reply}");
    assert_eq!(gpu["memory_used"], 3u64 << 30);
    assert_eq!(gpu["memory_total"], 80u64 << 30);
    assert_eq!(gpu["utilization"], 42);
    assert_eq!(gpu["driver"], "550.54.15");
    assert_eq!(gpu["cuda"], "12.4");
    assert_eq!(gpu["error"], serde_json::Value::Null);
    assert_eq!(reply["gpus"].as_array().unwrap().len(), 1);

    nvml.script(
        "driver 550.54.15\ncuda 12040\nlost NVIDIA Stand-in H100\n\
         gpu 1073741824 25769803776 7 NVIDIA Stand-in L4\n",
    );
    let reply = usage(&mut kernel, REPLY).await;
    let lost = &reply["gpus"][0];
    assert_eq!(lost["name"], "NVIDIA Stand-in H100", "{reply}");
    assert_eq!(lost["error"], "nvmlDeviceGetMemoryInfo: GPU is lost");
    assert_eq!(lost["utilization"], serde_json::Value::Null);
    assert_eq!(reply["gpus"][1]["memory_used"], 1u64 << 30);
    assert_eq!(reply["gpus"][1]["utilization"], 7);

    nvml.script("count-error 999\n");
    let reply = usage(&mut kernel, REPLY).await;
    assert_eq!(reply["gpus"], json!([]), "{reply}");
    let after = kernel.run_ok("kept + 1").await;
    assert_eq!(after.result().as_deref(), Some("42"));
}

/// The stop button is answered at once while a Variables-panel request waits on an evaluation
/// process that does not answer (here: stopped). Before, the interrupt waited behind it.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_never_waits_behind_a_variables_request() {
    use jupyter_protocol::{DebugRequest, InterruptRequest, JupyterMessageContent};
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let evaluation = *children(kernel.pid())
        .first()
        .expect("the evaluation process");
    // SAFETY: signals to the test's own child process.
    unsafe { libc::kill(evaluation, libc::SIGSTOP) };
    let inspect = json!({"type": "request", "seq": 1, "command": "richInspectVariables",
                         "arguments": {"variableName": "kept"}});
    let asked = kernel.send_control(DebugRequest { content: inspect }).await;
    let interrupt = kernel.send_control(InterruptRequest {}).await;
    let first = kernel.control_reply(REPLY).await;
    // SAFETY: as above.
    unsafe { libc::kill(evaluation, libc::SIGCONT) };
    assert_eq!(
        first.parent_header.as_ref().map(|p| p.msg_id.clone()),
        Some(interrupt.header.msg_id.clone()),
        "the first reply on control answers {:?}",
        first.header.msg_type
    );
    assert!(matches!(
        first.content,
        JupyterMessageContent::InterruptReply(_)
    ));
    let second = kernel.control_reply(REPLY).await;
    assert_eq!(
        second.parent_header.as_ref().map(|p| p.msg_id.clone()),
        Some(asked.header.msg_id)
    );
    let next = kernel.run_ok("kept + 1").await;
    assert_eq!(next.result().as_deref(), Some("42"));
}

/// A cell that defines `name` and then returns early through `?` with the error `error`: the
/// error on stderr, the store's keyed line read (not printed), `name` not kept.
async fn returns_early(kernel: &mut Kernel, name: &str, error: &str) {
    let cell = format!("let {name} = 1;\nlet r: Result<i32, &str> = Err({error:?});\nr?;");
    let early = kernel.execute(&cell).await;
    let printed = (early.stdout(), early.stderr());
    assert_eq!(printed, (String::new(), format!("{error}\n")));
    let gone = kernel.execute(name).await;
    assert_eq!(gone.reply_status(), ReplyStatus::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cleared_notebook_keeps_its_variables_in_the_kernels_own_store() {
    let mut kernel = Kernel::start().await;
    // A `?` that returns early, through the prelude's store.
    returns_early(&mut kernel, "lost", "bad").await;

    // Without the prelude, cells carry the store's code themselves (tchbook_cellcode's).
    kernel.run_ok(":clear").await;
    kernel.run_ok("struct Net { width: i32 }").await;
    kernel
        .run_ok("let n = 41_i64;\nlet net = Net { width: 7 };")
        .await;
    let source = kernel.last_cell_source().await;
    assert!(
        source.contains("pub extern \"C\" fn tchbook_variables("),
        "{source}"
    );
    assert!(!source.contains("tchbook_prelude"), "{source}");
    let reply = variables(&mut kernel).await;
    // No prelude to summarise them: each is listed by the type name its store kept.
    assert_eq!(named(&reply, "n")["value"], "i64", "{reply}");
    assert_eq!(named(&reply, "net")["value"], "Net", "{reply}");

    returns_early(&mut kernel, "gone", "worse").await;
    let redefined = kernel.run_ok("struct Net { depth: i64, width: i32 }").await;
    let line = "The type of the variable net was redefined, so was lost.";
    assert!(redefined.stderr().contains(line), "{}", redefined.stderr());
    assert_eq!(kernel.run_ok("n + 1").await.result().as_deref(), Some("42"));
    assert_eq!(
        kernel.execute("net.width").await.reply_status(),
        ReplyStatus::Error
    );
}
