use crate::scratch;
use tchbook_prelude::prelude::*;

fn numbered(n: i64) -> TensorDataset {
    let x = Tensor::arange(n * 2, (Kind::Float, Device::Cpu)).view([n, 2]);
    let y = Tensor::arange(n, (Kind::Int64, Device::Cpu));
    TensorDataset::new(x, y)
}

fn epoch(loader: &DataLoader) -> Vec<Vec<i64>> {
    loader
        .iter()
        .map(|(x, y)| {
            // inputs and targets stay paired: row i of x is [2i, 2i+1] for label i
            let first = Vec::<f32>::try_from(x.select(1, 0)).unwrap();
            let labels = Vec::<i64>::try_from(&y).unwrap();
            assert_eq!(
                first,
                labels.iter().map(|&l| (2 * l) as f32).collect::<Vec<_>>()
            );
            labels
        })
        .collect()
}

#[test]
fn unshuffled_batches_come_in_order_with_a_short_last_batch() {
    let loader = DataLoader::new(numbered(10), 4);
    assert_eq!(loader.len(), 3);
    assert_eq!(loader.dataset_len(), 10);
    assert_eq!(
        epoch(&loader),
        vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
    );
}

#[test]
fn drop_last_skips_the_short_batch() {
    let loader = DataLoader::new(numbered(10), 4).drop_last(true);
    assert_eq!(loader.len(), 2);
    assert_eq!(epoch(&loader), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
}

#[test]
fn a_shuffled_epoch_visits_every_sample_once_and_the_seed_fixes_the_order() {
    let a = DataLoader::new(numbered(103), 10).shuffle(true).seed(42);
    let b = DataLoader::new(numbered(103), 10).shuffle(true).seed(42);
    let (a1, a2) = (epoch(&a), epoch(&a));
    let (b1, b2) = (epoch(&b), epoch(&b));
    assert_eq!(a1, b1);
    assert_eq!(a2, b2);
    assert_ne!(a1, a2, "each epoch reshuffles");
    let mut all: Vec<i64> = a1.concat();
    assert_ne!(all, (0..103).collect::<Vec<_>>());
    all.sort();
    assert_eq!(all, (0..103).collect::<Vec<_>>());
    let c = DataLoader::new(numbered(103), 10).shuffle(true).seed(43);
    assert_ne!(epoch(&c), a1);
}

#[test]
fn workers_give_the_same_batches_as_no_workers() {
    let ds = numbered(97);
    let serial = DataLoader::new(&ds, 8).shuffle(true).seed(5);
    let parallel = DataLoader::new(&ds, 8)
        .shuffle(true)
        .seed(5)
        .num_workers(3)
        .prefetch_factor(1);
    for _ in 0..2 {
        assert_eq!(epoch(&serial), epoch(&parallel));
    }
    // More workers than batches, and drop_last, too.
    let few = DataLoader::new(&ds, 50).num_workers(4).drop_last(true);
    assert_eq!(epoch(&few), vec![(0..50).collect::<Vec<i64>>()]);
}

#[test]
fn stopping_early_leaves_no_worker_blocked() {
    let loader = DataLoader::new(numbered(1000), 10).num_workers(2);
    for (i, _) in loader.iter().enumerate() {
        if i == 3 {
            break;
        }
    }
    assert_eq!(loader.iter().count(), 100);
}

#[test]
fn an_unseeded_shuffle_follows_torch_manual_seed() {
    let ds = numbered(50);
    let loader = DataLoader::new(&ds, 50).shuffle(true);
    tch::manual_seed(7);
    let a = epoch(&loader);
    tch::manual_seed(7);
    let b = epoch(&loader);
    assert_eq!(a, b);
}

#[test]
fn batches_move_to_the_requested_device() {
    let loader = DataLoader::new(numbered(6), 4)
        .pin_memory(true)
        .to_device(best_device(), true);
    for (x, y) in &loader {
        assert_eq!((x.device(), y.device()), (best_device(), best_device()));
    }
}

#[test]
fn pinned_batches_hold_the_same_values_in_page_locked_memory_where_cuda_is() {
    let plain: Vec<(Tensor, Tensor)> = DataLoader::new(numbered(6), 4).iter().collect();
    let pinned: Vec<(Tensor, Tensor)> = DataLoader::new(numbered(6), 4)
        .pin_memory(true)
        .iter()
        .collect();
    assert_eq!(plain.len(), pinned.len());
    for ((px, py), (x, y)) in plain.iter().zip(&pinned) {
        assert_eq!((x.device(), y.device()), (Device::Cpu, Device::Cpu));
        assert!(x.equal(px) && y.equal(py));
        // Page-locked memory needs a CUDA driver; without one the loader leaves batches alone.
        if tch::Cuda::is_available() {
            assert!(x.is_pinned(Device::Cuda(0)) && y.is_pinned(Device::Cuda(0)));
        }
    }
}

#[test]
fn a_dataset_of_samples_is_batched_by_stacking() {
    struct Squares;
    impl Dataset for Squares {
        fn len(&self) -> usize {
            5
        }
        fn get(&self, i: usize) -> (Tensor, Tensor) {
            (Tensor::from(i as f32), Tensor::from((i * i) as i64))
        }
    }
    let loader = DataLoader::new(std::sync::Arc::new(Squares), 2).num_workers(2);
    let ys: Vec<Vec<i64>> = loader
        .iter()
        .map(|(_, y)| Vec::<i64>::try_from(&y).unwrap())
        .collect();
    assert_eq!(ys, vec![vec![0, 1], vec![4, 9], vec![16]]);
}

const INTERRUPT_CHILD: &str = "loader::interrupt_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn interrupt_child() {
    if std::env::var("TCHBOOK_TEST_CHILD").as_deref() != Ok(INTERRUPT_CHILD) {
        return;
    }
    let vs = nn::VarStore::new(Device::Cpu);
    let model = TestModel::new(&vs.root());
    let ds = TensorDataset::new(
        Tensor::ones([100, 10], (Kind::Float, Device::Cpu)),
        Tensor::ones([100], (Kind::Float, Device::Cpu)),
    );
    let loader = DataLoader::new(&ds, 10).num_workers(1);
    let mut steps = 0;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for (x, _) in &loader {
            let _ = model.forward(&x);
            steps += 1;
            if steps == 3 {
                interrupt::raise(); // what the SIGINT handler does
            }
        }
    }));
    let message = result
        .unwrap_err()
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    println!("steps={steps} message={message}");
    // The model survives the interrupted loop.
    println!(
        "model still works: {:?}",
        model
            .forward(&Tensor::ones([1, 10], (Kind::Float, Device::Cpu)))
            .size()
    );
}

#[test]
fn an_interrupt_stops_the_loader_with_keyboard_interrupt_and_keeps_the_model() {
    let _ = scratch("loader-interrupt");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            INTERRUPT_CHILD,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TCHBOOK_TEST_CHILD", INTERRUPT_CHILD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("steps=3 message=KeyboardInterrupt: interrupted by the user"),
        "{stdout}"
    );
    assert!(stdout.contains("model still works: [1, 1]"), "{stdout}");
}
