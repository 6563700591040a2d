//! What a cell shows and evcxr's commands: tensors without `use` or `:dep`, a unit value shows
//! nothing, `:timeit`, `:help`, `:fmt` and `:types`.

use crate::support::Kernel;

#[tokio::test(flavor = "multi_thread")]
async fn tensors_work_without_use_or_dep() {
    let mut kernel = Kernel::start().await;
    let execution = kernel
        .run_ok("let t = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).to_device(Device::Cpu);\nlet s = tch::Tensor::sum(&t, Kind::Float);\ns.double_value(&[])")
        .await;
    assert_eq!(execution.result().as_deref(), Some("6.0"));
    kernel.run_ok("let linear = nn::linear(nn::VarStore::new(Device::Cpu).root(), 2, 3, Default::default());").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_ending_in_unit_shows_no_value() {
    let mut kernel = Kernel::start().await;
    let execution = kernel
        .run_ok("let n = 3;\nif n > 2 { println!(\"big\") } else { println!(\"small\") }")
        .await;
    assert_eq!(execution.stdout(), "big\n");
    assert_eq!(
        execution.types(),
        ["status", "execute_input", "stream", "status"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn timeit_reports_mean_and_deviation_per_loop() {
    let mut kernel = Kernel::start().await;
    let execution = kernel
        .run_ok(":timeit -n 10 -r 3 (0..1000u64).sum::<u64>()")
        .await;
    assert!(
        execution.result().is_none(),
        "no value after the timing line"
    );
    let out = execution.stdout();
    assert!(
        out.contains("per loop (mean ± std. dev. of 3 runs, 10 loops each)"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn help_documents_evcxr_commands_and_timeit() {
    let mut kernel = Kernel::start().await;
    let execution = kernel.run_ok(":help").await;
    let text = execution.result().unwrap();
    for command in [":dep", ":vars", ":timing", ":timeit", ":help"] {
        assert!(
            text.contains(command),
            "{command} missing from :help:\n{text}"
        );
    }
    kernel.run_ok("let listed = 5;").await;
    let vars = kernel.run_ok(":vars").await;
    assert!(vars.result().unwrap().contains("listed"));
}

#[tokio::test(flavor = "multi_thread")]
async fn fmt_and_types_commands_shape_how_std_values_are_shown() {
    let mut kernel = Kernel::start().await;
    assert_eq!(
        kernel.run_ok("vec![1, 2]").await.result().as_deref(),
        Some("[1, 2]")
    );
    kernel.run_ok(":fmt {:#?}").await;
    assert_eq!(
        kernel.run_ok("vec![1, 2]").await.result().as_deref(),
        Some("[\n    1,\n    2,\n]")
    );
    kernel.run_ok(":fmt {:?}").await;
    kernel.run_ok(":types").await;
    assert_eq!(
        kernel.run_ok("5u8").await.result().as_deref(),
        Some(": u8 = 5")
    );
    kernel.run_ok(":types").await;
    assert_eq!(kernel.run_ok("5u8").await.result().as_deref(), Some("5"));
    // A format the prelude cannot follow for std values says so.
    let note = kernel.run_ok(":fmt {}").await;
    assert!(
        note.result().unwrap_or_default().contains("keep {:?}"),
        "{:?}",
        note.result()
    );
}
