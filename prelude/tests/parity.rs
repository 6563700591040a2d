//! Parity with PyTorch: each tutorial workload runs here and in torch 2.11 (`parity.py`, with
//! `$TCHBOOK_PYTHON`) on the same data and seed on the CPU; the initial parameters must be
//! equal bit for bit and the losses of every step equal to 1e-5 (relative). Also PyTorch's
//! printed forms of what the tutorials print (devices, shapes, `grad_fn`).
//!
//! The Rust side runs in a child process ([`run_child`]): the test binary's other tests draw
//! from libtorch's global generator on other threads, which would move this one's draws.

use crate::{is_child, prelude_dir, python, run_child_with, scratch};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use tchbook_prelude::prelude::*;

const CHILD: &str = "parity::rust_side_of_the_parity_workloads";
const STEPS_AT_LEAST: usize = 50;

fn cpu() -> (Kind, Device) {
    (Kind::Float, Device::Cpu)
}

struct Outcome {
    init: Vec<(String, Tensor)>,
    losses: Vec<f64>,
}

impl Outcome {
    fn save(&self, path: &Path) {
        let losses = Tensor::from_slice(&self.losses);
        let mut named: Vec<(String, &Tensor)> = self
            .init
            .iter()
            .map(|(n, t)| (format!("init.{n}"), t))
            .collect();
        named.push(("losses".into(), &losses));
        let refs: Vec<(&str, &Tensor)> = named.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        Tensor::write_safetensors(&refs, path).unwrap();
    }
}

/// The parameters as they are now, copied, in PyTorch's order.
fn initial(vs: &nn::VarStore) -> Vec<(String, Tensor)> {
    vs.named_parameters()
        .iter()
        .map(|(n, t)| (n.to_string(), t.detach().copy()))
        .collect()
}

fn iris_model(_data: &HashMap<String, Tensor>) -> Outcome {
    // Notebook 05: seed, model, data, 100 full-batch epochs of Adam lr 0.01.
    tch::manual_seed(32);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = IrisModel::new(&vs.root());
    let init = initial(&vs);
    let df = iris();
    let x = df.drop(&["target"]).values();
    let y = df.column("target");
    let (x_train, _x_test, y_train, _y_test) = train_test_split(&x, &y, 0.2, 33);
    let (x_train, y_train) = (x_train.to_kind(Kind::Float), y_train.to_kind(Kind::Int64));
    let mut optimizer = nn::Adam::default().build(&vs, 0.01).unwrap();
    let mut losses = Vec::new();
    for _ in 0..100 {
        let loss = model.forward(&x_train).cross_entropy_for_logits(&y_train);
        losses.push(loss.double_value(&[]));
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
    }
    Outcome { init, losses }
}

fn classifier_mlp(_data: &HashMap<String, Tensor>) -> Outcome {
    // Notebook 01: Iris split with random_state=42, shuffled batches of 10, Adam lr 0.01.
    tch::manual_seed(7);
    let iris = load_iris().unwrap();
    let (x_train, _x_test, y_train, _y_test) = train_test_split(&iris.data, &iris.target, 0.2, 42);
    let train_loader = DataLoader::new(TensorDataset::new(x_train, y_train), 10).shuffle(true);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = ClassifierMlp::new(&vs.root(), 4, 16, 3);
    let init = initial(&vs);
    let mut optimizer = nn::Adam::default().build(&vs, 0.01).unwrap();
    let mut losses = Vec::new();
    for _epoch in 0..5 {
        for (x_train, y_train) in &train_loader {
            optimizer.zero_grad();
            let (pred, _prob) = model.forward(&x_train);
            let loss = pred.cross_entropy_for_logits(&y_train);
            losses.push(loss.double_value(&[]));
            loss.backward();
            optimizer.step();
        }
    }
    Outcome { init, losses }
}

fn cifar_net(data: &HashMap<String, Tensor>) -> Outcome {
    // Notebook 03: SGD lr 0.001 momentum 0.9, shuffled batches of 4.
    tch::manual_seed(3);
    let vs = nn::VarStore::new(Device::Cpu);
    let net = Net::new(&vs.root());
    let init = initial(&vs);
    let trainset = TensorDataset::new(
        data["cifar_x"].shallow_clone(),
        data["cifar_y"].shallow_clone(),
    );
    let trainloader = DataLoader::new(trainset, 4).shuffle(true);
    let mut optimizer = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    .build(&vs, 0.001)
    .unwrap();
    let mut losses = Vec::new();
    for _epoch in 0..2 {
        for (inputs, labels) in &trainloader {
            optimizer.zero_grad();
            let loss = net.forward(&inputs).cross_entropy_for_logits(&labels);
            loss.backward();
            optimizer.step();
            losses.push(loss.double_value(&[]));
        }
    }
    Outcome { init, losses }
}

fn network(data: &HashMap<String, Tensor>) -> Outcome {
    // Notebook 04: Adam lr 0.01 over shuffled batches.
    tch::manual_seed(5);
    let vs = nn::VarStore::new(Device::Cpu);
    let network = Network::new(&vs.root());
    let init = initial(&vs);
    let train_set = TensorDataset::new(
        data["fashion_x"].shallow_clone(),
        data["fashion_y"].shallow_clone(),
    );
    let loader = DataLoader::new(train_set, 100).shuffle(true);
    let mut optimizer = nn::Adam::default().build(&vs, 0.01).unwrap();
    let mut losses = Vec::new();
    for _epoch in 0..2 {
        for (images, labels) in &loader {
            let loss = network.forward(&images).cross_entropy_for_logits(&labels);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            losses.push(loss.double_value(&[]));
        }
    }
    Outcome { init, losses }
}

/// (n, batch_size, drop_last, loader seed or None for the global generator, break after
/// batch) — the same list is in parity.py.
type LoaderCase = (i64, usize, bool, Option<u64>, Option<usize>);
const LOADER_CASES: [LoaderCase; 7] = [
    (10, 3, false, None, None),
    (10, 5, false, None, None),
    (10, 3, true, Some(17), None),
    (10, 5, false, Some(17), None),
    (10, 3, false, Some(17), None),
    (1000, 64, false, Some((1 << 40) + 3), None),
    (12, 4, false, Some(9), Some(1)),
];

fn loader_orders() -> Vec<(String, Tensor)> {
    let mut out = Vec::new();
    for (case, (n, bs, drop_last, seed, stop)) in LOADER_CASES.into_iter().enumerate() {
        tch::manual_seed(100 + case as i64);
        let idx = Tensor::arange(n, (Kind::Int64, Device::Cpu));
        let ds = TensorDataset::new(idx.shallow_clone(), idx);
        let mut shuffled = DataLoader::new(&ds, bs).shuffle(true).drop_last(drop_last);
        if let Some(seed) = seed {
            shuffled = shuffled.seed(seed);
        }
        let plain = DataLoader::new(&ds, bs);
        let mut order: Vec<i64> = Vec::new();
        for _epoch in 0..3 {
            for (b, (x, _)) in shuffled.iter().enumerate() {
                order.extend(Vec::<i64>::try_from(&x).unwrap());
                if stop == Some(b) {
                    break;
                }
            }
        }
        for (x, _) in &plain {
            order.extend(Vec::<i64>::try_from(&x).unwrap());
        }
        out.push((format!("order.{case}"), Tensor::from_slice(&order)));
        out.push((
            format!("after.{case}"),
            Tensor::rand([4], (Kind::Double, Device::Cpu)),
        ));
    }
    out
}

type Workload = fn(&HashMap<String, Tensor>) -> Outcome;
const WORKLOADS: [(&str, Workload); 4] = [
    ("iris", iris_model),
    ("classifier_mlp", classifier_mlp),
    ("cifar_net", cifar_net),
    ("network", network),
];

/// Test-made inputs: CIFAR-10-shaped images normalised to [-1, 1] and Fashion-MNIST-shaped
/// ones in [0, 1], with random labels (the losses need not fall, only agree), and the shipped
/// iris.csv.
fn make_data(dir: &Path) {
    tch::manual_seed(2024);
    let cifar_x = Tensor::rand([240, 3, 32, 32], cpu()) * 2.0 - 1.0;
    let cifar_y = Tensor::randint(10, [240], (Kind::Int64, Device::Cpu));
    let fashion_x = Tensor::rand([3000, 1, 28, 28], cpu());
    let fashion_y = Tensor::randint(10, [3000], (Kind::Int64, Device::Cpu));
    Tensor::write_safetensors(
        &[
            ("cifar_x", &cifar_x),
            ("cifar_y", &cifar_y),
            ("fashion_x", &fashion_x),
            ("fashion_y", &fashion_y),
        ],
        dir.join("data.safetensors"),
    )
    .unwrap();
    tchbook_prelude::data::write_iris(dir).unwrap();
}

#[test]
#[ignore = "run by tutorial_workloads_match_pytorch in a child process"]
fn rust_side_of_the_parity_workloads() {
    if !is_child(CHILD) {
        return;
    }
    set_threads(1);
    let dir = PathBuf::from(std::env::var("TCHBOOK_PARITY_DIR").unwrap());
    make_data(&dir);
    let data: HashMap<String, Tensor> = Tensor::read_safetensors(dir.join("data.safetensors"))
        .unwrap()
        .into_iter()
        .collect();
    for (name, run) in WORKLOADS {
        run(&data).save(&dir.join(format!("{name}_rust.safetensors")));
    }
    let orders = loader_orders();
    let refs: Vec<(&str, &Tensor)> = orders.iter().map(|(n, t)| (n.as_str(), t)).collect();
    Tensor::write_safetensors(&refs, dir.join("loader_rust.safetensors")).unwrap();
}

fn read(path: &Path) -> HashMap<String, Tensor> {
    Tensor::read_safetensors(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .collect()
}

#[test]
fn tutorial_workloads_match_pytorch() {
    let python = python();
    let dir = scratch("parity");
    run_child_with(CHILD, &[("TCHBOOK_PARITY_DIR", dir.as_os_str())]);
    let script = prelude_dir().join("tests/parity.py");
    let py = Command::new(&python)
        .arg(&script)
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&py.stdout);
    assert!(
        py.status.success() && stdout.contains("python side ok"),
        "the PyTorch side failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&py.stderr)
    );

    let mut report = String::new();
    for (name, _) in WORKLOADS {
        let rust = read(&dir.join(format!("{name}_rust.safetensors")));
        let torch = read(&dir.join(format!("{name}_python.safetensors")));
        let mut params: Vec<&String> = torch.keys().filter(|k| k.starts_with("init.")).collect();
        params.sort();
        let mut rust_params: Vec<&String> =
            rust.keys().filter(|k| k.starts_with("init.")).collect();
        rust_params.sort();
        assert_eq!(rust_params, params, "{name}: parameter names differ");
        for p in params {
            assert!(
                rust[p].equal(&torch[p]),
                "{name}: {p} differs from PyTorch's initial value (max difference {})",
                (&rust[p] - &torch[p]).abs().max().double_value(&[])
            );
        }
        let got = Vec::<f64>::try_from(&rust["losses"]).unwrap();
        let want = Vec::<f64>::try_from(&torch["losses"]).unwrap();
        assert_eq!(got.len(), want.len(), "{name}: number of steps");
        assert!(
            got.len() >= STEPS_AT_LEAST,
            "{name}: only {} steps",
            got.len()
        );
        let mut worst = 0f64;
        for (step, (g, w)) in got.iter().zip(&want).enumerate() {
            let rel = (g - w).abs() / w.abs().max(1e-12);
            assert!(
                rel <= 1e-5,
                "{name}: step {} loss {g:.8} vs PyTorch {w:.8} (relative difference {rel:.2e})",
                step + 1
            );
            worst = worst.max(rel);
        }
        report.push_str(&format!(
            "{name}: {} steps, parameters identical, largest relative loss difference {worst:.1e}\n",
            got.len()
        ));
        if name == "iris" {
            // Notebook 05's printout, epoch by epoch, beside PyTorch's.
            for epoch in (1..=91).step_by(10) {
                report.push_str(&format!(
                    "  epoch {epoch:2}: Rust {:10.8}  PyTorch {:10.8}\n",
                    got[epoch - 1],
                    want[epoch - 1]
                ));
            }
        }
    }
    let rust = read(&dir.join("loader_rust.safetensors"));
    let torch = read(&dir.join("loader_python.safetensors"));
    for (case, params) in LOADER_CASES.iter().enumerate() {
        let key = format!("order.{case}");
        assert_eq!(
            Vec::<i64>::try_from(&rust[&key]).unwrap(),
            Vec::<i64>::try_from(&torch[&key]).unwrap(),
            "loader case {case} {params:?}: sample order differs from PyTorch's"
        );
        let key = format!("after.{case}");
        assert!(
            rust[&key].equal(&torch[&key]),
            "loader case {case} {params:?}: the global generator is not where PyTorch's is after the epochs"
        );
    }
    println!("{report}{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tensors_devices_and_shapes_print_as_pytorch_prints_them() {
    let x = Tensor::ones([1, 3], cpu()).set_requires_grad(true);
    assert_eq!(x.repr(), "tensor([[1., 1., 1.]], requires_grad=True)");
    let y = (&x * 2.0).sum(Kind::Float);
    assert_eq!(y.repr(), "tensor(6., grad_fn=<SumBackward0>)");
    let vs = nn::VarStore::new(Device::Cpu);
    let fc = torch_nn::linear(vs.root() / "fc", 3, 2);
    let out = fc.forward(&x.detach());
    assert!(
        out.repr().ends_with(", grad_fn=<AddmmBackward0>)"),
        "{}",
        out.repr()
    );
    let out = no_grad(|| fc.forward(&x));
    assert!(!out.repr().contains("grad"), "{}", out.repr());
    assert_eq!(out.device().repr().to_string(), "device(type='cpu')");
    assert_eq!(
        Device::Cuda(1).repr().to_string(),
        "device(type='cuda', index=1)"
    );
    assert_eq!(fc.ws.shape().to_string(), "torch.Size([2, 3])");
    assert_eq!(format!("{:?}", fc.ws.shape()), "torch.Size([2, 3])");
}

#[test]
fn tensor_reprs_match_pytorchs() {
    let python = python();
    let dir = scratch("parity-reprs");
    tch::manual_seed(4);
    let cases: Vec<(&str, Tensor)> = vec![
        ("row10", Tensor::randn([1, 10], cpu()) * 0.1),
        ("vector100", Tensor::randn([100], cpu())),
        (
            "ints40",
            Tensor::randint(1000, [40], (Kind::Int64, Device::Cpu)),
        ),
        ("matrix3x30", Tensor::randn([3, 30], cpu())),
        ("summarised50x50", Tensor::randn([50, 50], cpu())),
        ("summarised3000", Tensor::rand([3000], cpu())),
        ("batch2x3x12", Tensor::randn([2, 3, 12], cpu()) * 100.0),
    ];
    let refs: Vec<(&str, &Tensor)> = cases.iter().map(|(n, t)| (*n, t)).collect();
    let path = dir.join("tensors.safetensors");
    Tensor::write_safetensors(&refs, &path).unwrap();
    let script = "import sys, json\nfrom safetensors.torch import load_file\n\
                  print(json.dumps({k: repr(v) for k, v in load_file(sys.argv[1]).items()}))";
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: HashMap<String, String> = serde_json::from_slice(&out.stdout).unwrap();
    for (name, t) in &cases {
        assert_eq!(
            t.repr(),
            want[*name],
            "{name}: the repr differs from PyTorch's"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
