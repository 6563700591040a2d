//! Limits a long notebook meets: memory it cannot have, huge output.

use crate::support::Kernel;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn out_of_memory_is_one_short_line_at_the_cell_line_and_variables_are_kept() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok("let kept = Tensor::ones([3], (Kind::Float, Device::Cpu));\nlet n = 5;")
        .await;
    // 16 TiB: more than any machine running this has, so the allocator refuses it.
    let oom = kernel
        .execute(
            "let small = 1;\n\
             let huge = Tensor::zeros([1i64 << 42], (Kind::Float, Device::Cpu));\n\
             huge.numel()",
        )
        .await;
    let (ename, evalue, traceback) = oom.error().expect("the allocation failed");
    assert_eq!(ename, "OutOfMemoryError", "{evalue}");
    assert!(evalue.contains("16.0 TiB"), "{}", evalue);
    assert!(evalue.contains("available"), "{}", evalue);
    let first = &traceback[0];
    assert!(first.len() < 300, "the first line stays short: {first}");
    assert!(traceback[1].contains("at cell line 2"), "{:?}", traceback);
    // Anything long (libtorch's C++ frames, when it gives them) comes last, after the short
    // lines, for those who want it.
    for line in &traceback[..traceback.len() - 1] {
        assert!(line.len() < 400, "{line}");
    }
    assert_eq!(
        kernel
            .run_ok("kept.sum(Kind::Float).double_value(&[]) + n as f64")
            .await
            .result()
            .as_deref(),
        Some("8.0")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_50_mb_line_arrives_whole_and_fast() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let line = \"x\".repeat(50 << 20);").await;
    let started = Instant::now();
    let run = kernel.run_ok("println!(\"{line}\");").await;
    let took = started.elapsed();
    assert_eq!(run.stdout().len(), (50 << 20) + 1);
    // 26 s before the pump stopped rescanning the pending line; ~3 s for the same bytes in
    // 1 KiB lines.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}
