use crate::{prelude_dir, python, scratch};
use std::process::Command;
use tchbook_prelude::models::f_load_state_dict;
use tchbook_prelude::prelude::*;

fn names(vs: &nn::VarStore) -> Vec<(String, Vec<i64>)> {
    vs.named_parameters()
        .iter()
        .map(|(n, t)| (n.to_string(), t.size()))
        .collect()
}

fn pairs(list: &[(&str, &[i64])]) -> Vec<(String, Vec<i64>)> {
    list.iter()
        .map(|(n, s)| (n.to_string(), s.to_vec()))
        .collect()
}

fn zeros(shape: &[i64]) -> Tensor {
    Tensor::zeros(shape, (Kind::Float, Device::Cpu))
}

#[test]
fn cifar_net_has_the_tutorial_layers_and_output_shape() {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = Net::new(&vs.root());
    assert_eq!(net.forward(&zeros(&[4, 3, 32, 32])).size(), [4, 10]);
    assert_eq!(
        names(&vs),
        pairs(&[
            ("conv1.weight", &[6, 3, 5, 5]),
            ("conv1.bias", &[6]),
            ("conv2.weight", &[16, 6, 5, 5]),
            ("conv2.bias", &[16]),
            ("fc1.weight", &[120, 400]),
            ("fc1.bias", &[120]),
            ("fc2.weight", &[84, 120]),
            ("fc2.bias", &[84]),
            ("fc3.weight", &[10, 84]),
            ("fc3.bias", &[10]),
        ])
    );
    assert!(
        net.repr()
            .to_string()
            .contains("(conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))")
    );
}

#[test]
fn deeplizard_network_maps_a_28x28_sample_to_ten_scores() {
    let vs = nn::VarStore::new(Device::Cpu);
    let network = Network::new(&vs.root());
    assert_eq!(network.forward(&zeros(&[1, 1, 28, 28])).size(), [1, 10]);
    assert_eq!(network.forward(&zeros(&[7, 1, 28, 28])).size(), [7, 10]);
    assert_eq!(
        vs.num_parameters(),
        6 * 25 + 6 + 12 * 6 * 25 + 12 + 120 * 192 + 120 + 60 * 120 + 60 + 10 * 60 + 10
    );
    assert!(
        network
            .repr()
            .to_string()
            .starts_with("Network(\n  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))")
    );
}

#[test]
fn iris_model_test_model_and_classifier_mlp_have_pytorch_names() {
    let vs = nn::VarStore::new(Device::Cpu);
    let model = IrisModel::new(&vs.root());
    assert_eq!(model.forward(&zeros(&[5, 4])).size(), [5, 3]);
    assert_eq!(
        names(&vs),
        pairs(&[
            ("fc1.weight", &[8, 4]),
            ("fc1.bias", &[8]),
            ("fc2.weight", &[9, 8]),
            ("fc2.bias", &[9]),
            ("out.weight", &[3, 9]),
            ("out.bias", &[3])
        ])
    );

    let vs = nn::VarStore::new(Device::Cpu);
    let model = TestModel::new(&vs.root());
    assert_eq!(model.forward(&zeros(&[2, 10])).size(), [2, 1]);
    assert_eq!(model.layer1.ws.size(), [5, 10]);
    assert_eq!(names(&vs)[2], ("layer2.weight".to_string(), vec![1, 5]));

    let vs = nn::VarStore::new(Device::Cpu);
    let model = ClassifierMlp::new(&vs.root(), 4, 16, 3);
    let (pred, prob) = model.forward(&Tensor::randn([6, 4], (Kind::Float, Device::Cpu)));
    assert_eq!((pred.size(), prob.size()), (vec![6, 3], vec![6, 3]));
    let row_sums = Vec::<f32>::try_from(prob.sum_dim_intlist(1, false, Kind::Float)).unwrap();
    assert!(row_sums.iter().all(|s| (s - 1.0).abs() < 1e-5));
    assert!(pred.argmax(-1, false).equal(&prob.argmax(-1, false)));
    assert_eq!(
        names(&vs)
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        [
            "h1.weight",
            "h1.bias",
            "h2.weight",
            "h2.bias",
            "out.weight",
            "out.bias"
        ]
    );
}

#[test]
fn a_state_dict_that_loads_reports_all_keys_matched_and_brings_the_values() {
    let dir = scratch("state-dict-keys");
    tch::manual_seed(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let _net = Net::new(&vs.root());
    let path = dir.join("net.safetensors");
    save_state_dict(&vs, &path);
    tch::manual_seed(2);
    let mut fresh = nn::VarStore::new(Device::Cpu);
    let _fresh = Net::new(&fresh.root());
    let keys = load_state_dict(&mut fresh, &path);
    // What PyTorch's load_state_dict returns, and Jupyter shows, after a strict load.
    assert_eq!(keys.to_string(), "<All keys matched successfully>");
    assert!(keys.missing_keys.is_empty() && keys.unexpected_keys.is_empty());
    let loaded = fresh.variables();
    for (name, saved) in vs.variables() {
        assert!(saved.equal(&loaded[&name]), "{name} did not load");
    }
}

#[test]
fn a_state_dict_with_wrong_names_or_shapes_is_refused() {
    let dir = scratch("state-dict-bad");
    let vs = nn::VarStore::new(Device::Cpu);
    let _m = IrisModel::new(&vs.root());
    let path = dir.join("iris.safetensors");
    save_state_dict(&vs, &path);
    let mut other = nn::VarStore::new(Device::Cpu);
    let _t = TestModel::new(&other.root());
    let e = f_load_state_dict(&mut other, &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Missing key(s)") && e.contains("layer1.weight") && e.contains("fc1.weight"),
        "{e}"
    );
    let mut wide = nn::VarStore::new(Device::Cpu);
    let _w = IrisModel::with_sizes(&wide.root(), 4, 10, 9, 3);
    let e = f_load_state_dict(&mut wide, &path).unwrap_err().to_string();
    assert!(e.contains("size mismatch for fc1"), "{e}");
    let e = f_load_state_dict(&mut wide, dir.join("absent.safetensors"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("absent.safetensors"), "{e}");
}

const PYTHON_SIDE: &str = r#"
import sys, torch
from safetensors.torch import load_file, save_file
sys.path.insert(0, sys.argv[2])
from parity import Net, Network  # the tutorials' models, as the tutorials write them

d = sys.argv[1]
assert torch.__version__.startswith("2.11.0"), torch.__version__
for name, cls in [("net", Net), ("network", Network)]:
    model = cls()
    model.load_state_dict(load_file(f"{d}/{name}_rust.safetensors"))  # strict by default
    io = load_file(f"{d}/{name}_io.safetensors")
    with torch.no_grad():
        out = model(io["input"])
    diff = (out - io["output"]).abs().max().item()
    assert diff < 1e-5, f"{name}: PyTorch output differs from Rust's by {diff}"
    torch.manual_seed(123)
    fresh = cls()
    with torch.no_grad():
        save_file(fresh.state_dict(), f"{d}/{name}_python.safetensors")
        save_file({"output": fresh(io["input"]).contiguous()}, f"{d}/{name}_python_out.safetensors")
    print(f"{name}: python loaded rust weights, max diff {diff:.2e}")
print("python side ok")
"#;

#[test]
fn safetensors_state_dicts_round_trip_through_pytorch() {
    let python = python();
    let dir = scratch("roundtrip");
    tch::manual_seed(11);
    let inputs = [
        (
            "net",
            Tensor::randn([3, 3, 32, 32], (Kind::Float, Device::Cpu)),
        ),
        (
            "network",
            Tensor::randn([3, 1, 28, 28], (Kind::Float, Device::Cpu)),
        ),
    ];
    let mut stores = Vec::new();
    for (name, input) in &inputs {
        let vs = nn::VarStore::new(Device::Cpu);
        let model: Box<dyn Module> = if *name == "net" {
            Box::new(Net::new(&vs.root()))
        } else {
            Box::new(Network::new(&vs.root()))
        };
        let output = no_grad(|| model.forward(input));
        save_state_dict(&vs, dir.join(format!("{name}_rust.safetensors")));
        Tensor::write_safetensors(
            &[("input", input), ("output", &output)],
            dir.join(format!("{name}_io.safetensors")),
        )
        .unwrap();
        stores.push((vs, model));
    }
    let script = dir.join("roundtrip.py");
    std::fs::write(&script, PYTHON_SIDE).unwrap();
    let out = Command::new(&python)
        .arg(&script)
        .arg(&dir)
        .arg(prelude_dir().join("tests"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python side failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("python side ok"));
    for ((name, input), (mut vs, model)) in inputs.iter().zip(stores) {
        load_state_dict(&mut vs, dir.join(format!("{name}_python.safetensors")));
        let want = Tensor::read_safetensors(dir.join(format!("{name}_python_out.safetensors")))
            .unwrap()
            .remove(0)
            .1;
        let got = no_grad(|| model.forward(input));
        let diff = (got - want).abs().max().double_value(&[]);
        assert!(
            diff < 1e-5,
            "{name}: Rust output on PyTorch's weights differs by {diff}"
        );
    }
}
