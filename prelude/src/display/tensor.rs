//! Tensors written the way PyTorch prints them, so a cell's output reads like the tutorial's:
//! the repr, an HTML card, and the rich display of [`TensorDisplay`].

use super::bundle::{Bundle, Render, evcxr_print};
use crate::sys::escape_html;
use tch::{Device, Kind, Tensor};

/// Above this many elements a tensor is summarised (PyTorch's `threshold`).
const THRESHOLD: i64 = 1000;
/// Items kept at each end of a summarised dimension (PyTorch's `edgeitems`).
const EDGE: i64 = 3;
/// Characters per line before a row of numbers wraps (PyTorch's `linewidth`).
const LINEWIDTH: usize = 80;

/// PyTorch's name for a dtype without the `torch.` prefix.
pub(crate) fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Uint8 => "uint8",
        Kind::Int8 => "int8",
        Kind::Int16 => "int16",
        Kind::Int => "int32",
        Kind::Int64 => "int64",
        Kind::Half => "float16",
        Kind::Float => "float32",
        Kind::Double => "float64",
        Kind::ComplexHalf => "complex32",
        Kind::ComplexFloat => "complex64",
        Kind::ComplexDouble => "complex128",
        Kind::Bool => "bool",
        Kind::BFloat16 => "bfloat16",
        _ => "other",
    }
}

/// PyTorch's name for a device: `cpu`, `cuda:0`, `mps`.
pub(crate) fn device_name(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        Device::Mps => "mps".into(),
        Device::Vulkan => "vulkan".into(),
    }
}

fn is_float(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Half | Kind::Float | Kind::Double | Kind::BFloat16
    )
}

/// Which indices of each dimension are shown, and whether a `...` follows index EDGE-1.
fn shown(t: &Tensor, summarise: bool) -> (Tensor, Vec<bool>) {
    let mut t = t.shallow_clone();
    let mut gaps = Vec::new();
    for (d, &n) in t.size().clone().iter().enumerate() {
        if summarise && n > 2 * EDGE {
            let idx: Vec<i64> = (0..EDGE).chain(n - EDGE..n).collect();
            let idx = Tensor::from_slice(&idx).to_device(t.device());
            t = t.index_select(d as i64, &idx);
            gaps.push(true);
        } else {
            gaps.push(false);
        }
    }
    (t, gaps)
}

/// Scientific notation as Python writes it: `1.0000e+10`.
fn sci(v: f64) -> String {
    let s = format!("{v:.4e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn format_values(values: &[f64], kind: Kind) -> Vec<String> {
    if kind == Kind::Bool {
        return values
            .iter()
            .map(|&v| if v != 0.0 { "True" } else { "False" }.into())
            .collect();
    }
    if !is_float(kind) {
        return values.iter().map(|&v| format!("{}", v as i64)).collect();
    }
    let finite: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v != 0.0)
        .collect();
    let special = |v: f64| -> Option<String> {
        if v.is_nan() {
            Some("nan".into())
        } else if v.is_infinite() {
            Some(if v > 0.0 { "inf".into() } else { "-inf".into() })
        } else {
            None
        }
    };
    let max = finite.iter().fold(0f64, |a, v| a.max(v.abs()));
    let min = finite.iter().fold(f64::INFINITY, |a, v| a.min(v.abs()));
    let int_mode = finite.iter().all(|v| v.fract() == 0.0);
    let sci_mode = !finite.is_empty() && (max / min > 1000.0 || max > 1e8 || min < 1e-4);
    values
        .iter()
        .map(|&v| {
            special(v).unwrap_or_else(|| {
                if int_mode && max <= 1e8 {
                    format!("{v:.0}.")
                } else if sci_mode {
                    sci(v)
                } else {
                    format!("{v:.4}")
                }
            })
        })
        .collect()
}

fn write_nested(
    out: &mut String,
    cells: &[String],
    sizes: &[i64],
    gaps: &[bool],
    depth: usize,
    indent: usize,
) {
    if sizes.is_empty() {
        out.push_str(&cells[0]);
        return;
    }
    if sizes.len() == 1 {
        write_row(out, cells, gaps[0], indent + depth);
        return;
    }
    let n = sizes[0] as usize;
    let stride: usize = sizes[1..].iter().product::<i64>() as usize;
    let sep = format!(
        ",{}{}",
        "\n".repeat(sizes.len() - 1),
        " ".repeat(indent + depth + 1)
    );
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push_str(&sep);
        }
        if gaps[0] && i as i64 == EDGE {
            // PyTorch: "..." in place of rows (write_row puts " ..." among a row's numbers).
            out.push_str("...");
            out.push_str(&sep);
        }
        write_nested(
            out,
            &cells[i * stride..(i + 1) * stride],
            &sizes[1..],
            &gaps[1..],
            depth + 1,
            indent,
        );
    }
    out.push(']');
}

/// One row of numbers, wrapped as PyTorch's `_vector_str` wraps it: as many (padded) numbers per
/// line as fit in `LINEWIDTH` after `indent` columns, the " ..." of a summarised row counting as
/// one, continuation lines indented one column past the opening bracket.
fn write_row(out: &mut String, cells: &[String], gap: bool, indent: usize) {
    let mut items: Vec<&str> = cells.iter().map(String::as_str).collect();
    if gap && items.len() as i64 > EDGE {
        items.insert(EDGE as usize, " ...");
    }
    let width = cells.iter().map(|c| c.len()).max().unwrap_or(0);
    let per_line = (LINEWIDTH.saturating_sub(indent) / (width + 2)).max(1);
    let lines: Vec<String> = items.chunks(per_line).map(|l| l.join(", ")).collect();
    out.push('[');
    out.push_str(&lines.join(&format!(",\n{}", " ".repeat(indent + 1))));
    out.push(']');
}

/// The values part of the repr (`[[1., 2.], [3., 4.]]`), with `indent` columns before it.
fn values_text(t: &Tensor, indent: usize) -> String {
    let summarise = t.numel() as i64 > THRESHOLD;
    // Reading values must not add to an autograd graph.
    let t = &t.detach();
    let (small, gaps) = shown(t, summarise);
    let kind = t.kind();
    let flat = small
        .to_device(Device::Cpu)
        .to_kind(Kind::Double)
        .contiguous()
        .view([-1]);
    let values = Vec::<f64>::try_from(&flat).unwrap_or_default();
    let mut cells = format_values(&values, kind);
    let width = cells.iter().map(|c| c.len()).max().unwrap_or(0);
    for c in &mut cells {
        *c = format!("{c:>width$}");
    }
    let mut out = String::new();
    if t.dim() == 0 {
        out.push_str(cells.first().map(|s| s.trim()).unwrap_or(""));
    } else {
        write_nested(&mut out, &cells, &small.size(), &gaps, 0, indent);
    }
    out
}

/// PyTorch's `repr(t)`.
fn repr(t: &Tensor) -> String {
    if !t.defined() {
        return "tensor(undefined)".into();
    }
    let mut suffix = String::new();
    if t.device() != Device::Cpu {
        suffix.push_str(&format!(", device='{}'", device_name(t.device())));
    }
    let kind = t.kind();
    let body = if t.numel() == 0 {
        if t.dim() > 1 {
            let dims: Vec<String> = t.size().iter().map(|d| d.to_string()).collect();
            suffix.push_str(&format!(", size=({})", dims.join(", ")));
        }
        "[]".to_string()
    } else {
        values_text(t, "tensor(".len())
    };
    if !matches!(kind, Kind::Float | Kind::Int64 | Kind::Bool) {
        suffix.push_str(&format!(", dtype=torch.{}", kind_name(kind)));
    }
    // PyTorch names the autograd node that made a tensor, and says requires_grad only of leaves.
    match grad_fn_name(t) {
        Some(name) => suffix.push_str(&format!(", grad_fn=<{name}>")),
        None if t.requires_grad() => suffix.push_str(", requires_grad=True"),
        None => {}
    }
    format!("tensor({body}{suffix})")
}

unsafe extern "C" {
    fn tchbook_grad_fn_name(
        tensor: *const std::ffi::c_void,
        out: *mut std::ffi::c_char,
        out_len: usize,
    ) -> std::ffi::c_int;
}

/// `type(t.grad_fn).__name__`, e.g. `AddmmBackward0`; `None` for a tensor without one (or a
/// shim built without libtorch's autograd headers).
pub(crate) fn grad_fn_name(t: &Tensor) -> Option<String> {
    if !t.requires_grad() || t.is_leaf() {
        return None;
    }
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: a tch tensor's pointer is an `at::Tensor*` that lives as long as `t`; the shim
    // writes at most `buf.len()` bytes, NUL-terminated, and catches every C++ exception.
    let found = unsafe { tchbook_grad_fn_name(t.as_ptr().cast(), buf.as_mut_ptr(), buf.len()) };
    if found != 1 {
        return None;
    }
    // SAFETY: NUL-terminated by the shim (copy_message).
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

fn header(t: &Tensor) -> String {
    if !t.defined() {
        return "undefined tensor".into();
    }
    format!(
        "Tensor {:?} · {} · {}",
        t.size(),
        kind_name(t.kind()),
        device_name(t.device())
    )
}

/// An HTML card: a header line and the repr.
fn html(t: &Tensor) -> String {
    format!(
        "<div class=\"tchbook-tensor\"><div style=\"font-family:monospace;color:#555\">{}</div>\
         <pre style=\"margin:2px 0\">{}</pre></div>",
        escape_html(&header(t)),
        escape_html(&repr(t))
    )
}

fn bundle(t: &Tensor) -> Bundle {
    let json = if t.defined() {
        serde_json::json!({"shape": t.size(), "dtype": kind_name(t.kind()), "device": device_name(t.device())})
    } else {
        serde_json::json!({"defined": false})
    };
    Bundle::text(repr(t))
        .with_html(html(t))
        .with_data("tensor", json)
}

/// Rich display for tensors: `t.evcxr_display()` shows shape, dtype, device and values.
/// (An extension trait because `Tensor` is tch's; no tch method has these names.)
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let t = Tensor::from_slice(&[1i64, 2, 3]);
/// assert_eq!(t.repr(), "tensor([1, 2, 3])");
/// assert!(t.to_html().contains("int64"));
/// ```
pub trait TensorDisplay {
    /// evcxr's rich-output hook.
    fn evcxr_display(&self);
    /// PyTorch's `repr(t)`: `tensor([[1., 2.], [3., 4.]], device='cuda:0')`.
    fn repr(&self) -> String;
    /// An HTML card: shape, dtype, device, and the values (summarised when large).
    fn to_html(&self) -> String;
}

impl TensorDisplay for tch::Tensor {
    fn evcxr_display(&self) {
        evcxr_print(&Render::bundle(self));
    }
    fn repr(&self) -> String {
        repr(self)
    }
    fn to_html(&self) -> String {
        html(self)
    }
}

impl Render for tch::Tensor {
    fn bundle(&self) -> Bundle {
        bundle(self)
    }
}
