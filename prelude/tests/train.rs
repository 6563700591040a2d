use crate::scratch;
use tchbook_prelude::display::Render;
use tchbook_prelude::prelude::*;

#[test]
fn run_builder_varies_the_last_parameter_fastest() {
    let p = RunParams::new()
        .lr(&[0.01, 0.001])
        .batch_size(&[1000, 10000])
        .num_workers(&[0, 1])
        .device(&["cuda", "cpu"]);
    let runs = RunBuilder::get_runs(&p);
    assert_eq!(runs.len(), 16);
    assert_eq!(
        (
            runs[0].lr,
            runs[0].batch_size,
            runs[0].num_workers,
            runs[0].device
        ),
        (0.01, 1000, 0, Device::Cuda(0))
    );
    assert_eq!(runs[1].device, Device::Cpu);
    assert_eq!(
        (runs[2].num_workers, runs[4].batch_size, runs[8].lr),
        (1, 10000, 0.001)
    );
    assert_eq!(
        runs.iter().map(|r| r.index).collect::<Vec<_>>(),
        (1..=16).collect::<Vec<_>>()
    );
    assert_eq!(
        runs[3].to_string(),
        "Run(lr=0.01, batch_size=1000, num_workers=1, device='cpu')"
    );
}

#[test]
fn run_manager_records_loss_accuracy_and_durations_and_exports_them() {
    let ds = TensorDataset::new(
        Tensor::randn([40, 10], (Kind::Float, Device::Cpu)),
        Tensor::zeros([40], (Kind::Int64, Device::Cpu)),
    );
    let mut m = RunManager::new().runs_dir(scratch("run-manager-tensorboard"));
    let params = RunParams::new()
        .lr(&[0.01])
        .batch_size(&[10, 20])
        .num_workers(&[0])
        .device(&RunParams::available_devices());
    for run in RunBuilder::get_runs(&params) {
        let loader = DataLoader::new(&ds, run.batch_size)
            .num_workers(run.num_workers)
            .to_device(run.device, false);
        m.begin_run(&run);
        for _ in 0..2 {
            m.begin_epoch();
            for (_x, y) in &loader {
                // A perfect predictor of class 0 with a known loss of 0.5.
                let preds = Tensor::zeros([y.size()[0], 3], (Kind::Float, run.device)).index_fill(
                    1,
                    &Tensor::from_slice(&[0i64]).to_device(run.device),
                    1.0,
                );
                m.track_loss(&Tensor::from(0.5f32), y.size()[0]);
                m.track_num_correct(&preds, &y);
            }
            m.end_epoch();
        }
        m.end_run();
    }
    let n_devices = RunParams::available_devices().len();
    assert_eq!(m.results().len(), 4 * n_devices);
    let r = &m.results()[1];
    assert_eq!((r.run, r.epoch), (1, 2));
    assert!((r.loss - 0.5).abs() < 1e-9 && r.accuracy == 1.0);
    assert!(r.run_duration >= r.epoch_duration);
    let json = m.table().bundle().data.unwrap().1;
    // Two epochs per run, every device for batch size 10 before any for 20.
    assert_eq!(json["rows"][2 * n_devices - 1]["batch_size"], 10);
    assert_eq!(json["rows"][2 * n_devices]["batch_size"], 20);
    assert_eq!(json["columns"][0], "run");
    let dir = scratch("runs");
    m.save(dir.join("results")).unwrap();
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert!(csv.starts_with("run,epoch,loss,accuracy,epoch_duration,run_duration,lr,batch_size,num_workers,device\n1,1,0.5,1.0,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 4 * n_devices);
    let back: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(back["rows"].as_array().unwrap().len(), 4 * n_devices);
    let cmp = m.compare_devices();
    assert_eq!(cmp.rows.iter().find(|r| r.0 == "cpu").unwrap().2, Some(1.0));
}

#[test]
fn accuracy_helpers_count_argmax_matches() {
    let scores = Tensor::from_slice(&[0.1f32, 0.9, 0.8, 0.2, 0.3, 0.7]).view([3, 2]);
    let labels = Tensor::from_slice(&[1i64, 0, 0]);
    assert!((batch_accuracy(&scores, &labels) - 2.0 / 3.0).abs() < 1e-6);
    assert_eq!(num_correct(&scores, &labels), 2);
    let mut timer = Timer::start();
    assert!(timer.lap() >= 0.0 && timer.elapsed() >= 0.0);
}
