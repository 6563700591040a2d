//! The prelude on a GPU machine: device card, allocator statistics before and after allocations,
//! `empty_cache`, pinned non-blocking transfers through the DataLoader, and a few training steps
//! on CUDA. On a machine without CUDA it says so, runs the CPU parts, and exits 0.
//!
//! ```text
//! cargo run --release -p tchbook-prelude --example gpu_check
//! ```
//! Exits 1 if any check fails.

use std::time::Instant;
use tchbook_prelude::prelude::*;

struct Checks {
    failed: usize,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        println!("[{}] {what}", if ok { "PASS" } else { "FAIL" });
        if !ok {
            self.failed += 1;
        }
    }
}

const MIB: u64 = 1 << 20;

fn train_steps(device: Device, steps: usize, checks: &mut Checks) -> f64 {
    let root = std::env::temp_dir().join(format!("gpu-check-{}", std::process::id()));
    let cifar = Cifar10::locate_or_standin(&root, 2_000, 200).expect("stand-in CIFAR-10");
    let transform = transforms::Compose(vec![
        transforms::ToTensor(),
        transforms::Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
    ]);
    let trainset = cifar.train(&transform).expect("load stand-in");
    let loader = DataLoader::new(&trainset, 32)
        .shuffle(true)
        .seed(0)
        .num_workers(2)
        .pin_memory(true)
        .to_device(device, true);
    tch::manual_seed(0);
    let vs = nn::VarStore::new(device);
    let net = Net::new(&vs.root());
    let mut opt = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    .build(&vs, 0.01)
    .unwrap();
    let mut first = None;
    let mut last = 0.0;
    let start = Instant::now();
    for (i, (inputs, labels)) in loader.iter().take(steps).enumerate() {
        if i == 0 {
            checks.check(
                inputs.device() == device,
                &format!("batches arrive on {}", device_name(device)),
            );
        }
        let loss = net.forward(&inputs).cross_entropy_for_logits(&labels);
        opt.zero_grad();
        loss.backward();
        opt.step();
        let v = loss.double_value(&[]);
        first.get_or_insert(v);
        last = v;
    }
    cuda::synchronize(device);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{steps} CIFAR Net steps (batch 32) on {}: loss {:.3} -> {:.3} in {:.2} s",
        device_name(device),
        first.unwrap_or(f64::NAN),
        last,
        secs
    );
    checks.check(last.is_finite(), "training loss is finite");
    let _ = std::fs::remove_dir_all(&root);
    secs
}

fn main() {
    tune_allocator();
    let mut checks = Checks { failed: 0 };
    println!("== device card ==\n{}\n", device_card());

    if !cuda::is_available() {
        println!("CUDA is absent: no CUDA device is present (or libtorch has no CUDA support).");
        println!("Running the CPU parts only.\n");
        println!("== memory summary ==\n{}\n", cuda::memory_summary());
        checks.check(
            cuda::memory_allocated(0) == 0,
            "memory_allocated is 0 without CUDA",
        );
        checks.check(
            best_device() == Device::Cpu || best_device() == Device::Mps,
            "best_device falls back",
        );
        train_steps(Device::Cpu, 20, &mut checks);
        std::process::exit(if checks.failed == 0 { 0 } else { 1 });
    }

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

    println!("\n== memory ==");
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
    println!("{}\n", cuda::memory_summary());

    println!("== pinned, non-blocking transfers ==");
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

    println!("\n== training steps ==");
    let cuda_secs = train_steps(gpu, 200, &mut checks);
    let cpu_secs = train_steps(Device::Cpu, 200, &mut checks);
    println!(
        "CPU / CUDA time for the same steps: {:.2}×",
        cpu_secs / cuda_secs
    );
    println!("\n{}", cuda::memory_summary());
    println!("{} check(s) failed", checks.failed);
    std::process::exit(if checks.failed == 0 { 0 } else { 1 });
}
