// The CIFAR-10 tutorial's training loop (batch 4, a loss readout every step, 3000 steps) on
// synthetic data of CIFAR's shape, in plain tch, as an evcxr_jupyter user writes it after
// `:dep tch`. kernels.py samples memory under it.
use tch::nn::{self, Module, OptimizerConfig};

#[derive(Debug)]
struct Net {
    conv1: nn::Conv2D,
    conv2: nn::Conv2D,
    fc1: nn::Linear,
    fc2: nn::Linear,
    fc3: nn::Linear,
}

impl Net {
    fn new(vs: &nn::Path) -> Net {
        Net {
            conv1: nn::conv2d(vs / "conv1", 3, 6, 5, Default::default()),
            conv2: nn::conv2d(vs / "conv2", 6, 16, 5, Default::default()),
            fc1: nn::linear(vs / "fc1", 16 * 5 * 5, 120, Default::default()),
            fc2: nn::linear(vs / "fc2", 120, 84, Default::default()),
            fc3: nn::linear(vs / "fc3", 84, 10, Default::default()),
        }
    }
}

impl Module for Net {
    fn forward(&self, xs: &Tensor) -> Tensor {
        xs.apply(&self.conv1).relu().max_pool2d_default(2)
            .apply(&self.conv2).relu().max_pool2d_default(2)
            .view([-1, 16 * 5 * 5])
            .apply(&self.fc1).relu()
            .apply(&self.fc2).relu()
            .apply(&self.fc3)
    }
}

tch::set_num_threads(1); // as in the 1-thread rows of the training table
let images = Tensor::randn([12000, 3, 32, 32], (Kind::Float, Device::Cpu));
let labels = Tensor::randint(10, [12000], (Kind::Int64, Device::Cpu));
let vs = nn::VarStore::new(Device::Cpu);
let net = Net::new(&vs.root());
let mut optimizer = nn::Sgd { momentum: 0.9, ..Default::default() }.build(&vs, 1e-3).unwrap();
let mut running_loss = 0.0;
// Shuffled batches gathered one at a time, as torch's and the prelude's loaders do (tch's Iter2
// would first copy the whole 147 MB data set, which is the loader's cost, not the kernel's).
let order = Tensor::randperm(12000, (Kind::Int64, Device::Cpu));
let start = std::time::Instant::now();
for i in 0..3000i64 {
    let idx = order.narrow(0, i * 4, 4);
    let (inputs, labels) = (images.index_select(0, &idx), labels.index_select(0, &idx));
    optimizer.zero_grad();
    let outputs = net.forward(&inputs);
    let loss = outputs.cross_entropy_for_logits(&labels);
    loss.backward();
    optimizer.step();
    running_loss += loss.double_value(&[]);
    if i % 2000 == 1999 {
        println!("[{:5}] loss: {:.3}", i + 1, running_loss / 2000.0);
        running_loss = 0.0;
    }
}
println!("loop_seconds={}", start.elapsed().as_secs_f64());
