//! Live rich output while a cell runs, and partial lines.

use crate::support::{Kernel, STARTUP};
use jupyter_protocol::{ExecuteRequest, JupyterMessageContent, MediaType};
use std::time::{Duration, Instant};

/// Reads iopub for `request` until idle, noting when each message arrived.
async fn timed_iopub(
    kernel: &mut Kernel,
    msg_id: &str,
) -> Vec<(Instant, jupyter_protocol::JupyterMessage)> {
    let mut seen = Vec::new();
    loop {
        let message = kernel.next_iopub(STARTUP).await;
        if message.parent_header.as_ref().map(|p| p.msg_id.as_str()) != Some(msg_id) {
            continue;
        }
        let idle = matches!(&message.content, JupyterMessageContent::Status(s)
            if s.execution_state == jupyter_protocol::ExecutionState::Idle);
        seen.push((Instant::now(), message));
        if idle {
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn display_update_and_clear_arrive_live_and_in_order_while_the_cell_runs() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    // The protocol's lines as a cell that knows the kernel's key writes them (the prelude's
    // display calls write the same lines).
    let code = r#"
fn pause() { std::thread::sleep(std::time::Duration::from_millis(700)); }
fn protocol(line: String) { println!("\u{1e}{} {line}", std::env::var("TCHBOOK_LINE_KEY").unwrap()); }
protocol(format!("TCHBOOK_DISPLAY {{\"op\":\"display\",\"data\":{{\"text/html\":\"<b>epoch 1</b>\",\"text/plain\":\"epoch 1\"}},\"metadata\":{{}},\"display_id\":\"progress\"}}"));
pause();
protocol(format!("TCHBOOK_DISPLAY {{\"op\":\"update\",\"data\":{{\"text/html\":\"<b>epoch 2</b>\"}},\"metadata\":{{}},\"display_id\":\"progress\"}}"));
pause();
protocol(format!("TCHBOOK_DISPLAY {{\"op\":\"clear\",\"wait\":true}}"));
protocol(format!("TCHBOOK_DISPLAY {{\"op\":\"display\",\"data\":{{\"image/svg+xml\":\"<svg/>\",\"text/markdown\":\"**done**\",\"text/latex\":\"$x$\",\"application/json\":{{\"loss\":[3,2,1]}},\"image/png\":\"iVBORw0KGgo=\"}},\"metadata\":{{}},\"display_id\":null}}"));
pause();
"#;
    let sent = kernel.send_shell(ExecuteRequest::new(code.into())).await;
    let iopub = timed_iopub(&mut kernel, &sent.header.msg_id).await;
    let reply = kernel.shell_reply(STARTUP).await;
    let JupyterMessageContent::ExecuteReply(reply) = &reply.content else {
        panic!()
    };
    assert_eq!(reply.status, jupyter_protocol::ReplyStatus::Ok);
    let types: Vec<_> = iopub
        .iter()
        .map(|(_, m)| m.header.msg_type.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "status",
            "execute_input",
            "display_data",
            "update_display_data",
            "clear_output",
            "display_data",
            "status"
        ]
    );
    // Live: the first display came well before the cell ended (idle).
    let first = iopub[2].0;
    let idle = iopub.last().unwrap().0;
    assert!(
        idle - first > Duration::from_millis(1500),
        "display was not live: {:?}",
        idle - first
    );
    match &iopub[2].1.content {
        JupyterMessageContent::DisplayData(d) => {
            assert_eq!(
                d.transient.as_ref().unwrap().display_id.as_deref(),
                Some("progress")
            );
        }
        other => panic!("{other:?}"),
    }
    match &iopub[3].1.content {
        JupyterMessageContent::UpdateDisplayData(d) => {
            assert_eq!(d.transient.display_id.as_deref(), Some("progress"));
            assert!(
                d.data
                    .content
                    .iter()
                    .any(|m| matches!(m, MediaType::Html(h) if h.contains("epoch 2")))
            );
        }
        other => panic!("{other:?}"),
    }
    match &iopub[4].1.content {
        JupyterMessageContent::ClearOutput(c) => assert!(c.wait),
        other => panic!("{other:?}"),
    }
    match &iopub[5].1.content {
        JupyterMessageContent::DisplayData(d) => {
            let kinds: Vec<_> = d
                .data
                .content
                .iter()
                .map(|m| m.mime_type().to_owned())
                .collect();
            for kind in [
                "image/svg+xml",
                "text/markdown",
                "text/latex",
                "application/json",
                "image/png",
            ] {
                assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
            }
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn print_without_newline_reaches_the_front_end_before_the_cell_ends() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let code = "print!(\"progress 50%\");\nstd::thread::sleep(std::time::Duration::from_millis(1500));\nprintln!(\" done\");";
    let sent = kernel.send_shell(ExecuteRequest::new(code.into())).await;
    let iopub = timed_iopub(&mut kernel, &sent.header.msg_id).await;
    let idle = iopub.last().unwrap().0;
    let (arrived, _) = iopub
        .iter()
        .find(|(_, m)| matches!(&m.content, JupyterMessageContent::StreamContent(s) if s.text.contains("progress 50%")))
        .expect("no stream with the partial line");
    assert!(
        idle - *arrived > Duration::from_millis(1000),
        "the partial line came late: {:?}",
        idle - *arrived
    );
    let text: String = iopub
        .iter()
        .filter_map(|(_, m)| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "progress 50% done\n");
}

/// Runs `code` in a fresh kernel (after a first cell, so that start-up is over) and returns
/// the stream messages it published, each with how long before the cell's idle it arrived.
async fn streams_before_idle(code: &str) -> Vec<(Duration, String)> {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    let sent = kernel.send_shell(ExecuteRequest::new(code.into())).await;
    let iopub = timed_iopub(&mut kernel, &sent.header.msg_id).await;
    let idle = iopub.last().unwrap().0;
    iopub
        .iter()
        .filter_map(|(at, m)| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some((idle - *at, s.text.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn lines_printed_in_a_burst_arrive_as_one_stream_message_and_a_pause_publishes_them() {
    // A loop printing 20 lines a few ms apart, as a training loop's report does, then a pause:
    // one message for the burst (a front end saving the notebook keeps one output, not 20),
    // and that message is seen during the pause, not at the cell's end.
    let streams = streams_before_idle("for i in 0..20 {\n    println!(\"line {i}\");\n    std::thread::sleep(std::time::Duration::from_millis(2));\n}\nstd::thread::sleep(std::time::Duration::from_millis(1000));\nprintln!(\"last\");").await;
    let texts: Vec<&str> = streams.iter().map(|(_, text)| text.as_str()).collect();
    let burst: String = (0..20).map(|i| format!("line {i}\n")).collect();
    // A loaded machine may pause the loop past the batching gap once or twice.
    assert!(
        texts.len() <= 4,
        "the burst came as {} messages: {texts:?}",
        texts.len()
    );
    assert_eq!(texts.concat(), format!("{burst}last\n"));
    let (burst_before_idle, _) = &streams[streams.len() - 2];
    assert!(
        *burst_before_idle > Duration::from_millis(700),
        "the burst was held back until the cell's end: {burst_before_idle:?} before idle"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_printing_without_pause_is_seen_while_it_runs() {
    // A line every 5 ms for 1.5 s never leaves a gap to end a batch: text still goes out at
    // least every 200 ms.
    let streams = streams_before_idle("for i in 0..300 {\n    println!(\"tick {i}\");\n    std::thread::sleep(std::time::Duration::from_millis(5));\n}").await;
    let text: String = streams.iter().map(|(_, text)| text.as_str()).collect();
    let expected: String = (0..300).map(|i| format!("tick {i}\n")).collect();
    assert_eq!(text, expected);
    assert!(
        streams.len() < 150,
        "{} messages for 300 lines",
        streams.len()
    );
    let (first_before_idle, _) = &streams[0];
    assert!(
        *first_before_idle > Duration::from_millis(1000),
        "nothing was seen until {first_before_idle:?} before the end"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_line_on_stderr_arrives_after_the_stdout_printed_before_it() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    // Each round prints to stdout, then at once to stderr, as a cell that reports a problem
    // does. The two streams used to reach the front end through two threads each (the
    // prelude's pump and evcxr's readers), so a round could arrive stderr first.
    let code = "for i in 0..30 {\n    print!(\"out {i}\");\n    println!(\" done\");\n    eprintln!(\"err {i}\");\n    std::thread::sleep(std::time::Duration::from_millis(15));\n}";
    let run = kernel.run_ok(code).await;
    // As a front end shows them: consecutive text of one stream joined, then read by line.
    let mut shown: Vec<(&str, String)> = Vec::new();
    for stream in run.iopub.iter().filter_map(|m| match &m.content {
        JupyterMessageContent::StreamContent(s) => Some(s),
        _ => None,
    }) {
        let name = match stream.name {
            jupyter_protocol::Stdio::Stderr => "stderr",
            _ => "stdout",
        };
        match shown.last_mut() {
            Some((last, text)) if *last == name => text.push_str(&stream.text),
            _ => shown.push((name, stream.text.clone())),
        }
    }
    let lines: Vec<String> = shown
        .iter()
        .flat_map(|(name, text)| text.lines().map(move |l| format!("{name} {l}")))
        .collect();
    let expected: Vec<String> = (0..30)
        .flat_map(|i| [format!("stdout out {i} done"), format!("stderr err {i}")])
        .collect();
    assert_eq!(lines, expected, "as shown: {shown:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_that_ends_on_stderr_keeps_its_last_line() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    // The cell's end (evcxr's marker, on stdout) follows the last stderr line at once; that
    // line must not slip behind it into the next cell's output. The long stdout line keeps the
    // pump busy, so that it finds stderr and the marker ready together; and the pump must not
    // then sit waiting on stderr, or the next cell's long line (more than the pipe holds)
    // blocks for ever.
    for i in 0..10 {
        let code = format!(
            "println!(\"{{}}\", \"y\".repeat(200_000));\neprint!(\"err {i}\\nno newline\");"
        );
        // A stuck pump fails here in two minutes rather than at the start-up allowance.
        let run = kernel
            .execute_with(ExecuteRequest::new(code), Duration::from_secs(120))
            .await;
        assert_eq!(run.stdout().len(), 200_001, "cell {i}");
        assert_eq!(run.stderr(), format!("err {i}\nno newline"), "cell {i}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_ending_without_a_newline_keeps_its_text() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    // Each cell's last text has no newline: it used to arrive with the next cell.
    for i in 0..20 {
        let cell = kernel.run_ok(&format!("print!(\"<{i}>\");")).await;
        assert_eq!(cell.stdout(), format!("<{i}>"), "cell {i}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_printed_without_newlines_shows_while_the_cell_runs() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("1").await;
    // A dot every 20 ms for 2 s, no newline: it showed nothing until the cell ended.
    let code = "for _ in 0..100 { print!(\".\"); std::thread::sleep(std::time::Duration::from_millis(20)); }";
    let sent = kernel.send_shell(ExecuteRequest::new(code.into())).await;
    let iopub = timed_iopub(&mut kernel, &sent.header.msg_id).await;
    let _ = kernel.shell_reply(STARTUP).await;
    let idle = iopub.last().unwrap().0;
    let streams: Vec<_> = iopub
        .iter()
        .filter_map(|(at, m)| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some((*at, s.text.clone())),
            _ => None,
        })
        .collect();
    let text: String = streams.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(text, ".".repeat(100));
    let first = streams.first().unwrap().0;
    assert!(
        idle - first > Duration::from_millis(1000),
        "the dots came only at the end: first {:?} before idle",
        idle - first
    );
    assert!(streams.len() >= 3, "{} stream messages", streams.len());
}

/// Every image a plot shows carries its alt text in the output's metadata, where nbconvert's
/// HTML (`<img alt>`) and screen readers look: the live frames (`display_data`,
/// `update_display_data`) and a cell's final value (`execute_result`) alike.
#[tokio::test(flavor = "multi_thread")]
async fn every_image_of_a_plot_carries_alt_text_live_and_as_the_final_value() {
    let mut kernel = Kernel::start().await;
    let run = kernel
        .run_ok(
            "let mut plot = LossPlot::new(\"alt check\");\n\
             for step in 1..=3 { plot.push(step as f64, 1.0 / step as f64); }\n\
             plot.finish();\n\
             plot",
        )
        .await;
    let mut kinds = Vec::new();
    for message in &run.iopub {
        let (data, metadata) = match &message.content {
            JupyterMessageContent::DisplayData(d) => (&d.data, &d.metadata),
            JupyterMessageContent::UpdateDisplayData(d) => (&d.data, &d.metadata),
            JupyterMessageContent::ExecuteResult(r) => (&r.data, &r.metadata),
            _ => continue,
        };
        let data = serde_json::to_value(data).unwrap();
        let images: Vec<&String> = (data.as_object().unwrap().keys())
            .filter(|mime| mime.starts_with("image/"))
            .collect();
        assert_eq!(images, ["image/png"], "{}", message.header.msg_type);
        // Each frame says what it shows: a live one the points pushed so far.
        let alt = metadata["image/png"]["alt"].as_str().unwrap_or_default();
        let start = "Line plot \"alt check\" of loss against epoch: loss over epoch 1 to ";
        assert!(alt.starts_with(start), "{}: {alt}", message.header.msg_type);
        if message.header.msg_type == "execute_result" {
            assert_eq!(
                alt,
                format!("{start}3 (3 points) goes from 1.0000 to 0.3333, lowest 0.3333.")
            );
        }
        // The metadata describes the output's own MIME types, and travels beside them, never
        // as one more.
        let metadata_keys: Vec<&String> = metadata.keys().collect();
        assert!(
            metadata_keys.iter().all(|k| data.get(k.as_str()).is_some()),
            "{}: {metadata_keys:?}",
            message.header.msg_type
        );
        kinds.push(message.header.msg_type.clone());
    }
    assert!(
        ["display_data", "update_display_data", "execute_result"]
            .iter()
            .all(|kind| kinds.iter().any(|k| k == kind)),
        "{kinds:?}"
    );
}
