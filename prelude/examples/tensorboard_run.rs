//! Writes TensorBoard runs as a notebook does, for tests/test_tensorboard.py to read with
//! TensorBoard's own reader: run it in an empty folder and it leaves, under `runs/`,
//!
//! - `<date>_<hostname>-direct`: a `SummaryWriter` used directly: `Loss` = 0.5, 0.25, 0.125 at
//!   steps 1–3; a histogram `values` of `arange(-500, 1500) / 100` (float32) at step 1; the
//!   image `grid`, `make_grid` of ten 28×28 one-channel images (62×242); the image `u8`, a
//!   3×5×7 `u8` tensor (5×7 RGB);
//! - `<date>_<hostname>-lr=0.01,batch_size=10,num_workers=0,device=cpu`: a `RunManager` run
//!   of deeplizard's `Network`, two epochs of 40 random images, begun with its var store and
//!   loader (an image grid, scalars and histograms per epoch).
//!
//! `cargo run --release -p tchbook-prelude --example tensorboard_run`, then
//! `tensorboard --logdir runs`.

use tchbook_prelude::prelude::*;

fn main() {
    let mut tb = SummaryWriter::with_comment("-direct");
    for (step, loss) in [(1, 0.5), (2, 0.25), (3, 0.125)] {
        tb.add_scalar("Loss", loss, step);
    }
    let values = Tensor::arange_start(-500, 1500, (Kind::Float, Device::Cpu)) / 100.0;
    tb.add_histogram("values", &values, 1);
    let images = Tensor::arange(10 * 28 * 28, (Kind::Float, Device::Cpu))
        .remainder(256)
        .view([10, 1, 28, 28])
        / 255.0;
    tb.add_image("grid", &make_grid(&images), 0);
    let u8_image = Tensor::arange(3 * 5 * 7, (Kind::Uint8, Device::Cpu)).view([3, 5, 7]);
    tb.add_image("u8", &u8_image, 0);
    tb.close();

    tch::manual_seed(0);
    let ds = TensorDataset::new(
        Tensor::rand([40, 1, 28, 28], (Kind::Float, Device::Cpu)),
        Tensor::randint(10, [40], (Kind::Int64, Device::Cpu)),
    );
    let mut m = RunManager::new();
    for run in RunBuilder::get_runs(&RunParams::new().lr(&[0.01]).batch_size(&[10])) {
        let vs = nn::VarStore::new(run.device);
        let network = Network::new(&vs.root());
        let mut optimizer = nn::Adam::default().build(&vs, run.lr).unwrap();
        let loader = DataLoader::new(&ds, run.batch_size).shuffle(true);
        m.begin_run_with(&run, &vs, &loader);
        for _epoch in 0..2 {
            m.begin_epoch();
            for (images, labels) in &loader {
                let preds = network.forward(&images);
                let loss = preds.cross_entropy_for_logits(&labels);
                optimizer.zero_grad();
                loss.backward();
                optimizer.step();
                m.track_loss(&loss, images.size()[0]);
                m.track_num_correct(&preds, &labels);
            }
            m.end_epoch();
        }
        m.end_run();
    }
}
