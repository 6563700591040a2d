//! The prelude side: each loop as the shipped notebooks write it (notebooks/src/), with the
//! prelude's models, `TensorDataset` + `DataLoader` (no workers, as PyTorch's side has none) and
//! tch's optimizers, minus the live plots. Where a notebook and its tutorial differ by an op
//! (the MLP's `acc.mean()`), both sides do the tutorial's, so the two run the same tensor ops.

use crate::{Run, Shapes};
use std::time::Instant;
use tchbook_prelude::prelude::*;

/// Starts as the kernel's evaluation process does (`runtime::attach`): glibc's malloc tuned (what
/// the glibc build of this binary allocates with), CPU tensors limited to memory and swap,
/// libtorch_cuda loaded.
pub(crate) fn start() {
    tune_allocator();
    tchbook_prelude::runtime::limit_cpu_allocations();
    tchbook_prelude::device::load_cuda();
}

pub(crate) fn iris(device: Device, epochs: i64) -> Run {
    tch::manual_seed(32);
    let x_train =
        Tensor::randn([Shapes::IRIS_ROWS, 4], (Kind::Float, Device::Cpu)).to_device(device);
    let y_train =
        Tensor::randint(3, [Shapes::IRIS_ROWS], (Kind::Int64, Device::Cpu)).to_device(device);
    let vs = nn::VarStore::new(device);
    let model = IrisModel::new(&vs.root());
    let mut optimizer = nn::Adam::default().build(&vs, 0.01).unwrap();
    // The tutorial keeps the loss tensors (`losses.append(loss)`); so does this side.
    let mut losses = Vec::new();
    let mut last = 0.0;
    let start = Instant::now();
    for i in 1..=epochs {
        let y_pred = model.forward(&x_train);
        let loss = y_pred.cross_entropy_for_logits(&y_train);
        // a neat trick to save screen space:
        if i % 10 == 1 {
            last = loss.double_value(&[]);
        }
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        losses.push(loss);
    }
    let last = losses.last().map_or(last, |l| l.double_value(&[]));
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps: epochs,
        last,
    }
}

pub(crate) fn cifar(device: Device, steps: i64) -> Run {
    let n = steps * Shapes::CIFAR_BATCH;
    let trainset = TensorDataset::new(
        Tensor::randn([n, 3, 32, 32], (Kind::Float, Device::Cpu)),
        Tensor::randint(10, [n], (Kind::Int64, Device::Cpu)),
    );
    let trainloader = DataLoader::new(trainset, Shapes::CIFAR_BATCH as usize).shuffle(true);
    let vs = nn::VarStore::new(device);
    let net = Net::new(&vs.root());
    let mut optimizer = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    .build(&vs, 0.001)
    .unwrap();
    let mut running_loss = 0.0;
    let mut last = 0.0;
    let start = Instant::now();
    for (i, (inputs, labels)) in trainloader.iter().enumerate() {
        let (inputs, labels) = (inputs.to_device(device), labels.to_device(device));
        optimizer.zero_grad();
        let outputs = net.forward(&inputs);
        let loss = outputs.cross_entropy_for_logits(&labels);
        loss.backward();
        optimizer.step();
        last = loss.double_value(&[]);
        running_loss += last;
        if i % 2000 == 1999 {
            running_loss = 0.0;
        }
    }
    std::hint::black_box(running_loss);
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps,
        last,
    }
}

pub(crate) fn fashion(device: Device, rows: i64) -> Run {
    let train_set = TensorDataset::new(
        Tensor::rand([rows, 1, 28, 28], (Kind::Float, Device::Cpu)),
        Tensor::randint(10, [rows], (Kind::Int64, Device::Cpu)),
    );
    let vs = nn::VarStore::new(device);
    let network = Network::new(&vs.root());
    // deeplizard's loader does not shuffle; the notebook's RunManager loop does. Both sides
    // here follow the tutorial.
    let loader = DataLoader::new(train_set, Shapes::FASHION_BATCH as usize);
    let mut optimizer = nn::Adam::default().build(&vs, 0.01).unwrap();
    let (mut total_loss, mut total_correct, mut steps, mut last) = (0.0, 0, 0, 0.0);
    let start = Instant::now();
    for (images, labels) in loader.iter() {
        let images = images.to_device(device);
        let labels = labels.to_device(device);
        let preds = network.forward(&images);
        let loss = preds.cross_entropy_for_logits(&labels);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        last = loss.double_value(&[]);
        total_loss += last * images.size()[0] as f64;
        total_correct += num_correct(&preds, &labels);
        steps += 1;
    }
    std::hint::black_box((total_loss, total_correct));
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps,
        last,
    }
}

pub(crate) fn mlp(device: Device, steps: i64) -> Run {
    let n = steps * Shapes::MLP_BATCH;
    let train_loader = DataLoader::new(
        TensorDataset::new(
            Tensor::randn([n, Shapes::MLP_IN], (Kind::Float, Device::Cpu)),
            Tensor::randint(Shapes::MLP_OUT, [n], (Kind::Int64, Device::Cpu)),
        ),
        Shapes::MLP_BATCH as usize,
    )
    .shuffle(true);
    let vs = nn::VarStore::new(device);
    let model = ClassifierMlp::new(
        &vs.root(),
        Shapes::MLP_IN,
        Shapes::MLP_HIDDEN,
        Shapes::MLP_OUT,
    );
    let mut optimizer = nn::Adam::default().build(&vs, Shapes::MLP_LR).unwrap();
    let mut train_accs: Vec<f64> = Vec::new();
    let mut train_loss: Vec<f64> = Vec::new();
    let start = Instant::now();
    for (x_train, y_train) in train_loader.iter() {
        let (x_train, y_train) = (x_train.to_device(device), y_train.to_device(device));
        optimizer.zero_grad();
        let (pred, prob) = model.forward(&x_train);
        let acc = prob
            .argmax(-1, false)
            .eq_tensor(&y_train)
            .to_kind(Kind::Float)
            .mean(Kind::Float);
        train_accs.push(acc.mean(Kind::Float).double_value(&[]));
        let loss = pred.cross_entropy_for_logits(&y_train);
        train_loss.push(loss.double_value(&[]));
        loss.backward();
        optimizer.step();
    }
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps,
        last: train_loss.last().copied().unwrap_or(0.0),
    }
}

pub(crate) fn loader(device: Device, rows: i64) -> Run {
    let dataset = TensorDataset::new(
        Tensor::rand([rows, 784], (Kind::Float, Device::Cpu)),
        Tensor::randint(10, [rows], (Kind::Int64, Device::Cpu)),
    );
    let loader = DataLoader::new(dataset, Shapes::LOADER_BATCH as usize)
        .shuffle(true)
        .num_workers(0);
    let (mut steps, mut seen) = (0, 0);
    let start = Instant::now();
    for (images, labels) in &loader {
        // What a loop does first with a batch: move it (a no-op on the CPU) and count it.
        let (images, _labels) = (images.to_device(device), labels.to_device(device));
        seen += images.size()[0];
        steps += 1;
    }
    if let Device::Cuda(_) = device {
        tch::Cuda::synchronize(0);
    }
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps,
        last: seen as f64,
    }
}
