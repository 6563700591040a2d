//! Limits a long notebook meets: memory it cannot have, thousands of cells, huge output.

use crate::support::{Kernel, children};
use std::time::Instant;

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

fn map_count(pid: i32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn many_cells_do_not_grow_the_evaluation_process_maps() {
    let mut kernel = Kernel::start().await;
    for i in 0..5 {
        kernel.run_ok(&format!("let warm_{i} = {i};")).await;
    }
    let evaluation = *children(kernel.pid())
        .first()
        .expect("no evaluation process");
    let before = map_count(evaluation);
    const CELLS: usize = 2000;
    for i in 0..CELLS {
        // Cells of both kinds: with and without a variable. Every stored variable makes later
        // cells longer (evcxr loads them all), so one cell in ten defines one: 200 in all.
        if i % 10 == 0 {
            kernel.run_ok(&format!("let v_{i} = {i};")).await;
        } else {
            kernel.run_ok(&format!("{i} + 1")).await;
        }
    }
    let after = map_count(evaluation);
    let per_cell = (after as f64 - before as f64) / CELLS as f64;
    eprintln!("{before} maps before, {after} after {CELLS} cells: {per_cell:.2} per cell");
    // Each cell's library stays loaded (src/cellbuild/link/mod.rs says why): its two segments
    // are the most a cell may leave behind.
    assert!(
        per_cell <= 2.05,
        "{before} maps before, {after} after {CELLS} cells: {per_cell:.2} per cell"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_50_mb_line_arrives_whole_and_no_slower_than_the_same_bytes_in_short_lines() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let line = \"x\".repeat(50 << 20);").await;
    // The same bytes as 1 KiB lines, side by side in one kernel: a ratio, not a time limit.
    let started = Instant::now();
    let run = kernel
        .run_ok("for chunk in line.as_bytes().chunks(1023) { println!(\"{}\", std::str::from_utf8(chunk).unwrap()); }")
        .await;
    let short_lines = started.elapsed();
    assert!(run.stdout().len() > 50 << 20);
    let started = Instant::now();
    let run = kernel.run_ok("println!(\"{line}\");").await;
    let one_line = started.elapsed();
    eprintln!("one 50 MB line: {one_line:.2?}; the same bytes in 1 KiB lines: {short_lines:.2?}");
    assert_eq!(run.stdout().len(), (50 << 20) + 1);
    // Before the pump stopped rescanning the pending line: 26 s against 2.8 s (9×); after it:
    // 3.6 s against 9.7 s.
    assert!(
        one_line < short_lines * 2,
        "one line {one_line:?}, short lines {short_lines:?}"
    );
}
