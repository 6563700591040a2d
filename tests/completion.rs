//! Completion and hover as a front end sees them: the first Tab of a fresh kernel answers
//! with the expected items (JupyterLab drops a reply slower than one second, and rust-analyzer
//! needs several to warm up), public items only, each with its kind; whatever rust-analyzer
//! does with odd input, the notebook's variables stay.

use crate::support::{Client, Kernel};
use jupyter_protocol::{CompleteReply, CompleteRequest, JupyterMessageContent};
use std::time::{Duration, Instant};

/// Completes at the end of `code`.
pub(crate) async fn complete(kernel: &mut Client, code: &str) -> CompleteReply {
    let reply = kernel
        .request(CompleteRequest {
            code: code.into(),
            cursor_pos: code.chars().count(),
        })
        .await;
    let JupyterMessageContent::CompleteReply(reply) = reply.content else {
        panic!("{reply:?}")
    };
    reply
}

fn kind_of(reply: &CompleteReply, text: &str) -> Option<String> {
    reply.metadata["_jupyter_types_experimental"]
        .as_array()?
        .iter()
        .find(|t| t["text"] == text)
        .and_then(|t| t["type"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread")]
async fn first_completion_of_a_fresh_kernel_offers_public_members_with_kinds() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let v = vec![1, 2, 3];\nlet x = Tensor::ones([2, 2], (Kind::Float, Device::Cpu));")
        .await;
    let reply = complete(&mut kernel, "v.le").await;
    assert!(
        reply.matches.iter().any(|m| m == "len"),
        "{:?}",
        reply.matches
    );
    assert!(
        reply.matches.iter().all(|m| m.starts_with("le")),
        "{:?}",
        reply.matches
    );
    assert_eq!((reply.cursor_start, reply.cursor_end), (2, 4));
    assert_eq!(kind_of(&reply, "len").as_deref(), Some("function"));

    let reply = complete(&mut kernel, "x.mat").await;
    assert!(
        reply.matches.iter().any(|m| m == "matmul"),
        "{:?}",
        reply.matches
    );

    // Private fields of std and tch are not offered (`Vec`'s `buf`, `Tensor`'s `c_tensor`).
    for (code, private) in [("v.", "buf"), ("x.", "c_tensor")] {
        let reply = complete(&mut kernel, code).await;
        assert!(!reply.matches.is_empty(), "{code}");
        assert!(
            !reply.matches.iter().any(|m| m == private),
            "{code}: {:?}",
            reply.matches
        );
    }
    // A name being typed: the notebook's own names and the prelude's.
    let reply = complete(&mut kernel, "Ten").await;
    assert!(
        reply.matches.iter().any(|m| m == "Tensor"),
        "{:?}",
        reply.matches
    );
    assert_eq!(kind_of(&reply, "Tensor").as_deref(), Some("class"));
}

#[tokio::test(flavor = "multi_thread")]
async fn warm_completion_comes_from_rust_analyzer_for_what_the_index_cannot_know() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let words = vec![String::from(\"a\")];")
        .await;
    // A method call's result: only rust-analyzer knows its type. Cold, nothing is offered; once
    // rust-analyzer has warmed up (in the background), `trim` is.
    let code = "words.first().unwrap().tri";
    let started = Instant::now();
    loop {
        let reply = complete(&mut kernel, code).await;
        if reply.matches.iter().any(|m| m == "trim") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "rust-analyzer never answered: {:?}",
            reply.matches
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn odd_characters_in_completed_cells_never_cost_the_notebooks_variables() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = vec![1, 2, 3];").await;
    // The inputs that panicked rust-analyzer on the engine thread (ra_ap_hir 0.0.347, "failed to
    // unify type owners"), also inside string literals, and bidi marks.
    let inputs = [
        "kept.$",
        "kept.@",
        "kept.`",
        "kept.\\",
        "kept.\u{200b}",
        "$kept.",
        "@kept.",
        "`kept.",
        "let s = \"$\"; kept.",
        "let s = \"\u{2066}\"; kept.",
        "let s = \"\u{202e}x\"; kept.",
        "kept\u{2066}.",
        "\\kept.",
    ];
    // Until rust-analyzer is warm the index answers; keep asking for a while so rust-analyzer
    // itself sees every input too.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(25) {
        for code in inputs {
            complete(&mut kernel, code).await;
        }
    }
    assert_eq!(
        kernel.run_ok("kept.len()").await.result().as_deref(),
        Some("3"),
        "the variables survive"
    );
    let reply = complete(&mut kernel, "kept.le").await;
    assert!(
        reply.matches.iter().any(|m| m == "len"),
        "{:?}",
        reply.matches
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hover_on_a_prelude_type_shows_its_documentation_without_private_fields() {
    let mut kernel = Kernel::start().await;
    let code = "LossPlot";
    let reply = kernel.inspect(code, 4).await;
    assert!(reply.found, "{reply:?}");
    let text = serde_json::to_string(&reply.data).unwrap();
    assert!(text.contains("LossPlot"), "{text}");
    assert!(
        !text.contains("title: String"),
        "private field shown: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_offsets_count_code_points_around_non_ascii_text() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("fn compute_thing(x: i32) -> i32 { x }\nlet données_é = 1;")
        .await;
    // The cursor counts code points: 日 and é are several bytes but one code point each.
    let code = "let s = \"日本\"; let t = données_é + compute_th";
    let cursor = code.chars().count();
    let reply = complete(&mut kernel, code).await;
    assert!(
        reply.matches.iter().any(|m| m == "compute_thing"),
        "{:?}",
        reply.matches
    );
    assert!(
        reply.matches.iter().all(|m| !m.contains('(')),
        "bare names: {:?}",
        reply.matches
    );
    assert_eq!(reply.cursor_end, cursor);
    assert_eq!(
        reply.cursor_start,
        cursor - "compute_th".len(),
        "the replaced text is `compute_th`"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_shows_the_type_of_a_variable() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let numbers: Vec<u32> = vec![1, 2];").await;
    let code = "numbers";
    let reply = kernel.inspect(code, 3).await;
    assert!(reply.found, "{reply:?}");
    let text = serde_json::to_string(&reply.data).unwrap();
    assert!(text.contains("Vec<u32>"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_line_is_completed_with_commands_and_the_code_after_it_with_rust() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let numbers: Vec<u32> = vec![1, 2];").await;
    // Commands come before a cell's Rust (evcxr reads none after it).
    let code = ":timing\n:de";
    let reply = complete(&mut kernel, code).await;
    assert!(
        reply.matches.iter().any(|m| m == ":dep"),
        "{:?}",
        reply.matches
    );
    assert!(
        reply.matches.iter().all(|m| m.starts_with(":de")),
        "{:?}",
        reply.matches
    );
    let start = code.chars().count() - ":de".len();
    assert_eq!((reply.cursor_start, reply.cursor_end), (start, start + 3));
    assert_eq!(kind_of(&reply, ":dep").as_deref(), Some("magic"));

    // Rust below a command line is Rust's to complete.
    let reply = complete(&mut kernel, ":timing\nnumbers.le").await;
    assert!(
        reply.matches.iter().any(|m| m == "len"),
        "{:?}",
        reply.matches
    );
}
