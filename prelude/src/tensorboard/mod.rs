//! TensorBoard from a notebook: [`SummaryWriter`] writes the event files that
//! `tensorboard --logdir runs` shows, in PyTorch's layout (`torch.utils.tensorboard`), and
//! [`make_grid`] lays a batch of images out as torchvision's `make_grid` does.
//!
//! An event file is a sequence of TFRecords ([`record`]), each one serialized `Event` protobuf
//! (`proto.rs`, prost structs with TensorBoard's field numbers). Histograms use PyTorch's
//! default buckets ([`Histogram`]); images are PNGs. Behind the prelude's default-on
//! `tensorboard` feature.
//!
//! One file per job: `record.rs` (framing and CRCs), `proto.rs` (the messages),
//! `histogram.rs`, `image.rs` (grids and PNGs), `writer.rs` (files, folders and the
//! `add_*` calls), each importing only the ones listed before it.

mod histogram;
mod image;
mod proto;
pub mod record;
mod writer;

pub use histogram::{Histogram, default_bucket_edges};
pub use image::{make_grid, make_grid_with};
pub(crate) use writer::run_dir_name;
pub use writer::{SummaryError, SummaryWriter};
