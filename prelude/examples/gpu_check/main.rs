//! The prelude on a GPU machine: CUDA is the best device with no flags; the
//! device card and `memory_summary` show the GPU's real numbers; allocated / reserved / peak move
//! as tensors are made and freed and `empty_cache` returns memory; the cross-device error reads as
//! PyTorch's; an out-of-memory allocation is a clear error and the process lives on; pinned,
//! non-blocking transfers through the DataLoader; a model and its batches really are on `cuda:0`
//! while it trains; its safetensors state dict, saved from CUDA, loads into the tutorial's Net in
//! PyTorch and gives the same prediction. On a machine without CUDA every CUDA check prints
//! `[SKIP]` with the reason, the CPU parts run, and it exits 0 if they pass.
//!
//! ```text
//! cargo run --release -p tchbook-prelude --example gpu_check
//! ```
//! The PyTorch side runs `$TCHBOOK_PYTHON` (else `python3`), which needs torch; `safetensors`
//! is used when installed, else a reader of the format written here. Exits 1 if any check fails.

mod memory;
mod training;

use memory::{cross_device_error, memory_moves, out_of_memory, pinned_transfers};
use tchbook_prelude::prelude::*;
use training::{state_dict_loads_in_pytorch, train_steps};

#[derive(Default)]
struct Checks {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        println!("[{}] {what}", if ok { "PASS" } else { "FAIL" });
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
    }

    fn skip(&mut self, what: &str, why: &str) {
        println!("[SKIP] {what}: {why}");
        self.skipped += 1;
    }

    /// A section that only CUDA can check: `run` on CUDA, else one skipped check named `what`.
    fn cuda_only(&mut self, cuda: bool, title: &str, what: &str, run: fn(&mut Checks)) {
        println!("\n== {title} ==");
        if cuda {
            run(self);
        } else {
            self.skip(what, NO_CUDA);
        }
    }
}

const NO_CUDA: &str = "no CUDA device here (libtorch sees none)";

const MIB: u64 = 1 << 20;

fn main() {
    tchbook_prelude::device::load_cuda();
    tune_allocator();
    let mut checks = Checks::default();
    let card = device_card();
    println!("== device card ==\n{card}\n");
    let cuda = cuda::is_available();
    if let Some(why) = cuda::unavailable_reason() {
        println!(
            "CUDA is absent: {why}.\nEvery CUDA check is skipped ([SKIP]); the CPU parts run.\n"
        );
    }
    // A machine with an NVIDIA driver is a GPU machine: there, skipping every CUDA check would
    // pass a run that proved nothing.
    checks.check(
        cuda || !tchbook_prelude::device::nvidia_driver_present(),
        "CUDA is available wherever an NVIDIA driver is",
    );

    println!("== device choice ==");
    if cuda {
        let gpu = Device::Cuda(0);
        let props = cuda::get_device_properties(0).expect("properties of cuda:0");
        println!(
            "cuda:0 = {} (sm_{}{}, {} SMs, {} MiB); {} device(s); current device {}",
            props.name,
            props.major,
            props.minor,
            props.multi_processor_count,
            props.total_memory / MIB,
            cuda::device_count(),
            cuda::current_device()
        );
        checks.check(
            best_device() == gpu,
            "best_device() is cuda:0 with no flags",
        );
        checks.check(
            Device::cuda_if_available() == gpu,
            "tch's Device::cuda_if_available() sees CUDA",
        );
        println!("versions: {:?}", cuda::versions());
    } else {
        checks.check(
            best_device() == Device::Cpu || best_device() == Device::Mps,
            "best_device falls back to mps or cpu",
        );
        checks.skip("best_device() is cuda:0 with no flags", NO_CUDA);
    }

    println!("\n== device card and memory summary ==");
    let summary = cuda::memory_summary();
    println!("{summary}\n");
    checks.check(
        summary.ram_total > 0 && summary.process_rss > 0 && card.ram_total > 0,
        "memory_summary and the device card show the process's and the system's RAM",
    );
    if cuda {
        let card_gpu = card.gpus.first();
        checks.check(
            card_gpu.is_some_and(|(p, mem)| {
                !p.name.is_empty()
                    && p.total_memory > 0
                    && mem.is_some_and(|(free, total)| total > 0 && free <= total)
            }),
            "the device card names the GPU with its real total and free memory",
        );
        let text = card.to_string();
        checks.check(
            card_gpu.is_some_and(|(p, _)| text.contains(&p.name)),
            "the device card's text shows the GPU's name",
        );
        checks.check(
            summary.devices.first().is_some_and(|d| {
                d.free_total
                    .is_some_and(|(free, total)| total > 0 && free <= total)
            }),
            "memory_summary has cuda:0 with its real free and total memory",
        );
    } else {
        checks.check(
            card.gpus.is_empty() && summary.devices.is_empty(),
            "without CUDA the card and summary list no GPU",
        );
        checks.skip(
            "the device card and memory_summary show the GPU's numbers",
            NO_CUDA,
        );
    }

    println!("\n== allocator statistics ==");
    if cuda {
        memory_moves(&mut checks);
    } else {
        checks.check(
            cuda::memory_allocated(0) == 0 && cuda::memory_reserved(0) == 0,
            "memory_allocated and memory_reserved are 0 without CUDA",
        );
        checks.skip(
            "allocated / reserved / peak move with tensors; empty_cache returns memory",
            NO_CUDA,
        );
    }

    checks.cuda_only(
        cuda,
        "the cross-device error",
        "the cross-device error reads as PyTorch's",
        cross_device_error,
    );
    checks.cuda_only(
        cuda,
        "out of memory",
        "an out-of-memory allocation is a clear error",
        out_of_memory,
    );
    checks.cuda_only(
        cuda,
        "pinned, non-blocking transfers",
        "pinned, non-blocking DataLoader transfers",
        pinned_transfers,
    );

    println!("\n== training steps ==");
    let device = if cuda { Device::Cuda(0) } else { Device::Cpu };
    let (device_secs, vs, net) = train_steps(device, if cuda { 200 } else { 20 }, &mut checks);
    if cuda {
        let (cpu_secs, _, _) = train_steps(Device::Cpu, 200, &mut checks);
        println!(
            "CPU / CUDA time for the same steps: {:.2}×",
            cpu_secs / device_secs
        );
    } else {
        checks.skip("a model and its batches on cuda:0", NO_CUDA);
    }

    println!("\n== the state dict in PyTorch ==");
    state_dict_loads_in_pytorch(&vs, &net, &mut checks);
    if !cuda {
        checks.skip("a state dict saved from cuda:0 loads in PyTorch", NO_CUDA);
    }

    println!("\n{}", cuda::memory_summary());
    println!(
        "{} passed, {} failed, {} skipped",
        checks.passed, checks.failed, checks.skipped
    );
    std::process::exit(if checks.failed == 0 { 0 } else { 1 });
}
