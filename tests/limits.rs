//! Limits a long notebook meets: huge output.

use crate::support::Kernel;
use std::time::{Duration, Instant};

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
