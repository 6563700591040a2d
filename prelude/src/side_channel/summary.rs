//! Each value's line in the Variables panel and what it expands into: tensors (shape, dtype,
//! device, bytes, grad), var stores (parameters), numbers, strings, `Vec`s and maps of them, and
//! the prelude's own displayable types. Nothing here runs a kernel on more than a small tensor,
//! and nothing panics on an undefined tensor.

use crate::cuda::GpuUsage;
use crate::data::{CsvTable, TensorDataset};
use crate::device::{DeviceCard, NamedParameters, VarStoreExt};
use crate::display::Render;
use crate::plot::LossPlot;
use crate::progress::Progress;
use crate::train::{RunManager, Timer};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};
use tchbook_wire::side_channel::Field;

/// The longest value line, in characters.
const LINE: usize = 120;
/// How many elements of a `Vec` or a map expand.
const ITEMS: usize = 20;
/// Tensors up to this many elements also show their min, max and mean.
const STATS_UP_TO: i64 = 1 << 20;

/// The line and the fields of a value of a type this prelude knows; `None` for the others.
pub(super) fn describe(value: &dyn Any) -> Option<(String, Vec<Field>)> {
    if let Some(t) = value.downcast_ref::<Tensor>() {
        return Some((tensor_line(t), tensor_fields(t)));
    }
    if let Some(vs) = value.downcast_ref::<VarStore>() {
        return Some(var_store(vs));
    }
    if let Some(d) = value.downcast_ref::<Device>() {
        return Some((crate::display::device_name(*d), Vec::new()));
    }
    if let Some(k) = value.downcast_ref::<Kind>() {
        return Some((dtype(*k).to_owned(), Vec::new()));
    }
    if let Some(line) = scalar(value) {
        return Some((line, Vec::new()));
    }
    if let Some(described) = collection(value) {
        return Some(described);
    }
    // A widget by its repr: rendering it would open its comms.
    if let Some(line) = crate::widgets::repr(value) {
        return Some((line, Vec::new()));
    }
    rendered(value).map(|b| (first_line(&b.text), Vec::new()))
}

/// The prelude's displayable types, rendered.
pub(super) fn rendered(value: &dyn Any) -> Option<crate::display::Bundle> {
    macro_rules! render {
        ($($t:ty),*) => {
            $(if let Some(v) = value.downcast_ref::<$t>() { return Some(v.bundle()); })*
        };
    }
    render!(
        LossPlot,
        RunManager,
        Timer,
        CsvTable,
        TensorDataset,
        DeviceCard,
        GpuUsage,
        NamedParameters,
        Progress,
        crate::cuda::MemorySummary
    );
    None
}

/// `Tensor[64, 10] f32 cuda:0 2.5 KiB requires_grad`.
pub(super) fn tensor_line(t: &Tensor) -> String {
    if !t.defined() {
        return "Tensor (undefined)".to_owned();
    }
    let mut line = format!(
        "Tensor{:?} {} {} {}",
        t.size(),
        dtype(t.kind()),
        crate::display::device_name(t.device()),
        short_bytes(tensor_bytes(t))
    );
    if t.requires_grad() {
        line.push_str(" requires_grad");
    }
    line
}

fn tensor_bytes(t: &Tensor) -> u64 {
    (t.numel() * t.kind().elt_size_in_bytes()) as u64
}

fn tensor_fields(t: &Tensor) -> Vec<Field> {
    if !t.defined() {
        return Vec::new();
    }
    let field = |name: &str, type_name: &str, value: String| Field {
        name: name.to_owned(),
        type_name: type_name.to_owned(),
        value,
    };
    let mut fields = vec![
        field("shape", "Size", format!("{:?}", t.size())),
        field("dtype", "Kind", dtype(t.kind()).to_owned()),
        field("device", "Device", crate::display::device_name(t.device())),
        field("numel", "usize", t.numel().to_string()),
        field("bytes", "usize", tensor_bytes(t).to_string()),
        field("requires_grad", "bool", t.requires_grad().to_string()),
        field("grad", "Option<Tensor>", grad(t)),
    ];
    let small = (t.numel() as i64) <= STATS_UP_TO && t.numel() > 0;
    if small && t.is_floating_point() {
        let stats = tch::no_grad(|| -> Result<[f64; 3], tch::TchError> {
            Ok([
                t.f_min()?.f_double_value(&[])?,
                t.f_max()?.f_double_value(&[])?,
                t.f_mean(Kind::Double)?.f_double_value(&[])?,
            ])
        });
        if let Ok(stats) = stats {
            for (name, value) in ["min", "max", "mean"].into_iter().zip(stats) {
                fields.push(field(name, "f64", format!("{value:.6}")));
            }
        }
    }
    fields
}

fn grad(t: &Tensor) -> String {
    match t.f_grad() {
        Ok(g) if g.defined() => tensor_line(&g),
        _ => "None".to_owned(),
    }
}

/// `VarStore 1,234 parameters 4.8 KiB cpu`, expanding into each named parameter.
fn var_store(vs: &VarStore) -> (String, Vec<Field>) {
    let params = vs.named_parameters();
    let (mut count, mut bytes) = (0i64, 0u64);
    let fields = params
        .iter()
        .map(|(name, t)| {
            if t.defined() {
                count += t.numel() as i64;
                bytes += tensor_bytes(t);
            }
            Field {
                name: name.to_owned(),
                type_name: "Tensor".to_owned(),
                value: tensor_line(t),
            }
        })
        .collect();
    let line = format!(
        "VarStore {} parameters {} {}",
        thousands(count),
        short_bytes(bytes),
        crate::display::device_name(vs.device())
    );
    (line, fields)
}

/// Numbers, `bool`, `char` and strings, as a cell would print them with `{:?}`.
fn scalar(value: &dyn Any) -> Option<String> {
    macro_rules! debug {
        ($($t:ty),*) => {
            $(if let Some(v) = value.downcast_ref::<$t>() { return Some(clip(&format!("{v:?}"))); })*
        };
    }
    debug!(
        i8,
        i16,
        i32,
        i64,
        i128,
        isize,
        u8,
        u16,
        u32,
        u64,
        u128,
        usize,
        f32,
        f64,
        bool,
        char,
        String,
        &'static str
    );
    None
}

/// `Vec`s and maps of numbers, strings and tensors: their length and first items.
fn collection(value: &dyn Any) -> Option<(String, Vec<Field>)> {
    macro_rules! vecs {
        ($($t:ty),*) => {
            $(if let Some(v) = value.downcast_ref::<Vec<$t>>() {
                return Some(listed(v.len(), v.iter().enumerate().map(|(i, x)| (format!("[{i}]"), item(x)))));
            })*
        };
    }
    macro_rules! maps {
        ($($t:ty),*) => {
            $(if let Some(m) = value.downcast_ref::<HashMap<String, $t>>() {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                return Some(listed(m.len(), keys.into_iter().map(|k| (format!("{k:?}"), item(&m[k])))));
            }
            if let Some(m) = value.downcast_ref::<BTreeMap<String, $t>>() {
                return Some(listed(m.len(), m.iter().map(|(k, x)| (format!("{k:?}"), item(x)))));
            })*
        };
    }
    vecs!(
        i32,
        i64,
        u8,
        u32,
        u64,
        usize,
        f32,
        f64,
        bool,
        String,
        &'static str,
        Tensor
    );
    maps!(i32, i64, u64, usize, f32, f64, String, Tensor);
    None
}

/// One element: a tensor's line, anything else `{:?}`.
fn item(x: &dyn ItemText) -> (String, String) {
    x.text()
}

trait ItemText {
    /// (type, value)
    fn text(&self) -> (String, String);
}

impl<T: std::fmt::Debug + 'static> ItemText for T {
    fn text(&self) -> (String, String) {
        let any: &dyn Any = self;
        match any.downcast_ref::<Tensor>() {
            Some(t) => ("Tensor".to_owned(), tensor_line(t)),
            None => (
                tchbook_wire::side_channel::short_type_name(std::any::type_name::<T>()),
                clip(&format!("{self:?}")),
            ),
        }
    }
}

fn listed(
    len: usize,
    items: impl Iterator<Item = (String, (String, String))>,
) -> (String, Vec<Field>) {
    let fields: Vec<Field> = items
        .take(ITEMS)
        .map(|(name, (type_name, value))| Field {
            name,
            type_name,
            value,
        })
        .collect();
    let preview: Vec<&str> = fields.iter().map(|f| f.value.as_str()).collect();
    let line = clip(&format!("len {len}: [{}]", preview.join(", ")));
    (line, fields)
}

/// The short dtype names the panel shows: `f32`, `i64`, `bool`.
fn dtype(kind: Kind) -> &'static str {
    match kind {
        Kind::Uint8 => "u8",
        Kind::Int8 => "i8",
        Kind::Int16 => "i16",
        Kind::Int => "i32",
        Kind::Int64 => "i64",
        Kind::Half => "f16",
        Kind::Float => "f32",
        Kind::Double => "f64",
        Kind::BFloat16 => "bf16",
        Kind::ComplexHalf => "c32",
        Kind::ComplexFloat => "c64",
        Kind::ComplexDouble => "c128",
        Kind::Bool => "bool",
        _ => "other",
    }
}

/// `24 B`, `2.5 KiB`, `1.2 GiB`.
fn short_bytes(bytes: u64) -> String {
    match crate::sys::binary_units(bytes) {
        (_, "B") => format!("{bytes} B"),
        (value, unit) => format!("{} {unit}", format!("{value:.1}").trim_end_matches(".0")),
    }
}

fn thousands(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn first_line(text: &str) -> String {
    clip(text.lines().next().unwrap_or(""))
}

/// At most [`LINE`] characters, with `…` where it was cut.
fn clip(text: &str) -> String {
    if text.chars().count() <= LINE {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(LINE - 1).collect();
    cut.push('…');
    cut
}
