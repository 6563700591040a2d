//! The protobuf messages of an event file, as TensorBoard's own `.proto` files define them
//! (`tensorboard/compat/proto/event.proto`, `summary.proto`, `histogram.proto`), written as
//! prost structs: field numbers and types are the wire format, names follow the `.proto`.
//! Only the fields this writer sets are declared; proto3 readers skip what is absent.

/// `tensorboard.Event`: one record of an event file.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Event {
    /// Seconds since the Unix epoch.
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    /// The global step (`global_step` in PyTorch).
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(oneof = "What", tags = "3, 4, 5")]
    pub what: Option<What>,
}

/// `Event.what`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum What {
    /// `"brain.Event:2"`, the first event of every file.
    #[prost(string, tag = "3")]
    FileVersion(String),
    /// A serialized `GraphDef`.
    #[prost(bytes = "vec", tag = "4")]
    GraphDef(Vec<u8>),
    #[prost(message, tag = "5")]
    Summary(Summary),
}

/// `tensorboard.Summary`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<Value>,
}

/// `tensorboard.Summary.Value`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Value {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(oneof = "Kind", tags = "2, 4, 5")]
    pub value: Option<Kind>,
}

/// `Summary.Value.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Kind {
    #[prost(float, tag = "2")]
    SimpleValue(f32),
    #[prost(message, tag = "4")]
    Image(Image),
    #[prost(message, tag = "5")]
    Histo(HistogramProto),
}

/// `tensorboard.Summary.Image`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Image {
    #[prost(int32, tag = "1")]
    pub height: i32,
    #[prost(int32, tag = "2")]
    pub width: i32,
    /// 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    #[prost(int32, tag = "3")]
    pub colorspace: i32,
    /// The PNG file.
    #[prost(bytes = "vec", tag = "4")]
    pub encoded_image_string: Vec<u8>,
}

/// `tensorboard.HistogramProto`: `bucket[i]` counts the values between `bucket_limit[i-1]` and
/// `bucket_limit[i]` (`histogram.rs` says which edge is closed).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct HistogramProto {
    #[prost(double, tag = "1")]
    pub min: f64,
    #[prost(double, tag = "2")]
    pub max: f64,
    #[prost(double, tag = "3")]
    pub num: f64,
    #[prost(double, tag = "4")]
    pub sum: f64,
    #[prost(double, tag = "5")]
    pub sum_squares: f64,
    #[prost(double, repeated, tag = "6")]
    pub bucket_limit: Vec<f64>,
    #[prost(double, repeated, tag = "7")]
    pub bucket: Vec<f64>,
}
