//! Training on the device the check runs on, and the state dict it saves read by PyTorch.

use super::Checks;
use std::time::Instant;
use tchbook_prelude::prelude::*;

/// Trains the CIFAR Net for `steps` batches on `device`; returns the seconds and the model.
pub(super) fn train_steps(
    device: Device,
    steps: usize,
    checks: &mut Checks,
) -> (f64, nn::VarStore, Net) {
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
const TORCH_LOOPS: &str = include_str!("../../../bench/torch_loops.py");

fn pytorch_python() -> String {
    std::env::var("TCHBOOK_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Saves the trained model's state dict from `device` and loads it into PyTorch's Net.
pub(super) fn state_dict_loads_in_pytorch(vs: &nn::VarStore, net: &Net, checks: &mut Checks) {
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
