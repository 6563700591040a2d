//! execute_request on the real kernel: errors, panics, crashes, stop_on_error, what evcxr and the
//! evaluation process add (the message order and counting are `protocol::execute`'s, on the fake
//! engine).

use crate::support::{Kernel, REPLY, STARTUP};
use jupyter_protocol::{ExecuteRequest, JupyterMessageContent, ReplyStatus};

#[tokio::test(flavor = "multi_thread")]
async fn stop_on_error_aborts_executes_queued_behind_a_failure() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let ran = std::cell::Cell::new(0);").await;
    let failing = kernel
        .send_shell(ExecuteRequest::new("panic!(\"stop here\");".into()))
        .await;
    let queued_a = kernel
        .send_shell(ExecuteRequest::new("ran.set(1);".into()))
        .await;
    let queued_b = kernel
        .send_shell(ExecuteRequest::new("ran.set(2);".into()))
        .await;
    let reply = kernel.shell_reply(STARTUP).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        failing.header.msg_id
    );
    let JupyterMessageContent::ExecuteReply(failed) = &reply.content else {
        panic!()
    };
    assert_eq!(failed.status, ReplyStatus::Error);
    for queued in [&queued_a, &queued_b] {
        let reply = kernel.shell_reply(REPLY).await;
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            queued.header.msg_id
        );
        let JupyterMessageContent::ExecuteReply(aborted) = &reply.content else {
            panic!()
        };
        assert_eq!(aborted.status, ReplyStatus::Aborted);
    }
    // Nothing queued after the error ran; a new request runs normally.
    assert_eq!(
        kernel.run_ok("ran.get()").await.result().as_deref(),
        Some("0")
    );
    // Without stop_on_error the next request runs.
    let lenient = ExecuteRequest {
        stop_on_error: false,
        ..ExecuteRequest::new("panic!(\"again\");".into())
    };
    kernel.send_shell(lenient).await;
    let after = kernel
        .send_shell(ExecuteRequest::new("ran.set(3);".into()))
        .await;
    kernel.shell_reply(STARTUP).await;
    let reply = kernel.shell_reply(STARTUP).await;
    assert_eq!(
        reply.parent_header.as_ref().unwrap().msg_id,
        after.header.msg_id
    );
    let JupyterMessageContent::ExecuteReply(ran) = &reply.content else {
        panic!()
    };
    assert_eq!(ran.status, ReplyStatus::Ok);
}

#[tokio::test(flavor = "multi_thread")]
async fn compile_error_is_an_error_reply_pointing_at_the_cell_line() {
    let mut kernel = Kernel::start().await;
    let execution = kernel.execute("let a = 1;\nlet x: i32 = \"text\";").await;
    assert_eq!(execution.reply_status(), ReplyStatus::Error);
    assert_eq!(
        execution.types(),
        ["status", "execute_input", "error", "status"]
    );
    let (ename, evalue, traceback) = execution.error().unwrap();
    assert_eq!(ename, "CompilationError");
    assert!(evalue.contains("E0308"), "{evalue}");
    let text = traceback.join("\n");
    assert!(text.contains("cell:2:"), "{text}");
    assert!(text.contains("let x: i32 = \"text\";"), "{text}");
    let JupyterMessageContent::ExecuteReply(reply) = &execution.reply.content else {
        panic!()
    };
    let error = reply.error.as_ref().expect("error fields in the reply");
    assert_eq!(error.ename, "CompilationError");
    assert!(!error.traceback.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn panic_is_an_error_with_message_and_location_and_the_kernel_keeps_earlier_variables() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let execution = kernel
        .execute("let v: Vec<i32> = Vec::new();\nlet y = v[3];")
        .await;
    assert_eq!(execution.reply_status(), ReplyStatus::Error);
    let (ename, evalue, traceback) = execution.error().unwrap();
    assert_eq!(ename, "panic");
    assert!(evalue.contains("index out of bounds"), "{evalue}");
    let text = traceback.join("\n");
    assert!(text.contains("at cell line 2"), "location: {text}");
    assert!(text.contains("v[3]"), "the panicking line: {text}");
    assert!(
        !execution.stderr().contains("stack backtrace"),
        "no backtrace noise"
    );
    assert_eq!(
        kernel.run_ok("kept + 1").await.result().as_deref(),
        Some("42")
    );
}

/// The error a learner meets most: two matrices whose shapes do not fit.
const SHAPE_ERROR: &str =
    "let t = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));\nlet u = t.matmul(&t);";

#[tokio::test(flavor = "multi_thread")]
async fn a_torch_error_shows_what_pytorch_shows_and_cpp_frames_only_when_asked() {
    for asked in [false, true] {
        let env: &[(&str, &str)] = if asked {
            &[("TORCH_SHOW_CPP_STACKTRACES", "1")]
        } else {
            &[]
        };
        let mut kernel = Kernel::start_with_env(env).await;
        let execution = kernel.execute(SHAPE_ERROR).await;
        let (ename, evalue, traceback) = execution.error().expect("the shapes do not fit");
        assert_eq!(ename, "TorchError");
        assert!(
            evalue.starts_with("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
            "{evalue}"
        );
        let text = traceback.join("\n");
        assert!(text.contains("at cell line 2, in `matmul`"), "{text}");
        assert!(text.contains("let u = t.matmul(&t);"), "{text}");
        // libtorch's C++ frames and tch's wrapper line: only with PyTorch's own switch.
        assert_eq!(text.contains("frame #"), asked, "{text}");
        assert_eq!(text.contains("tensor_generated.rs"), asked, "{text}");
        if !asked {
            assert!(
                text.lines().count() <= 5,
                "a few lines, as PyTorch's: {text}"
            );
        }
    }
}

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
async fn tensors_work_without_use_or_dep() {
    let mut kernel = Kernel::start().await;
    let execution = kernel
        .run_ok("let t = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).to_device(Device::Cpu);\nlet s = tch::Tensor::sum(&t, Kind::Float);\ns.double_value(&[])")
        .await;
    assert_eq!(execution.result().as_deref(), Some("6.0"));
    kernel.run_ok("let linear = nn::linear(nn::VarStore::new(Device::Cpu).root(), 2, 3, Default::default());").await;
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
