//! The evaluation process: the prelude's compiled runner, the kernel's allocator, and what a
//! crash (a segfault, an abort, a failed allocation, a closed stdout) leaves: a fresh process and
//! the lost variables named.

use crate::support::Kernel;
use jupyter_protocol::ReplyStatus;

#[tokio::test(flavor = "multi_thread")]
async fn cells_run_through_the_preludes_compiled_runner_which_reports_panics_and_flushes() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let execution = kernel
        .execute("print!(\"half a line\");\nlet v: Vec<u8> = Vec::new();\nlet y = v[1];")
        .await;
    assert_eq!(execution.reply_status(), ReplyStatus::Error);
    assert_eq!(execution.error().unwrap().0, "panic");
    assert!(
        execution.stdout().contains("half a line"),
        "{}",
        execution.stdout()
    );
    let source = kernel.last_cell_source().await;
    // The catching, the panic line and the flush are compiled once, in the prelude, not in
    // every cell (vendor/README.md, change 13).
    assert!(
        source.contains("::tchbook_prelude::runtime::run_cell(::std::boxed::Box::new(||{"),
        "{source}"
    );
    assert!(!source.contains("catch_unwind"), "{source}");
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn libtorch_in_the_evaluation_process_allocates_through_the_kernels_allocator() {
    let mut kernel = Kernel::start().await;
    // The dynamic linker binds libtorch's malloc (and a cell's) to the first object that defines
    // it: the kernel's binary, which defines and exports mimalloc's, not glibc. dladdr names the
    // object a symbol's address lies in.
    kernel
        .run_ok(
            r#"#[repr(C)]
struct DlInfo { fname: *const std::ffi::c_char, fbase: *mut std::ffi::c_void,
                sname: *const std::ffi::c_char, saddr: *mut std::ffi::c_void }
unsafe extern "C" {
    fn dlsym(handle: *mut std::ffi::c_void, name: *const std::ffi::c_char) -> *mut std::ffi::c_void;
    fn dladdr(addr: *const std::ffi::c_void, info: *mut DlInfo) -> i32;
}"#,
        )
        .await;
    let code = r#"{
        let _tensor = Tensor::zeros([1 << 20], (Kind::Float, Device::Cpu));
        let mut info = DlInfo { fname: std::ptr::null(), fbase: std::ptr::null_mut(),
                                sname: std::ptr::null(), saddr: std::ptr::null_mut() };
        let found = unsafe { dladdr(dlsym(std::ptr::null_mut(), c"malloc".as_ptr()), &mut info) };
        assert!(found != 0 && !info.fname.is_null());
        let object = unsafe { std::ffi::CStr::from_ptr(info.fname) }.to_string_lossy().into_owned();
        let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
        let named = std::fs::canonicalize(&object).unwrap_or_default();
        (named == exe, object.contains("libc.so"))
    }"#;
    assert_eq!(
        kernel.run_ok(code).await.result().as_deref(),
        Some("(true, false)"),
        "malloc in the evaluation process should be the kernel binary's"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn segfault_restarts_the_evaluation_process_and_names_the_lost_variables() {
    let mut kernel = Kernel::start().await;
    kernel
        .run_ok(
            "let survivor_a = 1;\nlet survivor_b = String::from(\"b\");\nfn helper() -> i32 { 7 }",
        )
        .await;
    let execution = kernel
        .execute("unsafe { std::ptr::write_volatile(16usize as *mut u64, 1); }")
        .await;
    assert_eq!(execution.reply_status(), ReplyStatus::Error);
    let (ename, evalue, _) = execution.error().unwrap();
    assert_eq!(ename, "EvaluationProcessDied");
    assert!(
        evalue.contains("survivor_a") && evalue.contains("survivor_b"),
        "{evalue}"
    );
    // Items survive; the new process works and has the prelude again.
    assert_eq!(
        kernel.run_ok("helper()").await.result().as_deref(),
        Some("7")
    );
    kernel
        .run_ok("let t = Tensor::zeros(&[2], (Kind::Float, Device::Cpu));")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_restarts_the_evaluation_process() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let before_abort = 3;").await;
    let execution = kernel.execute("std::process::abort();").await;
    let (ename, evalue, _) = execution.error().unwrap();
    assert_eq!(ename, "EvaluationProcessDied");
    assert!(evalue.contains("before_abort"), "{evalue}");
    assert_eq!(kernel.run_ok("1 + 2").await.result().as_deref(), Some("3"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_allocation_is_a_memory_error_that_says_why_variables_went_and_how_to_keep_them() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let before_oom = 3;").await;
    // 2^60 bytes: more than any machine has, refused by the allocator at once.
    let execution = kernel
        .execute("let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(1usize << 60));\nstd::hint::black_box(&v).capacity()")
        .await;
    let (ename, evalue, traceback) = execution.error().unwrap();
    assert_eq!(
        ename,
        "MemoryError",
        "{evalue}\n{traceback:?}\n{}",
        execution.stderr()
    );
    assert!(
        evalue.contains("allocating 1152921504606846976 bytes failed")
            && evalue.contains("before_oom")
            && evalue.contains("try_reserve"),
        "{evalue}"
    );
    // Fallible allocation keeps the cell and its variables.
    let kept = kernel
        .run_ok("let mut w: Vec<u8> = Vec::new();\nw.try_reserve(std::hint::black_box(1usize << 60)).is_err()")
        .await;
    assert_eq!(kept.result().as_deref(), Some("true"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_that_closes_its_stdout_ends_and_the_next_cell_prints_again() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 5;").await;
    let closed = kernel
        .run_ok("unsafe extern \"C\" { fn close(fd: i32) -> i32; }\nunsafe { close(1); }")
        .await;
    assert!(
        closed
            .stdout()
            .contains("This cell closed its standard output"),
        "{}",
        closed.stdout()
    );
    let next = kernel.run_ok("println!(\"printing again\");\nkept").await;
    assert!(
        next.stdout().contains("printing again"),
        "{}",
        next.stdout()
    );
    assert_eq!(next.result().as_deref(), Some("5"));
}
