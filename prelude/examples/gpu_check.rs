//! The prelude on a GPU machine (issue 14's checks): CUDA is the best device with no flags; the
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

use std::time::Instant;
use tchbook_prelude::prelude::*;

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
}

const NO_CUDA: &str = "no CUDA device here (libtorch sees none)";

const MIB: u64 = 1 << 20;

/// Trains the CIFAR Net for `steps` batches on `device`; returns the seconds and the model.
fn train_steps(device: Device, steps: usize, checks: &mut Checks) -> (f64, nn::VarStore, Net) {
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
    let on_device = vs.variables().values().all(|t| t.device() == device);
    checks.check(
        on_device && vs.device() == device,
        &format!("every model parameter is on {}", device_name(device)),
    );
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
    (secs, vs, net)
}

/// PyTorch's side of the state-dict check: load the file into the tutorial's Net (strict) and
/// print its prediction for a fixed input. Its arguments: the file, then [`TORCH_LOOPS`].
const PYTORCH_LOAD: &str = r#"
import json, struct, sys, torch
path = sys.argv[1]
try:
    from safetensors.torch import load_file
    state, how = load_file(path), "safetensors.torch.load_file"
except ImportError:
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    kinds = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
             "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
    state = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        data = bytearray(raw[8 + n + start:8 + n + end])
        state[name] = torch.frombuffer(data, dtype=kinds[entry["dtype"]]).reshape(entry["shape"])
    how = "a reader of the safetensors format (no safetensors package)"
# The tutorial's Net, as the benchmark's PyTorch side defines it (bench/torch_loops.py).
tutorial = {"__name__": "torch_loops"}
exec(sys.argv[2], tutorial)
Net = tutorial["Net"]
device = "cuda" if torch.cuda.is_available() else "cpu"
net = Net()
net.load_state_dict(state)
net = net.to(device)
with torch.no_grad():
    out = net(torch.full((1, 3, 32, 32), 0.5, device=device))
print(json.dumps({"how": how, "device": device, "prediction": out.flatten().tolist()}))
"#;

/// The benchmark's PyTorch side, which defines the tutorial's `Net`.
const TORCH_LOOPS: &str = include_str!("../../bench/torch_loops.py");

fn pytorch_python() -> String {
    std::env::var("TCHBOOK_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Saves the trained model's state dict from `device` and loads it into PyTorch's Net.
fn state_dict_loads_in_pytorch(vs: &nn::VarStore, net: &Net, checks: &mut Checks) {
    let device = vs.device();
    let path = std::env::temp_dir().join(format!("gpu-check-{}.safetensors", std::process::id()));
    save_state_dict(vs, &path);
    let ours: Vec<f64> = tch::no_grad(|| {
        let x = Tensor::full([1, 3, 32, 32], 0.5, (Kind::Float, device));
        Vec::<f64>::try_from(net.forward(&x).to_kind(Kind::Double).flatten(0, -1).cpu())
            .unwrap_or_default()
    });
    let python = pytorch_python();
    let ran = std::process::Command::new(&python)
        .arg("-c")
        .arg(PYTORCH_LOAD)
        .arg(&path)
        .arg(TORCH_LOOPS)
        .output();
    let _ = std::fs::remove_file(&path);
    let what = format!(
        "a state dict saved from {} loads into PyTorch's Net (strict) and predicts the same",
        device_name(device)
    );
    let output = match ran {
        Ok(output) if output.status.success() => output,
        Ok(output) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            if stderr.contains("No module named 'torch'") {
                checks.skip(
                    &what,
                    &format!("{python} has no torch; set TCHBOOK_PYTHON to a Python with torch"),
                );
            } else {
                println!("{python} failed:\n{stderr}");
                checks.check(false, &what);
            }
            return;
        }
        Err(error) => {
            checks.skip(
                &what,
                &format!(
                    "cannot run {python} ({error}); set TCHBOOK_PYTHON to a Python with torch"
                ),
            );
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let reply: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_default();
    let theirs: Vec<f64> = reply["prediction"]
        .as_array()
        .map(|v| v.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default();
    let max_diff = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "PyTorch ({}, on {}) predicts {:?}; the prelude {:?}; largest difference {max_diff:.2e}",
        reply["how"].as_str().unwrap_or("?"),
        reply["device"].as_str().unwrap_or("?"),
        &theirs,
        &ours
    );
    checks.check(
        theirs.len() == 10 && ours.len() == 10 && max_diff < 1e-4,
        &what,
    );
}

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

    println!("\n== the cross-device error ==");
    if cuda {
        cross_device_error(&mut checks);
    } else {
        checks.skip("the cross-device error reads as PyTorch's", NO_CUDA);
    }

    println!("\n== out of memory ==");
    if cuda {
        out_of_memory(&mut checks);
    } else {
        checks.skip("an out-of-memory allocation is a clear error", NO_CUDA);
    }

    println!("\n== pinned, non-blocking transfers ==");
    if cuda {
        pinned_transfers(&mut checks);
    } else {
        checks.skip("pinned, non-blocking DataLoader transfers", NO_CUDA);
    }

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

fn memory_moves(checks: &mut Checks) {
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

fn cross_device_error(checks: &mut Checks) {
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

fn out_of_memory(checks: &mut Checks) {
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

fn pinned_transfers(checks: &mut Checks) {
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
