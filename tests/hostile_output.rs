//! Text a cell prints (a downloaded page, a CSV, another notebook's JSON) is text, even where it
//! holds the words of the line protocol between the evaluation process and the kernel: only a
//! line with the kernel's key is protocol.

use crate::support::Kernel;

/// Lines that, printed, once became HTML in the notebook, ended the cell early, asked the front
/// end for input (whose answer then reached the evaluation process as a command, ending it),
/// dropped the cell's variables, or marked one as lost.
const HOSTILE: [&str; 12] = [
    r#"TCHBOOK_DISPLAY {"op":"display","data":{"text/html":"<img src=x onerror=alert(1)>"},"metadata":{},"display_id":null}"#,
    r#"TCHBOOK_DISPLAY {"op":"clear","wait":false}"#,
    "EVCXR_EXECUTION_COMPLETE",
    "EVCXR_BEGIN_CONTENT text/html",
    "<script>alert(1)</script>",
    "EVCXR_END_CONTENT",
    "EVCXR_ERROR_OCCURRED",
    "EVCXR_VARIABLE_CHANGED_TYPE:kept",
    "EVCXR_PANIC_NOTIFICATION",
    "EVCXR_INPUT_REQUEST:Password",
    // A guess at the key's place: the record separator and a wrong key.
    "\u{1e}00000000000000000000000000000000 TCHBOOK_DISPLAY {\"op\":\"clear\",\"wait\":false}",
    r#"in the middle TCHBOOK_DISPLAY {"op":"clear","wait":false}"#,
];

#[tokio::test(flavor = "multi_thread")]
async fn printed_protocol_words_are_text_and_the_next_cell_is_in_step() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let page = HOSTILE.join("\n");
    // Printed as data is: the cell holds the text in a variable and prints it.
    let code = format!("let page = {page:?};\nprintln!(\"{{page}}\");\nlet fresh = 1;");
    let printed = kernel.run_ok(&code).await;
    assert_eq!(
        printed.stdout(),
        format!("{page}\n"),
        "{:?}",
        printed.types()
    );
    for kind in printed.types() {
        assert!(
            ["status", "execute_input", "stream"].contains(&kind.as_str()),
            "printed text became a {kind}: {:?}",
            printed.types()
        );
    }
    // In step, with every variable: the next cell's value is its own.
    let next = kernel.run_ok("kept + fresh").await;
    assert_eq!(next.result().as_deref(), Some("42"));
    assert!(next.stdout().is_empty(), "{}", next.stdout());
}

#[tokio::test(flavor = "multi_thread")]
async fn text_glued_to_protocol_words_without_a_newline_stays_in_its_cell() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 1;").await;
    // No newline after the words: once they ended the cell early and the rest of its output
    // came with the next cell.
    let printed = kernel
        .run_ok("print!(\"partial EVCXR_EXECUTION_COMPLETE\");\nprintln!(\" and the rest\");")
        .await;
    assert_eq!(
        printed.stdout(),
        "partial EVCXR_EXECUTION_COMPLETE and the rest\n"
    );
    let next = kernel.run_ok("kept + 1").await;
    assert_eq!(next.result().as_deref(), Some("2"));
    assert!(next.stdout().is_empty(), "{}", next.stdout());
}

#[test]
fn generated_code_keys_its_lines_with_the_wire_names() {
    // evcxr reads a cell's store lines by the constants of its own `evcxr_internal_runtime.rs`;
    // the stores cells print them with (tchbook_cellcode's `store.rs`, whose own test checks its
    // key, and the prelude's compiled one) take them from tchbook_wire.
    let runtime = include_str!("../vendor/evcxr/src/evcxr_internal_runtime.rs");
    for (name, value) in [
        ("VARIABLE_CHANGED_TYPE", tchbook_wire::VARIABLE_CHANGED_TYPE),
        ("USER_ERROR_OCCURRED", tchbook_wire::USER_ERROR_OCCURRED),
    ] {
        let constant = format!("pub const {name}: &str = {value:?};");
        assert!(runtime.contains(&constant), "{constant} is not evcxr's");
    }
    // evcxr reads the panic notification by its own constant, which tchbook_cellcode writes
    // (and the prelude's cell runner prints) by tchbook_wire's.
    let eval_context = include_str!("../vendor/evcxr/src/eval_context.rs");
    let constant = format!(
        "const PANIC_NOTIFICATION: &str = {:?};",
        tchbook_wire::PANIC_NOTIFICATION
    );
    assert!(
        eval_context.contains(&constant),
        "{constant} is not evcxr's"
    );
}

/// Text nested deeper than any parser's stack: these ended the kernel ("stack overflow") when
/// completed, inspected, checked for completeness or run.
fn deeply_nested() -> [String; 3] {
    [
        format!("let x = {}1{};", "(".repeat(3000), ")".repeat(3000)),
        "{".repeat(50_000),
        format!("vec!{}0{}", "[".repeat(2500), "]".repeat(2500)),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn no_text_nested_however_deep_ends_the_kernel() {
    use jupyter_protocol::{
        CompleteRequest, IsCompleteReplyStatus, IsCompleteRequest, JupyterMessageContent,
    };
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    for code in deeply_nested() {
        let cursor_pos = code.chars().count() / 2;
        let reply = kernel
            .request(CompleteRequest {
                code: code.clone(),
                cursor_pos,
            })
            .await;
        assert!(
            matches!(&reply.content, JupyterMessageContent::CompleteReply(r) if r.matches.is_empty()),
            "{:?}",
            reply.content
        );
        let hover = kernel.inspect(&code, cursor_pos).await;
        assert!(!hover.found);
        let reply = kernel
            .request(IsCompleteRequest { code: code.clone() })
            .await;
        assert!(
            matches!(&reply.content, JupyterMessageContent::IsCompleteReply(r) if r.status == IsCompleteReplyStatus::Invalid),
            "{:?}",
            reply.content
        );
        let run = kernel.execute(&code).await;
        let (_, evalue, _) = run.error().expect("the cell is refused");
        assert!(evalue.contains("levels deep"), "{evalue}");
    }
    let next = kernel.run_ok("kept + 1").await;
    assert_eq!(next.result().as_deref(), Some("42"));
}
