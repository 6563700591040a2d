//! The reference side: the same loops in plain tch 0.24, as NOTES.md's baseline measured them, with
//! `tch::data::Iter2` for batches and no prelude. It is in the table so that anything the
//! prelude gives back of what tch gains (a hidden copy, sync or per-step allocation) shows as
//! the prelude row falling behind this one.

use crate::{Run, Shapes};
use std::time::Instant;
use tchbook_prelude::prelude::tch::data::Iter2;
use tchbook_prelude::prelude::*;

fn linear(p: nn::Path, i: i64, o: i64) -> nn::Linear {
    nn::linear(p, i, o, Default::default())
}

fn conv(p: nn::Path, i: i64, o: i64, k: i64) -> nn::Conv2D {
    nn::conv2d(p, i, o, k, Default::default())
}

pub(crate) fn iris(device: Device, steps: i64) -> Run {
    tch::manual_seed(32);
    let x_train = Tensor::randn([Shapes::IRIS_ROWS, 4], (Kind::Float, Device::Cpu)).to(device);
    let y_train = Tensor::randint(3, [Shapes::IRIS_ROWS], (Kind::Int64, Device::Cpu)).to(device);
    let vs = nn::VarStore::new(device);
    let p = vs.root();
    let (fc1, fc2, out) = (
        linear(&p / "fc1", 4, 8),
        linear(&p / "fc2", 8, 9),
        linear(&p / "out", 9, 3),
    );
    let mut opt = nn::Adam::default().build(&vs, 0.01).unwrap();
    let mut losses = Vec::new();
    let mut last = 0.0;
    let start = Instant::now();
    for i in 1..=steps {
        let y_pred = x_train.apply(&fc1).relu().apply(&fc2).relu().apply(&out);
        let loss = y_pred.cross_entropy_for_logits(&y_train);
        if i % 10 == 1 {
            last = loss.double_value(&[]);
        }
        opt.zero_grad();
        loss.backward();
        opt.step();
        losses.push(loss);
    }
    let last = losses.last().map_or(last, |l| l.double_value(&[]));
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps,
        last,
    }
}

pub(crate) fn cifar(device: Device, steps: i64) -> Run {
    let n = steps * Shapes::CIFAR_BATCH;
    let images = Tensor::randn([n, 3, 32, 32], (Kind::Float, Device::Cpu));
    let labels = Tensor::randint(10, [n], (Kind::Int64, Device::Cpu));
    let vs = nn::VarStore::new(device);
    let p = vs.root();
    let (conv1, conv2) = (conv(&p / "conv1", 3, 6, 5), conv(&p / "conv2", 6, 16, 5));
    let (fc1, fc2, fc3) = (
        linear(&p / "fc1", 400, 120),
        linear(&p / "fc2", 120, 84),
        linear(&p / "fc3", 84, 10),
    );
    let mut opt = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    .build(&vs, 1e-3)
    .unwrap();
    let mut running_loss = 0.0;
    let mut last = 0.0;
    let start = Instant::now();
    for (i, (inputs, labels)) in Iter2::new(&images, &labels, Shapes::CIFAR_BATCH)
        .shuffle()
        .enumerate()
    {
        let (inputs, labels) = (inputs.to(device), labels.to(device));
        opt.zero_grad();
        let outputs = inputs
            .apply(&conv1)
            .relu()
            .max_pool2d_default(2)
            .apply(&conv2)
            .relu()
            .max_pool2d_default(2)
            .view([-1, 400])
            .apply(&fc1)
            .relu()
            .apply(&fc2)
            .relu()
            .apply(&fc3);
        let loss = outputs.cross_entropy_for_logits(&labels);
        loss.backward();
        opt.step();
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
    let images = Tensor::rand([rows, 1, 28, 28], (Kind::Float, Device::Cpu));
    let labels = Tensor::randint(10, [rows], (Kind::Int64, Device::Cpu));
    let vs = nn::VarStore::new(device);
    let p = vs.root();
    let (conv1, conv2) = (conv(&p / "conv1", 1, 6, 5), conv(&p / "conv2", 6, 12, 5));
    let (fc1, fc2, out) = (
        linear(&p / "fc1", 192, 120),
        linear(&p / "fc2", 120, 60),
        linear(&p / "out", 60, 10),
    );
    let mut opt = nn::Adam::default().build(&vs, 0.01).unwrap();
    let (mut total_loss, mut total_correct, mut steps, mut last) = (0.0, 0, 0, 0.0);
    let start = Instant::now();
    for (images, labels) in Iter2::new(&images, &labels, Shapes::FASHION_BATCH) {
        let (images, labels) = (images.to(device), labels.to(device));
        let preds = images
            .apply(&conv1)
            .relu()
            .max_pool2d_default(2)
            .apply(&conv2)
            .relu()
            .max_pool2d_default(2)
            .reshape([-1, 192])
            .apply(&fc1)
            .relu()
            .apply(&fc2)
            .relu()
            .apply(&out);
        let loss = preds.cross_entropy_for_logits(&labels);
        opt.zero_grad();
        loss.backward();
        opt.step();
        last = loss.double_value(&[]);
        total_loss += last * Shapes::FASHION_BATCH as f64;
        total_correct += preds
            .argmax(1, false)
            .eq_tensor(&labels)
            .sum(Kind::Int64)
            .int64_value(&[]);
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
    let x = Tensor::randn([n, Shapes::MLP_IN], (Kind::Float, Device::Cpu));
    let y = Tensor::randint(Shapes::MLP_OUT, [n], (Kind::Int64, Device::Cpu));
    let vs = nn::VarStore::new(device);
    let p = vs.root();
    let h1 = linear(&p / "h1", Shapes::MLP_IN, Shapes::MLP_HIDDEN);
    let h2 = linear(&p / "h2", Shapes::MLP_HIDDEN, Shapes::MLP_HIDDEN);
    let out = linear(&p / "out", Shapes::MLP_HIDDEN, Shapes::MLP_OUT);
    let mut opt = nn::Adam::default().build(&vs, Shapes::MLP_LR).unwrap();
    let (mut train_accs, mut train_loss) = (Vec::new(), Vec::new());
    let start = Instant::now();
    for (x_train, y_train) in Iter2::new(&x, &y, Shapes::MLP_BATCH).shuffle() {
        let (x_train, y_train) = (x_train.to(device), y_train.to(device));
        opt.zero_grad();
        let pred = x_train.apply(&h1).relu().apply(&h2).relu().apply(&out);
        let prob = pred.softmax(1, Kind::Float);
        let acc = prob
            .argmax(-1, false)
            .eq_tensor(&y_train)
            .to_kind(Kind::Float)
            .mean(Kind::Float);
        train_accs.push(acc.mean(Kind::Float).double_value(&[]));
        let loss = pred.cross_entropy_for_logits(&y_train);
        train_loss.push(loss.double_value(&[]));
        loss.backward();
        opt.step();
    }
    Run {
        seconds: start.elapsed().as_secs_f64(),
        steps,
        last: *train_loss.last().unwrap_or(&0.0),
    }
}

pub(crate) fn loader(device: Device, rows: i64) -> Run {
    let x = Tensor::rand([rows, 784], (Kind::Float, Device::Cpu));
    let y = Tensor::randint(10, [rows], (Kind::Int64, Device::Cpu));
    let (mut steps, mut seen) = (0, 0);
    let start = Instant::now();
    for (images, labels) in Iter2::new(&x, &y, Shapes::LOADER_BATCH)
        .shuffle()
        .return_smaller_last_batch()
    {
        let (images, _labels) = (images.to(device), labels.to(device));
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
