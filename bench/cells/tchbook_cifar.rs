// The CIFAR-10 tutorial's training loop (batch 4, a loss readout every step, 3000 steps) on
// synthetic data of CIFAR's shape, as notebooks/03 writes it with the prelude (which is in
// scope in every cell): the workload kernels.py samples memory under. The same loop as
// ../src/prelude_loops.rs's `cifar`.
set_threads(1); // as in the 1-thread rows of the training table
let trainset = TensorDataset::new(
    Tensor::randn([12000, 3, 32, 32], (Kind::Float, Device::Cpu)),
    Tensor::randint(10, [12000], (Kind::Int64, Device::Cpu)),
);
let trainloader = DataLoader::new(trainset, 4).shuffle(true);
let vs = nn::VarStore::new(Device::Cpu);
let net = Net::new(&vs.root());
let mut optimizer = nn::Sgd { momentum: 0.9, ..Default::default() }.build(&vs, 0.001)?;
let mut running_loss = 0.0;
let start = std::time::Instant::now();
for (i, (inputs, labels)) in trainloader.iter().enumerate() {
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
