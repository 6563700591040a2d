// Items a notebook defines (notebook 03's model and loss, an accuracy and a training loop):
// bench/incremental.py puts them, once or five times renamed, into a cell crate.
#[derive(Debug)]
struct Net { conv1: nn::Conv2D, conv2: nn::Conv2D, fc1: nn::Linear, fc2: nn::Linear, fc3: nn::Linear }
impl Net {
    fn new(p: &nn::Path) -> Net {
        Net {
            conv1: nn::conv2d(p / "conv1", 3, 6, 5, Default::default()),
            conv2: nn::conv2d(p / "conv2", 6, 16, 5, Default::default()),
            fc1: nn::linear(p / "fc1", 16 * 5 * 5, 120, Default::default()),
            fc2: nn::linear(p / "fc2", 120, 84, Default::default()),
            fc3: nn::linear(p / "fc3", 84, 10, Default::default()),
        }
    }
}
impl nn::Module for Net {
    fn forward(&self, x: &Tensor) -> Tensor {
        let x = x.apply(&self.conv1).relu().max_pool2d_default(2);
        let x = x.apply(&self.conv2).relu().max_pool2d_default(2);
        let x = x.view([-1, 16 * 5 * 5]);
        let x = x.apply(&self.fc1).relu();
        let x = x.apply(&self.fc2).relu();
        x.apply(&self.fc3)
    }
}
fn criterion(outputs: &Tensor, labels: &Tensor) -> Tensor { outputs.cross_entropy_for_logits(labels) }
fn accuracy(outputs: &Tensor, labels: &Tensor) -> f64 {
    outputs.argmax(-1, false).eq_tensor(labels).to_kind(Kind::Float).mean(Kind::Float).double_value(&[])
}
fn train_epoch(net: &Net, opt: &mut nn::Optimizer, xs: &[Tensor], ys: &[Tensor]) -> Vec<f64> {
    let mut losses = Vec::new();
    for (x, y) in xs.iter().zip(ys) {
        let loss = criterion(&net.forward(x), y);
        opt.backward_step(&loss);
        losses.push(loss.double_value(&[]));
    }
    let mut s = std::collections::HashMap::new();
    for (i, l) in losses.iter().enumerate() { s.insert(i, format!("{l:.3}")); }
    losses
}
