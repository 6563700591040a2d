//! `tchbook-bench`: the Rust side of the training-loop benchmark (see `bench/train.py`, which
//! alternates it with `bench/torch_loops.py` and writes the table).
//!
//! One process runs one workload once, after a short warm-up on throwaway state, and prints one
//! JSON line: `{"side": ..., "workload": ..., "seconds": ..., "steps": ..., "last": ...}`.
//!
//! - `--impl prelude` (the default) writes each loop as a notebook cell does, with the prelude's
//!   models, loaders and helpers: what tchbook users get.
//! - `--impl tch` is the same loop in plain tch, the reference the prelude must not fall behind.

/// The kernel's allocator, overriding malloc for libtorch too, as in the kernel's evaluation
/// process (src/main.rs); not in the `glibc` build.
#[cfg(not(feature = "glibc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod prelude_loops;
mod tch_loops;

use std::process::ExitCode;
use tchbook_prelude::prelude::*;

/// The workloads' shapes, shared with `torch_loops.py` (keep the two in step).
pub(crate) struct Shapes;

impl Shapes {
    pub(crate) const IRIS_ROWS: i64 = 120; // the tutorial's 80 % train split of 150 rows
    pub(crate) const IRIS_EPOCHS: i64 = 100;
    pub(crate) const CIFAR_BATCH: i64 = 4;
    pub(crate) const CIFAR_STEPS: i64 = 3000;
    pub(crate) const FASHION_ROWS: i64 = 60000;
    pub(crate) const FASHION_BATCH: i64 = 1000;
    pub(crate) const MLP_BATCH: i64 = 64;
    pub(crate) const MLP_STEPS: i64 = 5000;
    // notebooks/01's digits: 64 features, 64 hidden units, 10 classes, Adam at 1e-3.
    pub(crate) const MLP_IN: i64 = 64;
    pub(crate) const MLP_HIDDEN: i64 = 64;
    pub(crate) const MLP_OUT: i64 = 10;
    pub(crate) const MLP_LR: f64 = 1e-3;
    pub(crate) const LOADER_ROWS: i64 = 60000;
    pub(crate) const LOADER_BATCH: i64 = 64;
    pub(crate) const WARMUP_STEPS: i64 = 5;
}

/// One timed run of a workload.
pub(crate) struct Run {
    pub(crate) seconds: f64,
    pub(crate) steps: i64,
    /// The last loss (or, for the loader, the number of rows seen): printed so that a wrong
    /// loop shows, and so that the optimiser cannot drop the work.
    pub(crate) last: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Impl {
    Prelude,
    Tch,
}

struct Args {
    workload: String,
    threads: i32,
    device: Device,
    imp: Impl,
    /// Multiplies the timed run's steps (rows for fashion and loader): for profiling only.
    scale: i64,
}

const USAGE: &str = "usage: tchbook-bench --workload iris|cifar|fashion|mlp|loader \
[--threads N] [--device cpu|cuda] [--impl prelude|tch] \
[--scale K (profiling: K times the steps)]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        workload: String::new(),
        threads: 1,
        device: Device::Cpu,
        imp: Impl::Prelude,
        scale: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--workload" => args.workload = value()?,
            "--threads" => {
                args.threads = value()?.parse().map_err(|e| format!("--threads: {e}"))?;
            }
            "--device" => {
                args.device = match value()?.as_str() {
                    "cpu" => Device::Cpu,
                    "cuda" | "cuda:0" => Device::Cuda(0),
                    other => return Err(format!("--device {other}: expected cpu or cuda")),
                }
            }
            "--impl" => {
                args.imp = match value()?.as_str() {
                    "prelude" => Impl::Prelude,
                    "tch" => Impl::Tch,
                    other => return Err(format!("--impl {other}: expected prelude or tch")),
                }
            }
            "--scale" => {
                args.scale = value()?.parse().map_err(|e| format!("--scale: {e}"))?;
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if args.workload.is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(args)
}

fn run(args: &Args, timed: bool) -> Result<Run, String> {
    use Shapes as S;
    let d = args.device;
    let w = S::WARMUP_STEPS;
    let k = args.scale;
    let (iris, cifar, mlp) = if timed {
        (k * S::IRIS_EPOCHS, k * S::CIFAR_STEPS, k * S::MLP_STEPS)
    } else {
        (w, w, w)
    };
    let (fashion_rows, loader_rows) = if timed {
        (k * S::FASHION_ROWS, k * S::LOADER_ROWS)
    } else {
        (w * S::FASHION_BATCH, w * S::LOADER_BATCH)
    };
    Ok(match (args.imp, args.workload.as_str()) {
        (Impl::Prelude, "iris") => prelude_loops::iris(d, iris),
        (Impl::Prelude, "cifar") => prelude_loops::cifar(d, cifar),
        (Impl::Prelude, "fashion") => prelude_loops::fashion(d, fashion_rows),
        (Impl::Prelude, "mlp") => prelude_loops::mlp(d, mlp),
        (Impl::Prelude, "loader") => prelude_loops::loader(d, loader_rows),
        (Impl::Tch, "iris") => tch_loops::iris(d, iris),
        (Impl::Tch, "cifar") => tch_loops::cifar(d, cifar),
        (Impl::Tch, "fashion") => tch_loops::fashion(d, fashion_rows),
        (Impl::Tch, "mlp") => tch_loops::mlp(d, mlp),
        (Impl::Tch, "loader") => tch_loops::loader(d, loader_rows),
        (_, other) => return Err(format!("unknown workload {other}\n{USAGE}")),
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    if args.imp == Impl::Prelude {
        prelude_loops::start();
    } else {
        // Only so that plain tch sees the GPU too (--as-needed drops libtorch_cuda from the link).
        tchbook_prelude::device::load_cuda();
    }
    if args.device != Device::Cpu && !tch::Cuda::is_available() {
        eprintln!(
            "--device cuda asked for, but tch sees no CUDA device (tch::Cuda::is_available() is false)"
        );
        return ExitCode::from(2);
    }
    tch::set_num_threads(args.threads);
    tch::manual_seed(0);
    // The warm-up pays one-off costs (oneDNN primitive creation, thread-pool start, the CUDA
    // context) that the PyTorch side pays in its warm-up too.
    let result = run(&args, false).and_then(|_| run(&args, true));
    match result {
        Ok(r) => {
            let side = match args.imp {
                Impl::Prelude => "prelude",
                Impl::Tch => "tch",
            };
            println!(
                "{{\"side\": \"{side}\", \"workload\": \"{}\", \"threads\": {}, \"device\": \"{}\", \
                 \"seconds\": {}, \"steps\": {}, \"last\": {}}}",
                args.workload,
                args.threads,
                if args.device == Device::Cpu {
                    "cpu"
                } else {
                    "cuda"
                },
                r.seconds,
                r.steps,
                r.last
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}
