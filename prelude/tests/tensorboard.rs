//! TensorBoard event files: TFRecord framing and its CRCs against known vectors, PyTorch's file
//! and folder names, the first event, histograms over the default buckets, and make_grid.
//! tests/test_tensorboard.py reads what the writer makes with TensorBoard's own reader.

use crate::scratch;
use tchbook_prelude::prelude::*;
use tchbook_prelude::tensorboard::record::{
    RecordError, masked_crc32c, read_records, write_record,
};
use tchbook_prelude::tensorboard::{Histogram, default_bucket_edges};

/// `((crc >> 15) | (crc << 17)) + 0xa282ead8`, written out as TensorFlow's `crc32c::Mask` (the
/// prelude rotates; the test keeps the formula as the format's documents give it).
#[allow(clippy::manual_rotate)]
fn mask(crc: u32) -> u32 {
    ((crc >> 15) | (crc << 17)).wrapping_add(0xa282_ead8)
}

#[test]
fn masked_crc32c_masks_the_castagnoli_check_value() {
    // CRC32C("123456789") = 0xE3069283, the check value of the Castagnoli polynomial.
    assert_eq!(mask(0xE306_9283), 0xC78A_B0E5);
    assert_eq!(masked_crc32c(b"123456789"), 0xC78A_B0E5);
    // TensorBoard's own masked_crc32c (tensorflow_stub) gives these for a record of "abc".
    assert_eq!(masked_crc32c(&3u64.to_le_bytes()), 0x0E49_99B0);
    assert_eq!(masked_crc32c(b"abc"), 0x21F1_576E);
}

#[test]
fn record_is_length_crc_data_crc_little_endian() {
    let mut out = Vec::new();
    write_record(&mut out, b"abc").unwrap();
    let mut expected = Vec::new();
    expected.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
    expected.extend_from_slice(&0x0E49_99B0u32.to_le_bytes());
    expected.extend_from_slice(b"abc");
    expected.extend_from_slice(&0x21F1_576Eu32.to_le_bytes());
    assert_eq!(out, expected);
}

#[test]
fn damaged_or_cut_records_are_rejected_where_they_start() {
    let mut file = Vec::new();
    write_record(&mut file, b"first").unwrap();
    write_record(&mut file, b"second").unwrap();
    assert_eq!(
        read_records(&file).unwrap(),
        [b"first".to_vec(), b"second".to_vec()]
    );
    let second = 8 + 4 + 5 + 4;
    let mut flipped = file.clone();
    flipped[second + 12] ^= 0x01;
    assert_eq!(
        read_records(&flipped),
        Err(RecordError::DataCrc { offset: second })
    );
    let mut bad_length = file.clone();
    bad_length[second] = 7;
    assert_eq!(
        read_records(&bad_length),
        Err(RecordError::LengthCrc { offset: second })
    );
    assert_eq!(
        read_records(&file[..file.len() - 1]),
        Err(RecordError::Truncated { offset: second })
    );
}

#[test]
fn writer_file_is_named_as_pytorch_names_it_and_starts_with_the_file_version() {
    let dir = scratch("tb-writer");
    let tb = SummaryWriter::with_log_dir(&dir);
    let name = tb
        .event_file()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let parts: Vec<&str> = name.split('.').collect();
    // events.out.tfevents.<10-digit seconds>.<hostname>.<pid>.<n>; a hostname may hold dots.
    assert_eq!(&parts[..3], ["events", "out", "tfevents"]);
    assert_eq!(parts[3].len(), 10);
    assert!(parts[3].chars().all(|c| c.is_ascii_digit()));
    assert_eq!(parts[parts.len() - 2], std::process::id().to_string());
    assert_eq!(parts[parts.len() - 1], "0");
    // A second writer in the same folder and second takes the next number.
    let second = SummaryWriter::with_log_dir(&dir);
    assert_ne!(second.event_file(), tb.event_file());
    let bytes = std::fs::read(tb.event_file()).unwrap();
    let records = read_records(&bytes).unwrap();
    assert_eq!(records.len(), 1);
    // Event { wall_time (field 1, fixed64), file_version (field 3, string) = "brain.Event:2" }
    let first = &records[0];
    assert_eq!(first[0], 0x09);
    let wall_time = f64::from_le_bytes(first[1..9].try_into().unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        (now - wall_time).abs() < 60.0,
        "wall_time {wall_time}, now {now}"
    );
    assert_eq!(&first[9..], b"\x1a\x0dbrain.Event:2");
}

#[test]
fn writes_reach_the_file_on_flush_close_and_drop() {
    let dir = scratch("tb-flush");
    let size = |tb: &SummaryWriter| std::fs::metadata(tb.event_file()).unwrap().len();
    let mut tb = SummaryWriter::with_log_dir(dir.join("flush"));
    let before = size(&tb);
    tb.add_scalar("Loss", 0.5, 1);
    assert_eq!(
        size(&tb),
        before,
        "held in memory, as PyTorch's queue holds it"
    );
    tb.flush();
    assert!(size(&tb) > before);
    let path = tb.event_file().to_path_buf();
    tb.add_scalar("Loss", 0.25, 2);
    drop(tb);
    assert_eq!(
        read_records(&std::fs::read(&path).unwrap()).unwrap().len(),
        3
    );
}

#[test]
fn run_folders_are_named_date_hostname_comment() {
    let dir = scratch("tb-runs");
    let run = &RunBuilder::get_runs(&RunParams::new().lr(&[0.01]).batch_size(&[100]))[0];
    let mut m = RunManager::new().runs_dir(&dir);
    m.begin_run(run);
    let log_dir = m.log_dir().unwrap().to_path_buf();
    m.end_run();
    assert!(m.log_dir().is_none());
    assert_eq!(log_dir.parent().unwrap(), dir);
    let name = log_dir.file_name().unwrap().to_string_lossy().into_owned();
    // Nov25_20-19-40_<hostname>-lr=0.01,batch_size=100,num_workers=0,device=cpu
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    assert!(months.contains(&&name[..3]), "{name}");
    let digits = |range: std::ops::Range<usize>| name[range].chars().all(|c| c.is_ascii_digit());
    assert!(
        digits(3..5) && digits(6..8) && digits(9..11) && digits(12..14),
        "{name}"
    );
    assert_eq!(
        (&name[5..6], &name[8..9], &name[11..12], &name[14..15]),
        ("_", "-", "-", "_")
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(
        &name[15..],
        format!(
            "{}-lr=0.01,batch_size=100,num_workers=0,device=cpu",
            host.trim()
        )
    );
}

#[test]
fn histogram_keeps_the_buckets_from_the_first_to_the_last_value() {
    let edges = default_bucket_edges();
    let h = Histogram::of(&Tensor::from_slice(&[0.5f64, 0.5, 2.0, -1.0]));
    assert_eq!(
        (h.min, h.max, h.num, h.sum, h.sum_squares),
        (-1.0, 2.0, 4.0, 2.0, 5.5)
    );
    assert_eq!(h.bucket.len(), h.bucket_limit.len());
    assert_eq!(
        h.bucket[0], 0.0,
        "the empty bucket that keeps the leftmost edge"
    );
    assert_eq!(h.bucket.iter().sum::<f64>(), 4.0);
    // Every limit is one of the default edges, consecutive, and the first bucket holding a
    // value is the one whose left edge is the largest edge <= -1.
    let first = edges.iter().position(|&e| e == h.bucket_limit[0]).unwrap();
    assert_eq!(
        &edges[first..first + h.bucket_limit.len()],
        &h.bucket_limit[..]
    );
    assert!(edges[first] <= -1.0 && edges[first + 1] > -1.0);
    let last = *h.bucket_limit.last().unwrap();
    assert!(last > 2.0 && edges[first + h.bucket_limit.len() - 2] <= 2.0);
    // 0.5 twice falls in one bucket.
    assert!(h.bucket.contains(&2.0));
}

#[test]
fn histogram_of_nothing_is_an_error_naming_the_tag() {
    let dir = scratch("tb-empty");
    let mut tb = SummaryWriter::with_log_dir(&dir);
    let empty = Tensor::zeros([0], (Kind::Float, Device::Cpu));
    let err = tb
        .f_add_histogram("fc1.weight.grad", &empty, 1)
        .unwrap_err();
    assert!(err.to_string().contains("\"fc1.weight.grad\""), "{err}");
    let batch = Tensor::zeros([2, 1, 4, 4], (Kind::Float, Device::Cpu));
    let err = tb.f_add_image("images", &batch, 0).unwrap_err();
    assert!(err.to_string().contains("make_grid"), "{err}");
}

#[test]
fn make_grid_lays_out_a_batch_as_torchvision_does() {
    // Image k is filled with k + 1, so each cell of the grid says which image landed there.
    let batch = Tensor::arange_start(1, 11, (Kind::Float, Device::Cpu)).view([10, 1, 1, 1])
        * Tensor::ones([10, 1, 3, 4], (Kind::Float, Device::Cpu));
    let grid = make_grid(&batch);
    // 8 per row: 2 rows of (3 + 2) and 8 columns of (4 + 2), plus 2 of padding after the last.
    assert_eq!(grid.size(), [3, 2 * 5 + 2, 8 * 6 + 2]);
    let at = |c: i64, y: i64, x: i64| grid.double_value(&[c, y, x]);
    assert_eq!(at(0, 2, 2), 1.0); // image 0 starts after the padding
    assert_eq!(at(2, 4, 5), 1.0); // one-channel images are repeated into three
    assert_eq!(at(0, 2, 8), 2.0); // image 1, one column of images on
    assert_eq!(at(0, 7, 2), 9.0); // image 8 opens the second row
    assert_eq!(at(0, 7, 8), 10.0);
    assert_eq!(at(0, 7, 14), 0.0); // no image 10: padding value
    assert_eq!(at(0, 0, 0), 0.0);
    let one = make_grid(&batch.narrow(0, 0, 1));
    assert_eq!(
        one.size(),
        [3, 3, 4],
        "a batch of one comes back without padding"
    );
}

#[test]
fn run_manager_logs_images_scalars_and_histograms_per_epoch() {
    // The example trains deeplizard's Network for two epochs under a RunManager, as notebook 04
    // does, and writes a SummaryWriter run by hand beside it.
    let dir = scratch("tb-manager");
    let status = std::process::Command::new(crate::example("tensorboard_run"))
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let run = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.to_string_lossy()
                .ends_with("-lr=0.01,batch_size=10,num_workers=0,device=cpu")
        })
        .unwrap();
    let files: Vec<_> = std::fs::read_dir(&run).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one event file per run");
    let records = read_records(&std::fs::read(files[0].path()).unwrap()).unwrap();
    let with_tag = |tag: &str| {
        // A Summary.Value's tag: field 1, length-delimited, then the tag's bytes.
        let needle: Vec<u8> = [&[0x0a, tag.len() as u8][..], tag.as_bytes()].concat();
        records
            .iter()
            .filter(|r| r.windows(needle.len()).any(|w| w == needle))
            .count()
    };
    assert_eq!(with_tag("images"), 1);
    for tag in ["Loss", "Number Correct", "Accuracy"] {
        assert_eq!(with_tag(tag), 2, "{tag}: one per epoch");
    }
    let vs = nn::VarStore::new(Device::Cpu);
    let _network = Network::new(&vs.root());
    for (name, _) in named_parameters(&vs).iter() {
        assert_eq!(with_tag(name), 2, "{name}");
        assert_eq!(with_tag(&format!("{name}.grad")), 2, "{name}.grad");
    }
    // file_version + image + 2 epochs × (3 scalars + 10 parameters × 2 histograms)
    assert_eq!(records.len(), 1 + 1 + 2 * (3 + 10 * 2));
}
