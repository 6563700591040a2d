use crate::scratch;
use std::io::Write;
use tchbook_prelude::data::{DataError, IRIS_CSV};
use tchbook_prelude::prelude::*;

/// Writes a CIFAR-10 binary batch of `labels` with pixel value `label * 10` everywhere.
fn cifar_batch(path: &std::path::Path, labels: &[u8]) {
    let mut bytes = Vec::new();
    for &l in labels {
        bytes.push(l);
        bytes.extend(std::iter::repeat_n(l * 10, 3072));
    }
    std::fs::write(path, bytes).unwrap();
}

fn idx_images(n: u32, value: impl Fn(u32) -> u8) -> Vec<u8> {
    let mut b = vec![0, 0, 8, 3];
    b.extend(n.to_be_bytes());
    b.extend(28u32.to_be_bytes());
    b.extend(28u32.to_be_bytes());
    for i in 0..n {
        b.extend(std::iter::repeat_n(value(i), 784));
    }
    b
}

fn idx_labels(labels: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 8, 1];
    b.extend((labels.len() as u32).to_be_bytes());
    b.extend(labels);
    b
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn cifar_loader_reads_binary_batches_with_labels_and_pixels() {
    let root = scratch("cifar-ok");
    let dir = root.join("cifar-10-batches-bin");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 1..=5 {
        cifar_batch(&dir.join(format!("data_batch_{i}.bin")), &[i as u8, 0]);
    }
    cifar_batch(&dir.join("test_batch.bin"), &[9, 3, 7]);
    let test = Cifar10::new(&root, false, &transforms::ToTensor());
    assert_eq!(test.len(), 3);
    assert_eq!(test.inputs().size(), [3, 3, 32, 32]);
    assert_eq!(Vec::<i64>::try_from(test.targets()).unwrap(), [9, 3, 7]);
    assert!((test.inputs().get(1).max().double_value(&[]) - 30.0 / 255.0).abs() < 1e-6);
    assert!(!test.is_standin());
    assert_eq!(test.classes()[0], "plane");
    let train = Cifar10::new(
        &root,
        true,
        &transforms::Normalize([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]),
    );
    assert_eq!(
        Vec::<i64>::try_from(train.targets()).unwrap(),
        [1, 0, 2, 0, 3, 0, 4, 0, 5, 0]
    );
}

#[test]
fn cifar_loader_rejects_truncated_batch_file() {
    let root = scratch("cifar-truncated");
    cifar_batch(&root.join("test_batch.bin"), &[1, 2]);
    let bytes = std::fs::read(root.join("test_batch.bin")).unwrap();
    std::fs::write(root.join("test_batch.bin"), &bytes[..bytes.len() - 100]).unwrap();
    let e = Cifar10::f_new(&root, false, &transforms::ToTensor()).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, DataError::Format { .. }));
    assert!(
        text.contains("test_batch.bin") && text.contains("truncated"),
        "{text}"
    );
}

#[test]
fn cifar_loader_rejects_a_corrupt_label() {
    let root = scratch("cifar-label");
    cifar_batch(&root.join("test_batch.bin"), &[1, 200]);
    let text = Cifar10::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("test_batch.bin") && text.contains("record 1") && text.contains("200"),
        "{text}"
    );
}

#[test]
fn cifar_loader_names_the_missing_file_and_what_to_do() {
    let root = scratch("cifar-missing");
    let text = Cifar10::f_new(&root, true, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(text.contains("cifar-10-batches-bin"), "{text}");
    says_how_to_download(&text, KnownDataset::Cifar10, &root);
}

#[test]
fn idx_loader_reads_plain_and_gzipped_files() {
    let root = scratch("idx-ok");
    let raw = root.join("FashionMNIST").join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(
        raw.join("train-images-idx3-ubyte.gz"),
        gz(&idx_images(4, |i| i as u8 * 50)),
    )
    .unwrap();
    std::fs::write(
        raw.join("train-labels-idx1-ubyte.gz"),
        gz(&idx_labels(&[3, 1, 4, 1])),
    )
    .unwrap();
    std::fs::write(raw.join("t10k-images-idx3-ubyte"), idx_images(2, |_| 255)).unwrap();
    std::fs::write(raw.join("t10k-labels-idx1-ubyte"), idx_labels(&[5, 9])).unwrap();
    let train = FashionMnist::new(&root, true, &transforms::ToTensor());
    assert_eq!(train.inputs().size(), [4, 1, 28, 28]);
    assert_eq!(Vec::<i64>::try_from(train.targets()).unwrap(), [3, 1, 4, 1]);
    assert!(
        (train.inputs().get(2).mean(Kind::Float).double_value(&[]) - 100.0 / 255.0).abs() < 1e-6
    );
    let test = FashionMnist::new(
        &root,
        false,
        &transforms::Compose(vec![
            transforms::ToTensor(),
            transforms::Normalize([0.5], [0.5]),
        ]),
    );
    assert_eq!(test.inputs().max().double_value(&[]), 1.0);
    assert_eq!(test.classes()[9], "Ankle boot");
}

#[test]
fn idx_loader_rejects_truncated_wrong_magic_and_mismatched_counts() {
    let root = scratch("idx-bad");
    let raw = root.join("MNIST").join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let images = idx_images(3, |_| 1);
    std::fs::write(
        raw.join("t10k-images-idx3-ubyte"),
        &images[..images.len() - 10],
    )
    .unwrap();
    std::fs::write(raw.join("t10k-labels-idx1-ubyte"), idx_labels(&[1, 2, 3])).unwrap();
    let text = Mnist::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("t10k-images-idx3-ubyte") && text.contains("truncated"),
        "{text}"
    );

    let mut wrong = images.clone();
    wrong[3] = 1; // one dimension: a label file where images belong
    std::fs::write(raw.join("t10k-images-idx3-ubyte"), &wrong).unwrap();
    let text = Mnist::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(text.contains("1 dimensions, expected 3"), "{text}");

    std::fs::write(raw.join("t10k-images-idx3-ubyte"), &images).unwrap();
    std::fs::write(raw.join("t10k-labels-idx1-ubyte"), idx_labels(&[1, 2])).unwrap();
    let text = Mnist::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("2 labels") && text.contains("3 images"),
        "{text}"
    );

    std::fs::write(raw.join("t10k-labels-idx1-ubyte"), idx_labels(&[1, 2, 12])).unwrap();
    let text = Mnist::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("t10k-labels-idx1-ubyte") && text.contains("corrupt label 12 at index 2"),
        "{text}"
    );

    std::fs::write(raw.join("t10k-labels-idx1-ubyte.gz"), b"not gzip").unwrap();
    std::fs::remove_file(raw.join("t10k-labels-idx1-ubyte")).unwrap();
    let text = Mnist::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("t10k-labels-idx1-ubyte.gz") && text.contains("gzip"),
        "{text}"
    );
}

#[test]
fn shipped_iris_is_the_real_data_set() {
    let iris = load_iris().unwrap();
    assert_eq!(iris.data.size(), [150, 4]);
    assert_eq!(iris.data.kind(), Kind::Float);
    // Column sums of Fisher's data as scikit-learn ships it.
    let sums = Vec::<f64>::try_from(iris.data.to_kind(Kind::Double).sum_dim_intlist(
        0,
        false,
        Kind::Double,
    ))
    .unwrap();
    for (s, want) in sums.iter().zip([876.5, 458.6, 563.7, 179.9]) {
        assert!((s - want).abs() < 1e-3, "{sums:?}");
    }
    let counts = iris.target.bincount::<Tensor>(None, 3);
    assert_eq!(Vec::<i64>::try_from(counts).unwrap(), [50, 50, 50]);
    assert!(IRIS_CSV.starts_with("sepal length (cm),sepal width (cm),petal length (cm),petal width (cm),target\n5.1,3.5,1.4,0.2,0.0\n"));
}

#[test]
fn train_test_split_picks_the_rows_scikit_learn_picks() {
    let iris = load_iris().unwrap();
    let (x_train, x_test, y_train, y_test) = train_test_split(&iris.data, &iris.target, 0.2, 33);
    assert_eq!(
        (
            x_train.size()[0],
            x_test.size()[0],
            y_train.size()[0],
            y_test.size()[0]
        ),
        (120, 30, 120, 30)
    );
    // numpy.random.RandomState(33).permutation(150) starts 96, 65, 29, 54, 134, 100, ...
    for (k, row) in [96i64, 65, 29, 54, 134, 100].iter().enumerate() {
        assert!(
            x_test.get(k as i64).equal(&iris.data.get(*row)),
            "test row {k}"
        );
    }
    // RandomState(0).permutation(10) = [2, 8, 4, 9, 1, 6, 7, 3, 0, 5]: test = first ceil(2.5),
    // train = the next floor(7.5).
    let x = Tensor::arange(10, (Kind::Int64, Device::Cpu));
    let (tr, te, _, _) = train_test_split(&x, &x, 0.25, 0);
    assert_eq!(Vec::<i64>::try_from(&te).unwrap(), [2, 8, 4]);
    assert_eq!(Vec::<i64>::try_from(&tr).unwrap(), [9, 1, 6, 7, 3, 0, 5]);
}

#[test]
fn csv_reader_codes_text_columns_and_names_bad_lines() {
    let dir = scratch("csv");
    let path = dir.join("t.csv");
    std::fs::write(
        &path,
        "a,b,species\n1,2.5,setosa\n3,4,virginica\n5,6,setosa\n",
    )
    .unwrap();
    let df = read_csv(&path);
    assert_eq!(df.len(), 3);
    assert_eq!(
        Vec::<f64>::try_from(df.column("species")).unwrap(),
        [0.0, 1.0, 0.0]
    );
    assert_eq!(df.categories("species").unwrap(), ["setosa", "virginica"]);
    assert_eq!(df.drop(&["species"]).values().size(), [3, 2]);
    std::fs::write(&path, "a,b\n1,2\n3\n").unwrap();
    let text = tchbook_prelude::data::f_read_csv(&path)
        .unwrap_err()
        .to_string();
    assert!(text.contains("t.csv") && text.contains("line 3"), "{text}");
}

#[test]
fn standins_are_marked_and_in_the_real_formats() {
    let root = scratch("standin");
    let located = Cifar10::locate_or_standin(&root, 50, 20).unwrap();
    assert!(located.is_standin());
    assert!(
        located.describe().starts_with("stand-in CIFAR-10"),
        "{}",
        located.describe()
    );
    let train = located.train(&transforms::ToTensor()).unwrap();
    assert_eq!(train.len(), 50);
    assert!(train.is_standin() && train.name().contains("(stand-in)"));
    assert!(train.bundle().text.contains("(stand-in)"));
    // The files are plain CIFAR-10 binary batches: 10 records in each of the five.
    let size = std::fs::metadata(root.join("cifar-10-batches-bin/data_batch_3.bin"))
        .unwrap()
        .len();
    assert_eq!(size, 10 * 3073);
    // Found again, not rewritten.
    let again = Cifar10::locate_or_standin(&root, 999, 999).unwrap();
    assert_eq!(again.test(&transforms::ToTensor()).unwrap().len(), 20);
    // IDX stand-ins read back through the real reader.
    let f = FashionMnist::locate_or_standin(&root, 30, 10).unwrap();
    assert_eq!(
        f.test(&transforms::ToTensor()).unwrap().inputs().size(),
        [10, 1, 28, 28]
    );
}

#[test]
fn the_cifar_net_learns_the_standin_classes() {
    let root = scratch("standin-learn-cifar");
    standin::cifar10(&root, 2000, 500, 3).unwrap();
    let t = transforms::Compose(vec![
        transforms::ToTensor(),
        transforms::Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
    ]);
    let train = Cifar10::new(&root, true, &t);
    let test = Cifar10::new(&root, false, &t);
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let net = Net::new(&vs.root());
    let mut opt = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    .build(&vs, 0.01)
    .unwrap();
    // Two epochs, as the tutorial trains: from PyTorch's initialisation (narrower than tch's)
    // one epoch of 63 steps is not always enough to clear 30 %.
    let loader = DataLoader::new(&train, 32).shuffle(true).seed(1);
    for _epoch in 0..2 {
        for (images, labels) in &loader {
            let loss = net.forward(&images).cross_entropy_for_logits(&labels);
            opt.backward_step(&loss);
        }
    }
    let acc = no_grad(|| batch_accuracy(&net.forward(test.inputs()), test.targets()));
    assert!(
        acc > 0.3,
        "accuracy after two epochs on CIFAR stand-ins: {acc}"
    );
}

#[test]
fn a_network_learns_the_standin_classes() {
    let root = scratch("standin-learn");
    standin::fashion_mnist(&root, 2000, 500, 7).unwrap();
    let t = transforms::Compose(vec![
        transforms::ToTensor(),
        transforms::Normalize([0.5], [0.5]),
    ]);
    let train = FashionMnist::new(&root, true, &t);
    let test = FashionMnist::new(&root, false, &t);
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let network = Network::new(&vs.root());
    let mut opt = nn::Adam::default().build(&vs, 0.01).unwrap();
    for (images, labels) in &DataLoader::new(&train, 100).shuffle(true).seed(1) {
        let loss = network.forward(&images).cross_entropy_for_logits(&labels);
        opt.backward_step(&loss);
    }
    let acc = no_grad(|| batch_accuracy(&network.forward(test.inputs()), test.targets()));
    assert!(acc > 0.5, "accuracy after one epoch on stand-ins: {acc}");
}

/// What a missing data set's errors tell the user to run, with and without the `fetch` feature.
fn says_how_to_download(text: &str, set: KnownDataset, root: &std::path::Path) {
    if cfg!(feature = "fetch") {
        assert!(
            text.contains(&format!("fetch(KnownDataset::{set:?}, {root:?})")),
            "{text}"
        );
    } else {
        let command = format!(
            "tchbook download {} --root {}",
            set.command_name(),
            root.display()
        );
        assert!(text.contains(&command), "names the command: {text}");
        assert!(
            text.contains(":dep tchbook_prelude = { path = ")
                && text.contains("features = [\"fetch\"]"),
            "or the :dep line that turns the feature on: {text}"
        );
    }
    assert!(
        text.contains(&format!("{}::locate_or_standin(", set.type_name())),
        "{text}"
    );
}

#[test]
fn idx_loader_names_the_missing_file_and_how_to_download_it() {
    let root = scratch("idx-missing");
    let text = Mnist::f_new(&root, false, &transforms::ToTensor())
        .unwrap_err()
        .to_string();
    assert!(text.contains("t10k-images-idx3-ubyte"), "{text}");
    says_how_to_download(&text, KnownDataset::Mnist, &root);
}

#[cfg(not(feature = "fetch"))]
#[test]
fn without_the_fetch_feature_fetch_says_what_to_run_instead_of_downloading() {
    let root = scratch("no-fetch");
    let e = tchbook_prelude::data::f_fetch(KnownDataset::FashionMnist, &root).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, DataError::Missing { .. }), "{e:?}");
    assert!(text.contains("without its `fetch` feature"), "{text}");
    says_how_to_download(&text, KnownDataset::FashionMnist, &root);
    // Real files already there need no download, with or without the feature.
    let dir = KnownDataset::FashionMnist.dir(&root);
    std::fs::create_dir_all(&dir).unwrap();
    for f in KnownDataset::FashionMnist.files() {
        std::fs::write(dir.join(f), b"").unwrap();
    }
    assert_eq!(
        tchbook_prelude::data::f_fetch(KnownDataset::FashionMnist, &root).unwrap(),
        dir
    );
}

/// The download itself is tchbook-fetch's (tested there against a loopback server); here, that
/// the prelude's error adds the way out a notebook has.
#[cfg(feature = "fetch")]
#[test]
fn fetch_fails_with_a_clear_message_when_offline() {
    // TCHBOOK_DATA_MIRROR replaces the canonical locations: no traffic leaves the machine.
    // (One test sets it, so parallel tests cannot race on it.)
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var("TCHBOOK_DATA_MIRROR", "http://127.0.0.1:9/") };
    let e = tchbook_prelude::data::f_fetch(KnownDataset::Mnist, scratch("fetch")).unwrap_err();
    // SAFETY: as above.
    unsafe { std::env::remove_var("TCHBOOK_DATA_MIRROR") };
    let text = e.to_string();
    assert!(matches!(e, DataError::Download(_)));
    assert!(
        text.contains("could not download MNIST") && text.contains("127.0.0.1:9"),
        "{text}"
    );
    assert!(
        text.contains("Mnist::locate_or_standin"),
        "says what to do next: {text}"
    );
}
