//! Memory on the device: the allocator's statistics, the cross-device error, running out of
//! memory, and pinned transfers through the DataLoader.

use super::{Checks, MIB};
use std::time::Instant;
use tchbook_prelude::prelude::*;

pub(super) fn memory_moves(checks: &mut Checks) {
    let gpu = Device::Cuda(0);
    let before = cuda::memory_allocated(0);
    println!(
        "before: allocated {} MiB, reserved {} MiB",
        before / MIB,
        cuda::memory_reserved(0) / MIB
    );
    let big = Tensor::zeros([64, 1024, 1024], (Kind::Float, gpu)); // 256 MiB
    let after = cuda::memory_allocated(0);
    println!(
        "after a 256 MiB tensor: allocated {} MiB, reserved {} MiB",
        after / MIB,
        cuda::memory_reserved(0) / MIB
    );
    checks.check(
        after >= before + 256 * MIB,
        "memory_allocated grows by the tensor's size",
    );
    checks.check(
        cuda::memory_reserved(0) >= after,
        "memory_reserved >= memory_allocated",
    );
    let shown = cuda::memory_summary();
    checks.check(
        shown
            .devices
            .first()
            .is_some_and(|d| d.stats.allocated_bytes.current as u64 >= 256 * MIB),
        "memory_summary shows the 256 MiB tensor",
    );
    drop(big);
    let freed = cuda::memory_allocated(0);
    let reserved = cuda::memory_reserved(0);
    println!(
        "after drop: allocated {} MiB, reserved {} MiB",
        freed / MIB,
        reserved / MIB
    );
    checks.check(
        freed <= before,
        "dropping the tensor gives the bytes back to the allocator",
    );
    checks.check(
        reserved >= 256 * MIB,
        "the caching allocator keeps the block reserved",
    );
    checks.check(
        cuda::max_memory_allocated(0) >= 256 * MIB,
        "max_memory_allocated saw the peak",
    );
    cuda::empty_cache();
    println!(
        "after empty_cache: reserved {} MiB",
        cuda::memory_reserved(0) / MIB
    );
    checks.check(
        cuda::memory_reserved(0) < reserved,
        "empty_cache returns cached blocks",
    );
    cuda::reset_peak_memory_stats(0);
    checks.check(
        cuda::max_memory_allocated(0) == cuda::memory_allocated(0),
        "reset_peak_memory_stats",
    );
    let (free, total) = cuda::mem_get_info(0);
    println!(
        "mem_get_info: {} MiB free of {} MiB",
        free / MIB,
        total / MIB
    );
    checks.check(total > 0 && free <= total, "mem_get_info");
}

pub(super) fn cross_device_error(checks: &mut Checks) {
    let cpu = Tensor::ones([3, 3], (Kind::Float, Device::Cpu));
    let gpu = Tensor::ones([3, 3], (Kind::Float, Device::Cuda(0)));
    match gpu.f_add(&cpu) {
        Ok(_) => checks.check(false, "adding a cuda:0 and a cpu tensor fails"),
        Err(error) => {
            let text = short_error(&error);
            println!("cuda:0 + cpu: {text}");
            // PyTorch: "Expected all tensors to be on the same device, but found at least two
            // devices, cuda:0 and cpu!"
            checks.check(
                text.contains("Expected all tensors to be on the same device")
                    && text.contains("cuda:0")
                    && text.contains("cpu")
                    && !text.contains('\n'),
                "the cross-device error is PyTorch's one line, naming cuda:0 and cpu",
            );
        }
    }
    let caught = catch_torch_error(|| &gpu + &cpu);
    checks.check(
        caught.is_err(),
        "catch_torch_error turns the operator's panic into an error",
    );
}

pub(super) fn out_of_memory(checks: &mut Checks) {
    let (_, total) = cuda::mem_get_info(0);
    let before = cuda::memory_allocated(0);
    // Twice the card's memory: no allocator can satisfy it.
    let elements = (2 * total / 4).max(1 << 40) as i64;
    match Tensor::f_empty([elements], (Kind::Float, Device::Cuda(0))) {
        Ok(_) => checks.check(false, "allocating twice the GPU's memory fails"),
        Err(error) => {
            let text = short_error(&error);
            println!("{text}");
            checks.check(
                text.contains("out of memory"),
                "an allocation beyond the GPU's memory is a clear out-of-memory error",
            );
        }
    }
    let alive = Tensor::ones([1024], (Kind::Float, Device::Cuda(0))).sum(Kind::Float);
    checks.check(
        alive.double_value(&[]) == 1024.0 && cuda::memory_allocated(0) <= before + MIB,
        "after the out-of-memory error the process computes on and holds no leaked memory",
    );
}

pub(super) fn pinned_transfers(checks: &mut Checks) {
    let gpu = Device::Cuda(0);
    let data = TensorDataset::new(
        Tensor::randn([4096, 3, 32, 32], (Kind::Float, Device::Cpu)),
        Tensor::zeros([4096], (Kind::Int64, Device::Cpu)),
    );
    for pin in [false, true] {
        let loader = DataLoader::new(&data, 512)
            .pin_memory(pin)
            .num_workers(1)
            .to_device(gpu, pin);
        let start = Instant::now();
        let mut sum = Tensor::zeros([], (Kind::Float, gpu));
        for (x, _) in &loader {
            sum += x.sum(Kind::Float);
        }
        let total_value = sum.double_value(&[]);
        println!(
            "pin_memory={pin} non_blocking={pin}: 8 batches of 6 MiB in {:.1} ms (sum {total_value:.1})",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let pinned = data.inputs().narrow(0, 0, 16).pin_memory(gpu);
    checks.check(
        pinned.is_pinned(gpu),
        "pin_memory() gives page-locked memory",
    );
    let moved = pinned.to_device_(gpu, Kind::Float, true, false);
    checks.check(
        moved.equal(&data.inputs().narrow(0, 0, 16).to_device(gpu)),
        "non_blocking copy is correct",
    );
}
