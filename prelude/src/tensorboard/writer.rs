//! `torch.utils.tensorboard.SummaryWriter`: one event file per writer, in PyTorch's layout.

use super::histogram::Histogram;
use super::image::image_png;
use super::proto::{Event, HistogramProto, Image, Kind, Summary, Value, What};
use super::record::write_record;
use prost::Message;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tch::Tensor;

/// PyTorch's `max_queue`: events held before a flush.
const MAX_QUEUE: usize = 10;
/// PyTorch's `flush_secs`: the longest an event waits in memory while events keep coming.
const FLUSH_SECS: Duration = Duration::from_secs(120);

/// PyTorch's `SummaryWriter`: writes scalars, histograms and images to a TensorBoard event file
/// that `tensorboard --logdir runs` shows, as `torch.utils.tensorboard` writes them.
///
/// - [`SummaryWriter::new`] logs to `runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname>` (local time, as
///   PyTorch names it), [`with_comment`](Self::with_comment) appends a comment to that name,
///   [`with_log_dir`](Self::with_log_dir) takes the folder as given.
/// - The file is `events.out.tfevents.<unix seconds>.<hostname>.<pid>.<n>`; its first event is
///   `file_version: "brain.Event:2"`. `<n>` is the first number whose file does not exist yet
///   (PyTorch counts writers in the process; a notebook's cells each have their own copy of the
///   prelude, so a counter would start again at 0 in every cell).
/// - Events reach the file every 10 events, with the first event written 2 minutes or more
///   after the last flush (PyTorch's `max_queue` and `flush_secs`), on [`flush`](Self::flush),
///   on [`close`](Self::close), and when the writer is dropped. PyTorch also flushes from a
///   thread every 2 minutes; this writer has no thread, so call `flush()` to show a run in
///   TensorBoard while it is still going.
///
/// `add_graph` is not provided: TensorBoard's graph view reads a `GraphDef`, which PyTorch makes
/// by tracing the module with TorchScript and reading the traced graph's nodes (`aten::` ops
/// scoped by submodule, with their inputs and shapes); tch can trace a closure
/// (`CModule::create_by_tracing`) but gives no access to the traced graph's nodes, so there is
/// nothing faithful to write. The autograd graph behind a forward pass is reachable (the shim
/// reads `grad_fn` already), but it is the backward graph (`AddmmBackward0`, `AccumulateGrad`),
/// without modules or shapes: a different picture under the same name.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let mut tb = SummaryWriter::with_comment("-lr=0.01,batch_size=100");
/// let images = Tensor::rand([16, 1, 28, 28], (Kind::Float, Device::Cpu));
/// tb.add_image("images", &make_grid(&images), 0);
/// for epoch in 0..3 {
///     tb.add_scalar("Loss", 1.0 / (epoch as f64 + 1.0), epoch);
///     tb.add_histogram("conv1.weight", &Tensor::randn([6, 1, 5, 5], (Kind::Float, Device::Cpu)), epoch);
/// }
/// tb.close(); // then: tensorboard --logdir runs
/// ```
pub struct SummaryWriter {
    log_dir: PathBuf,
    path: PathBuf,
    file: BufWriter<File>,
    queued: usize,
    last_flush: Instant,
}

impl SummaryWriter {
    /// `SummaryWriter()`: a new run in `runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname>`. Panics if
    /// the folder or file cannot be made; [`f_new`](Self::f_new) returns the error.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::new();
    /// println!("{}", tb.log_dir().display()); // runs/Nov25_20-19-40_myhost
    /// ```
    pub fn new() -> SummaryWriter {
        Self::with_comment("")
    }

    /// The fallible twin of [`new`](Self::new).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::f_new()?;
    /// # Ok::<(), tchbook_prelude::tensorboard::SummaryError>(())
    /// ```
    pub fn f_new() -> Result<SummaryWriter, SummaryError> {
        Self::f_with_comment("")
    }

    /// `SummaryWriter(comment=comment)`: `runs/<date>_<hostname><comment>`.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::with_comment("-lr=0.01,batch_size=100");
    /// assert!(tb.log_dir().to_string_lossy().ends_with("-lr=0.01,batch_size=100"));
    /// ```
    pub fn with_comment(comment: &str) -> SummaryWriter {
        Self::f_with_comment(comment).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`with_comment`](Self::with_comment).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::f_with_comment("-run1")?;
    /// # Ok::<(), tchbook_prelude::tensorboard::SummaryError>(())
    /// ```
    pub fn f_with_comment(comment: &str) -> Result<SummaryWriter, SummaryError> {
        Self::f_with_log_dir(Path::new("runs").join(run_dir_name(comment)))
    }

    /// `SummaryWriter(log_dir=dir)`: the event file goes into `dir` (made if missing).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let dir = std::env::temp_dir().join("tchbook-doc-summary-writer");
    /// let tb = SummaryWriter::with_log_dir(&dir);
    /// assert_eq!(tb.log_dir(), dir);
    /// assert!(tb.event_file().starts_with(&dir));
    /// ```
    pub fn with_log_dir(dir: impl AsRef<Path>) -> SummaryWriter {
        Self::f_with_log_dir(dir).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`with_log_dir`](Self::with_log_dir).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(SummaryWriter::f_with_log_dir("/proc/no-such-dir").is_err());
    /// ```
    pub fn f_with_log_dir(dir: impl AsRef<Path>) -> Result<SummaryWriter, SummaryError> {
        let log_dir = dir.as_ref().to_path_buf();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SummaryError::Io { path, source }
        };
        std::fs::create_dir_all(&log_dir).map_err(io(&log_dir))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let stem = format!(
            "events.out.tfevents.{:010}.{}.{}",
            now.as_secs(),
            crate::sys::hostname(),
            std::process::id()
        );
        let mut n = 0;
        let (path, file) = loop {
            let path = log_dir.join(format!("{stem}.{n}"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => break (path, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(io(&path)(e)),
            }
        };
        let mut writer = SummaryWriter {
            log_dir,
            path,
            file: BufWriter::new(file),
            queued: 0,
            last_flush: Instant::now(),
        };
        writer.write(0, What::FileVersion("brain.Event:2".into()))?;
        writer.f_flush()?;
        Ok(writer)
    }

    /// The run's folder (PyTorch's `get_logdir()`).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::new();
    /// assert!(tb.log_dir().starts_with("runs"));
    /// ```
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    /// The event file this writer writes.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::new();
    /// assert!(tb.event_file().file_name().unwrap().to_string_lossy().starts_with("events.out.tfevents."));
    /// ```
    pub fn event_file(&self) -> &Path {
        &self.path
    }

    /// `add_scalar(tag, value, global_step)`. Panics if the file cannot be written.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// tb.add_scalar("Loss", 0.25, 1);
    /// ```
    pub fn add_scalar(&mut self, tag: &str, value: f64, step: i64) {
        self.f_add_scalar(tag, value, step)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`add_scalar`](Self::add_scalar).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// tb.f_add_scalar("Loss", 0.25, 1)?;
    /// # Ok::<(), tchbook_prelude::tensorboard::SummaryError>(())
    /// ```
    pub fn f_add_scalar(&mut self, tag: &str, value: f64, step: i64) -> Result<(), SummaryError> {
        // PyTorch's scalar() stores a float32 simple_value, as TensorBoard's scalar plugin reads.
        self.summary(tag, Kind::SimpleValue(value as f32), step)
    }

    /// `add_histogram(tag, values, global_step)` with PyTorch's default buckets
    /// ([`Histogram`]). Panics on an empty tensor or if the file cannot be written.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// tb.add_histogram("fc1.weight", &Tensor::randn([120, 192], (Kind::Float, Device::Cpu)), 1);
    /// ```
    pub fn add_histogram(&mut self, tag: &str, values: &Tensor, step: i64) {
        self.f_add_histogram(tag, values, step)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`add_histogram`](Self::add_histogram).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// assert!(tb.f_add_histogram("empty", &Tensor::zeros([0], (Kind::Float, Device::Cpu)), 1).is_err());
    /// ```
    pub fn f_add_histogram(
        &mut self,
        tag: &str,
        values: &Tensor,
        step: i64,
    ) -> Result<(), SummaryError> {
        let h = Histogram::f_of(values).ok_or_else(|| SummaryError::EmptyHistogram {
            tag: tag.to_string(),
        })?;
        let histo = HistogramProto {
            min: h.min,
            max: h.max,
            num: h.num,
            sum: h.sum,
            sum_squares: h.sum_squares,
            bucket_limit: h.bucket_limit,
            bucket: h.bucket,
        };
        self.summary(tag, Kind::Histo(histo), step)
    }

    /// `add_image(tag, img_tensor, global_step)`: a `[C, H, W]` (or `[H, W]`) image, floats in
    /// 0..1 or `u8`, written as a PNG (one channel becomes RGB, as in PyTorch). Panics on any
    /// other shape or if the file cannot be written.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// let images = Tensor::rand([8, 1, 28, 28], (Kind::Float, Device::Cpu));
    /// tb.add_image("images", &make_grid(&images), 0);
    /// ```
    pub fn add_image(&mut self, tag: &str, image: &Tensor, step: i64) {
        self.f_add_image(tag, image, step)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`add_image`](Self::add_image).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// let batch = Tensor::rand([8, 1, 28, 28], (Kind::Float, Device::Cpu));
    /// assert!(tb.f_add_image("images", &batch, 0).is_err()); // a batch: make_grid it first
    /// ```
    pub fn f_add_image(
        &mut self,
        tag: &str,
        image: &Tensor,
        step: i64,
    ) -> Result<(), SummaryError> {
        let (png, height, width, colorspace) =
            image_png(image).map_err(|reason| SummaryError::BadImage {
                tag: tag.to_string(),
                reason,
            })?;
        let image = Image {
            height: height as i32,
            width: width as i32,
            colorspace,
            encoded_image_string: png,
        };
        self.summary(tag, Kind::Image(image), step)
    }

    /// Writes every event still in memory to the file. Panics if it cannot.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// tb.add_scalar("Loss", 0.25, 1);
    /// tb.flush(); // TensorBoard sees it now
    /// ```
    pub fn flush(&mut self) {
        self.f_flush().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`flush`](Self::flush).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut tb = SummaryWriter::new();
    /// tb.f_flush()?;
    /// # Ok::<(), tchbook_prelude::tensorboard::SummaryError>(())
    /// ```
    pub fn f_flush(&mut self) -> Result<(), SummaryError> {
        self.queued = 0;
        self.last_flush = Instant::now();
        self.file.flush().map_err(|source| SummaryError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// `close()`: flushes and closes the file. Panics if the last events cannot be written.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let tb = SummaryWriter::new();
    /// tb.close();
    /// ```
    pub fn close(self) {
        self.f_close().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`close`](Self::close).
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// SummaryWriter::new().f_close()?;
    /// # Ok::<(), tchbook_prelude::tensorboard::SummaryError>(())
    /// ```
    pub fn f_close(mut self) -> Result<(), SummaryError> {
        self.f_flush()
        // Drop flushes again: an empty buffer, nothing written.
    }

    fn summary(&mut self, tag: &str, value: Kind, step: i64) -> Result<(), SummaryError> {
        let summary = Summary {
            value: vec![Value {
                tag: tag.to_string(),
                value: Some(value),
            }],
        };
        self.write(step, What::Summary(summary))
    }

    fn write(&mut self, step: i64, what: What) -> Result<(), SummaryError> {
        let wall_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let event = Event {
            wall_time,
            step,
            what: Some(what),
        };
        write_record(&mut self.file, &event.encode_to_vec()).map_err(|source| {
            SummaryError::Io {
                path: self.path.clone(),
                source,
            }
        })?;
        self.queued += 1;
        if self.queued >= MAX_QUEUE || self.last_flush.elapsed() >= FLUSH_SECS {
            self.f_flush()?;
        }
        Ok(())
    }
}

impl Default for SummaryWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SummaryWriter {
    fn drop(&mut self) {
        // A writer dropped at the end of a cell or a run still leaves a complete file; an error
        // here has nowhere to go (flush or close first to see it).
        let _ = self.file.flush();
    }
}

/// `datetime.now().strftime('%b%d_%H-%M-%S') + '_' + socket.gethostname() + comment`.
pub(crate) fn run_dir_name(comment: &str) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let (month, day, hour, minute, second) = crate::sys::local_time(now.as_secs() as i64);
    format!(
        "{}{day:02}_{hour:02}-{minute:02}-{second:02}_{}{comment}",
        MONTHS[month],
        crate::sys::hostname()
    )
}

/// What went wrong in a [`SummaryWriter`] call, naming the file or the tag.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// use tchbook_prelude::tensorboard::SummaryError;
/// let mut tb = SummaryWriter::with_log_dir(std::env::temp_dir().join("tchbook-doc-summary-error"));
/// let batch = Tensor::zeros([4, 1, 28, 28], (Kind::Float, Device::Cpu));
/// match tb.f_add_image("images", &batch, 0) {
///     Err(SummaryError::BadImage { reason, .. }) => println!("not one image: {reason}"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug)]
pub enum SummaryError {
    /// The run folder or event file could not be made or written.
    Io {
        /// The folder or file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// `add_image` was given something that is not one image.
    BadImage {
        /// The image's tag.
        tag: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `add_histogram` was given no values that fit a bucket (an empty tensor, or all NaN).
    EmptyHistogram {
        /// The histogram's tag.
        tag: String,
    },
}

impl fmt::Display for SummaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryError::Io { path, source } => write!(
                f,
                "TensorBoard: cannot write {}: {source} (check that the folder is writable, or \
                 give SummaryWriter::with_log_dir another one)",
                path.display()
            ),
            SummaryError::BadImage { tag, reason } => write!(
                f,
                "add_image({tag:?}): {reason}; a batch [B, C, H, W] goes through make_grid first"
            ),
            SummaryError::EmptyHistogram { tag } => write!(
                f,
                "add_histogram({tag:?}): the tensor has no finite values to bucket (it is empty, \
                 or all NaN)"
            ),
        }
    }
}

impl std::error::Error for SummaryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SummaryError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
