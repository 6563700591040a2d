//! `model.repr()`, PyTorch's `print(model)`: a cell's own models through `#[derive(ModuleTree)]`
//! (nested modules, lists, values that hold no layers, skipped fields), every setting of tch's
//! layers beside PyTorch's own `print(model)` of the same model, the prelude's `seq()` and the
//! prelude's own models.

use crate::{python, scratch};
use std::process::Command;
use tchbook_prelude::prelude::*;

/// The CIFAR-10 tutorial's `Net` as a notebook cell defines it, pooling as a function call.
#[derive(Debug, ModuleTree)]
struct CellNet {
    conv1: nn::Conv2D,
    conv2: nn::Conv2D,
    fc1: nn::Linear,
    fc2: nn::Linear,
    fc3: nn::Linear,
}

impl nn::Module for CellNet {
    fn forward(&self, x: &Tensor) -> Tensor {
        x.apply(&self.conv1)
            .apply(&self.conv2)
            .apply(&self.fc1)
            .apply(&self.fc2)
            .apply(&self.fc3)
    }
}

#[test]
fn a_model_defined_in_a_cell_prints_as_pytorch_prints_it() {
    let vs = nn::VarStore::new(Device::Cpu);
    let p = vs.root();
    let net = CellNet {
        conv1: torch_nn::conv2d(&p / "conv1", 3, 6, 5),
        conv2: torch_nn::conv2d(&p / "conv2", 6, 16, 5),
        fc1: torch_nn::linear(&p / "fc1", 16 * 5 * 5, 120),
        fc2: torch_nn::linear(&p / "fc2", 120, 84),
        fc3: torch_nn::linear(&p / "fc3", 84, 10),
    };
    // PyTorch's print(net) for the tutorial's Net, less its `pool` line (a function call here).
    assert_eq!(
        net.repr().to_string(),
        "CellNet(
  (conv1): Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))
  (conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))
  (fc1): Linear(in_features=400, out_features=120, bias=True)
  (fc2): Linear(in_features=120, out_features=84, bias=True)
  (fc3): Linear(in_features=84, out_features=10, bias=True)
)"
    );
    // The prelude's own models print PyTorch's text, with the tutorials' class names and the
    // CIFAR-10 `Net`'s `pool` line (an attribute in Python, a function call here).
    let network = Network::new(&(&p / "network"));
    assert_eq!(
        network.repr().to_string(),
        "Network(
  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))
  (conv2): Conv2d(6, 12, kernel_size=(5, 5), stride=(1, 1))
  (fc1): Linear(in_features=192, out_features=120, bias=True)
  (fc2): Linear(in_features=120, out_features=60, bias=True)
  (out): Linear(in_features=60, out_features=10, bias=True)
)"
    );
    let tutorial_net = Net::new(&(&p / "tutorial"));
    assert_eq!(
        tutorial_net.repr().to_string(),
        "Net(
  (conv1): Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))
  (pool): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))
  (fc1): Linear(in_features=400, out_features=120, bias=True)
  (fc2): Linear(in_features=120, out_features=84, bias=True)
  (fc3): Linear(in_features=84, out_features=10, bias=True)
)"
    );
    let test_model = TestModel::new(&(&p / "test"));
    assert!(test_model.repr().to_string().starts_with("testModel(\n"));
    let classifier = ClassifierMlp::new(&(&p / "mlp"), 4, 16, 3);
    assert_eq!(
        classifier.repr().to_string(),
        "Classifier_MLP(
  (h1): Linear(in_features=4, out_features=16, bias=True)
  (h2): Linear(in_features=16, out_features=16, bias=True)
  (out): Linear(in_features=16, out_features=3, bias=True)
)"
    );
    let iris = IrisModel::with_sizes(&(&p / "iris"), 4, 8, 9, 3);
    assert!(
        iris.repr()
            .to_string()
            .starts_with("Model(\n  (fc1): Linear(in_features=4")
    );
}

#[derive(Debug, ModuleTree)]
struct Block {
    conv: nn::Conv2D,
    norm: nn::BatchNorm,
}

/// A model with a nested module, a list, settings that are no layers, a function kept as a
/// field (skipped) and a Sequential.
#[expect(
    dead_code,
    reason = "fields read only through their ModuleTree, as repr reads them"
)]
#[derive(Debug, ModuleTree)]
struct Nested {
    block: Block,
    heads: Vec<nn::Linear>,
    dropout: f64,
    sizes: Vec<i64>,
    spare: Option<nn::Linear>,
    #[module(skip)]
    activation: fn(&Tensor) -> Tensor,
    seq: Sequential,
    embedding: Box<nn::Embedding>,
}

impl nn::Module for Nested {
    fn forward(&self, x: &Tensor) -> Tensor {
        x.shallow_clone()
    }
}

#[test]
fn nested_modules_lists_and_layer_settings_print_as_in_pytorch() {
    let vs = nn::VarStore::new(Device::Cpu);
    let p = vs.root();
    let config = nn::ConvConfig {
        stride: 2,
        padding: 1,
        groups: 2,
        bias: false,
        ..Default::default()
    };
    let model = Nested {
        block: Block {
            conv: nn::conv2d(&p / "conv", 4, 8, 3, config),
            norm: nn::batch_norm2d(&p / "norm", 8, Default::default()),
        },
        heads: vec![
            nn::linear(&p / "h0", 8, 2, Default::default()),
            nn::linear(
                &p / "h1",
                8,
                3,
                nn::LinearConfig {
                    bias: false,
                    ..Default::default()
                },
            ),
        ],
        dropout: 0.5,
        sizes: vec![8, 2],
        spare: None,
        activation: Tensor::relu,
        seq: seq()
            .add(nn::linear(&p / "s0", 2, 2, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&p / "s2", 2, 1, Default::default())),
        embedding: Box::new(nn::embedding(&p / "emb", 10, 3, Default::default())),
    };
    assert_eq!(
        model.repr().to_string(),
        "Nested(
  (block): Block(
    (conv): Conv2d(4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=2, bias=False)
    (norm): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  )
  (heads): ModuleList(
    (0): Linear(in_features=8, out_features=2, bias=True)
    (1): Linear(in_features=8, out_features=3, bias=False)
  )
  (seq): Sequential(
    (0): Linear(in_features=2, out_features=2, bias=True)
    (2): Linear(in_features=2, out_features=1, bias=True)
  )
  (embedding): Embedding(10, 3)
)"
    );
}

/// One of every layer the prelude prints, each with settings other than PyTorch's defaults, in a
/// tuple struct (fields `0`, `1`, ...).
#[derive(Debug, ModuleTree)]
struct Layers(
    Vec<nn::Conv1D>,
    [nn::Conv3D; 1],
    nn::BatchNorm,
    nn::LayerNorm,
    nn::GroupNorm,
    nn::Embedding,
    nn::Linear,
);

/// The same model in PyTorch, each child registered under the Rust field's name.
const PYTORCH_LAYERS: &str = r#"
import torch.nn as nn

class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        children = [
            nn.ModuleList([nn.Conv1d(2, 4, 3, stride=3, padding=2, dilation=2, groups=2)]),
            nn.ModuleList([nn.Conv3d(1, 2, 1, bias=False)]),
            nn.BatchNorm1d(4, eps=1e-3, momentum=0.25, affine=False),
            nn.LayerNorm([4, 8], eps=1e-6, elementwise_affine=False),
            nn.GroupNorm(2, 8),
            nn.Embedding(10, 3),
            nn.Linear(8, 3, bias=False),
        ]
        for i, child in enumerate(children):
            self.add_module(str(i), child)

print(Layers(), end="")
"#;

#[test]
fn every_layer_prints_as_pytorch_prints_the_same_model() {
    let vs = nn::VarStore::new(Device::Cpu);
    let p = vs.root();
    let conv1d = nn::ConvConfig {
        stride: 3,
        padding: 2,
        dilation: 2,
        groups: 2,
        ..Default::default()
    };
    let model = Layers(
        vec![nn::conv1d(&p / "c1", 2, 4, 3, conv1d)],
        [nn::conv3d(&p / "c3", 1, 2, 1, nn::no_bias())],
        nn::batch_norm1d(
            &p / "bn",
            4,
            nn::BatchNormConfig {
                eps: 1e-3,
                momentum: 0.25,
                affine: false,
                ..Default::default()
            },
        ),
        nn::layer_norm(
            &p / "ln",
            vec![4, 8],
            nn::LayerNormConfig {
                eps: 1e-6,
                elementwise_affine: false,
                ..Default::default()
            },
        ),
        nn::group_norm(&p / "gn", 2, 8, Default::default()),
        nn::embedding(&p / "emb", 10, 3, Default::default()),
        nn::linear(
            &p / "fc",
            8,
            3,
            nn::LinearConfig {
                bias: false,
                ..Default::default()
            },
        ),
    );
    let script = scratch("layers-repr").join("layers.py");
    std::fs::write(&script, PYTORCH_LAYERS).unwrap();
    let out = Command::new(python()).arg(&script).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pytorch = String::from_utf8(out.stdout).unwrap();
    assert!(
        pytorch.contains("Conv1d(2, 4, kernel_size=(3,), stride=(3,)"),
        "{pytorch}"
    );
    assert_eq!(model.repr().to_string(), pytorch);
}
