//! Variables between cells: kept in the prelude's compiled store whatever their type, lost when
//! their type is defined again, kept when the cell never imported their type.

use crate::support::Kernel;
use jupyter_protocol::ReplyStatus;

#[tokio::test(flavor = "multi_thread")]
async fn variables_live_in_the_preludes_compiled_store_whatever_their_type() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("struct Point { x: i32 }").await;
    kernel
        .run_ok("let kept = 41;\nlet name = String::from(\"tensor\");\nlet p = Point { x: 1 };")
        .await;
    let source = kernel.last_cell_source().await;
    // The store is the prelude's, compiled once, not a copy of evcxr's in every cell
    // (vendor/README.md, change 14).
    assert!(
        source.contains("pub use ::tchbook_prelude::runtime::variables::*;"),
        "{source}"
    );
    assert!(!source.contains("HashMap"), "{source}");
    assert_eq!(
        kernel
            .run_ok("kept + name.len() as i32 + p.x")
            .await
            .result()
            .as_deref(),
        Some("48")
    );
    // Declared again with another type, a variable is stored as the new type.
    kernel.run_ok("let kept = \"now text\";").await;
    assert_eq!(
        kernel
            .run_ok("kept.len() + name.len()")
            .await
            .result()
            .as_deref(),
        Some("14")
    );
    // A cell that names no variable has no store code (change 15); the variables stay stored,
    // and one named only inside a format string is loaded for it.
    assert_eq!(kernel.run_ok("1 + 1").await.result().as_deref(), Some("2"));
    let source = kernel.last_cell_source().await;
    assert!(!source.contains("take_variable"), "{source}");
    assert_eq!(
        kernel
            .run_ok("format!(\"{kept}, {}\", p.x)")
            .await
            .result()
            .as_deref(),
        Some("\"now text, 1\"")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_type_defined_again_with_other_fields_loses_its_variables_instead_of_misreading_them() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("struct Net { width: i32 }\nimpl Net { fn width(&self) -> i32 { self.width } }")
        .await;
    kernel
        .run_ok("let net = Net { width: 7 };\nlet nets = vec![Net { width: 1 }];\nlet kept = 41;")
        .await;
    // The same definition run again (a notebook run from the top) keeps them.
    kernel
        .run_ok("struct Net { width: i32 }\nimpl Net { fn width(&self) -> i32 { self.width } }")
        .await;
    assert_eq!(
        kernel
            .run_ok("net.width() + nets[0].width()")
            .await
            .result()
            .as_deref(),
        Some("8")
    );
    // A field more: every cell's crate has the same name, so the new `Net` has the old one's
    // `TypeId`, and the stored bytes read as the new fields were garbage (or a crash).
    let redefined = kernel
        .run_ok("struct Net { depth: i64, width: i32 }\nimpl Net { fn width(&self) -> i32 { self.width } }")
        .await;
    for name in ["net", "nets"] {
        let line = format!("The type of the variable {name} was redefined, so was lost.");
        assert!(redefined.stderr().contains(&line), "{}", redefined.stderr());
    }
    assert!(
        !redefined.stderr().contains("kept"),
        "{}",
        redefined.stderr()
    );
    let gone = kernel.execute("net.width()").await;
    assert_eq!(gone.reply_status(), ReplyStatus::Error);
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42")
    );
    assert_eq!(
        kernel
            .run_ok("let net = Net { depth: 2, width: 5 };\nnet.width() as i64 + net.depth")
            .await
            .result()
            .as_deref(),
        Some("7")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn variables_keep_types_the_cell_never_imported_and_closures_are_refused_by_name() {
    let mut kernel = Kernel::start().await;
    // rustc names these `NonZero<u8>` and `Result<String, VarError>` unless asked for full
    // paths; stored under those names, the next cell could not load them.
    kernel
        .run_ok(
            "let n = std::num::NonZeroU8::new(3).unwrap();\nlet home = std::env::var(\"PATH\");",
        )
        .await;
    assert_eq!(kernel.run_ok("n").await.result().as_deref(), Some("3"));
    assert_eq!(
        kernel.run_ok("home.is_ok()").await.result().as_deref(),
        Some("true")
    );
    // A tuple pattern, a tensor and an integer literal's default type.
    kernel
        .run_ok("let (t, k) = (Tensor::ones(&[2], (Kind::Float, Device::Cpu)), 7);")
        .await;
    assert_eq!(
        kernel
            .run_ok("t.sum(Kind::Float).double_value(&[]) + f64::from(k)")
            .await
            .result()
            .as_deref(),
        Some("9.0")
    );
    let closure = kernel.execute("let f = |x: i32| x + 1;").await;
    assert_eq!(closure.reply_status(), ReplyStatus::Error);
    let (_, evalue, _) = closure.error().unwrap();
    assert!(evalue.contains("`f` is a closure"), "{evalue}");
    // The kernel goes on, with its variables.
    assert_eq!(
        kernel.run_ok("n.get() + 1").await.result().as_deref(),
        Some("4")
    );
}

/// A cell that defines variables is built while rustc probes their types (vendor/README.md):
/// the build stores each under its inferred type, and later cells load it by the probe's name.
#[tokio::test(flavor = "multi_thread")]
async fn variables_built_beside_their_type_probe_load_in_later_cells() {
    let mut kernel = Kernel::start().await;
    // A literal whose type a later line decides; a variable moved away inside the cell.
    let cell = kernel
        .run_ok("let n = 5;\nlet wide: i64 = n;\nlet v = vec![1, 2];\nlet total: i32 = v.into_iter().sum();\ntotal")
        .await;
    assert_eq!(cell.result().as_deref(), Some("3"));
    assert_eq!(
        kernel
            .run_ok("n * wide + i64::from(total)")
            .await
            .result()
            .as_deref(),
        Some("28")
    );
    let moved = kernel.execute("v.len()").await;
    assert_eq!(moved.reply_status(), ReplyStatus::Error, "`v` was moved");
    // Redefined with another type.
    kernel.run_ok("let n = String::from(\"five\");").await;
    assert_eq!(
        kernel.run_ok("n.len()").await.result().as_deref(),
        Some("4")
    );
    // A cell with an error of its own reports it, and keeps what the kernel had.
    let failed = kernel.execute("let k = 1;\nlet j: u8 = k + \"x\";").await;
    assert_eq!(failed.reply_status(), ReplyStatus::Error);
    let (ename, _, _) = failed.error().unwrap();
    assert_eq!(ename, "CompilationError");
    assert_eq!(
        kernel.run_ok("wide + 1").await.result().as_deref(),
        Some("6")
    );
}
