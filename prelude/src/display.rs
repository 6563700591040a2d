//! Rich display: every prelude value a cell ends with renders as HTML (or an image) in the
//! notebook and as text elsewhere.
//!
//! Two routes reach the front end:
//! - evcxr's convention: a value's `evcxr_display()` prints `EVCXR_BEGIN_CONTENT <mime>` …
//!   `EVCXR_END_CONTENT`, which evcxr shows when the cell ends. Prelude types have it as an
//!   inherent method, tensors through [`TensorDisplay`].
//! - the live protocol (DEVELOPERS.md): [`show`] returns a [`DisplayHandle`] whose
//!   [`update`](DisplayHandle::update) replaces the output in place while the cell runs. Loss
//!   plots, progress bars and run tables use it.
//!
//! Outside a kernel, [`show`] and updates print the text form instead and never fail.
//!
//! Std values (numbers, strings, `Vec`, ...) get evcxr's own `{:?}` text through
//! [`PlainDisplay`], which spares evcxr a second compilation of the cell.

mod plain;

pub use plain::{PlainDisplay, set_plain_format};

use crate::runtime;
use base64::Engine;
use serde_json::{Map, Value};
use std::io::Write;
use std::time::{Duration, Instant};

/// One value's renderings, by MIME type.
///
/// ```
/// use tchbook_prelude::display::Bundle;
/// let b = Bundle::text("hello").with_html("<b>hello</b>");
/// assert_eq!(b.to_json()["text/html"], "<b>hello</b>");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bundle {
    /// `text/plain`, always present.
    pub text: String,
    /// `text/html`.
    pub html: Option<String>,
    /// `image/svg+xml`.
    pub svg: Option<String>,
    /// `image/png`, raw bytes (base64-encoded on the wire).
    pub png: Option<Vec<u8>>,
    /// The numbers behind the rendering, for tests and tools: `(kind, value)`, sent as
    /// [`data_mime`]`(kind)`.
    pub data: Option<(&'static str, Value)>,
}

/// The MIME type that carries a bundle's machine-readable numbers:
/// `application/vnd.tchbook.<kind>+json`.
///
/// Not `application/json`: JupyterLab's and Notebook 7's JSON viewer outranks HTML and images, so
/// a bundle carrying `application/json` is shown as a collapsible tree instead of its picture or
/// table. No front end has a renderer for a vendor type, so each picks the human view (HTML,
/// PNG/SVG, text) while tools still find the numbers.
///
/// ```
/// assert_eq!(
///     tchbook_prelude::display::data_mime("device-card"),
///     "application/vnd.tchbook.device-card+json"
/// );
/// ```
pub fn data_mime(kind: &str) -> String {
    format!("application/vnd.tchbook.{kind}+json")
}

impl Bundle {
    /// A bundle with only plain text.
    ///
    /// ```
    /// assert_eq!(tchbook_prelude::display::Bundle::text("x").text, "x");
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Bundle {
            text: text.into(),
            ..Default::default()
        }
    }

    /// Adds an HTML rendering.
    ///
    /// ```
    /// let b = tchbook_prelude::display::Bundle::text("x").with_html("<i>x</i>");
    /// assert!(b.html.is_some());
    /// ```
    pub fn with_html(mut self, html: impl Into<String>) -> Self {
        self.html = Some(html.into());
        self
    }

    /// Adds the machine-readable numbers of a `kind` of value, under [`data_mime`]`(kind)`.
    ///
    /// ```
    /// let b = tchbook_prelude::display::Bundle::text("x").with_data("count", serde_json::json!({"n": 1}));
    /// assert_eq!(b.to_json()["application/vnd.tchbook.count+json"]["n"], 1);
    /// ```
    pub fn with_data(mut self, kind: &'static str, json: Value) -> Self {
        self.data = Some((kind, json));
        self
    }

    /// The Jupyter MIME bundle (`image/png` base64-encoded).
    ///
    /// ```
    /// let j = tchbook_prelude::display::Bundle::text("x").to_json();
    /// assert_eq!(j["text/plain"], "x");
    /// ```
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("text/plain".into(), Value::String(self.text.clone()));
        if let Some(html) = &self.html {
            map.insert("text/html".into(), Value::String(html.clone()));
        }
        if let Some(svg) = &self.svg {
            map.insert("image/svg+xml".into(), Value::String(svg.clone()));
        }
        if let Some(png) = &self.png {
            let b64 = base64::engine::general_purpose::STANDARD.encode(png);
            map.insert("image/png".into(), Value::String(b64));
        }
        if let Some((kind, json)) = &self.data {
            map.insert(data_mime(kind), json.clone());
        }
        Value::Object(map)
    }

    /// evcxr's content blocks for this bundle (what `evcxr_display()` prints).
    ///
    /// ```
    /// let s = tchbook_prelude::display::Bundle::text("x").evcxr_blocks();
    /// assert_eq!(s, "EVCXR_BEGIN_CONTENT text/plain\nx\nEVCXR_END_CONTENT\n");
    /// ```
    pub fn evcxr_blocks(&self) -> String {
        let mut out = String::new();
        // Richest last does not matter to evcxr (one string per MIME type), but text first keeps
        // the output readable when a plain process prints it. Text types go as they are, JSON
        // types as one line of JSON (the kernel parses them back into values).
        let json = self.to_json();
        let data = self.data.as_ref().map(|(kind, _)| data_mime(kind));
        let order = ["text/plain", "text/html", "image/svg+xml", "image/png"];
        for mime in order.iter().copied().chain(data.as_deref()) {
            let text = match json.get(mime) {
                Some(Value::String(v)) => v.clone(),
                Some(v) => v.to_string(),
                None => continue,
            };
            out.push_str(&format!(
                "EVCXR_BEGIN_CONTENT {mime}\n{text}\nEVCXR_END_CONTENT\n"
            ));
        }
        out
    }
}

/// A value with rich renderings. Implemented by every displayable prelude type.
///
/// ```
/// use tchbook_prelude::display::{Bundle, Render};
/// struct Answer;
/// impl Render for Answer {
///     fn bundle(&self) -> Bundle { Bundle::text("42").with_html("<b>42</b>") }
/// }
/// assert_eq!(Answer.bundle().text, "42");
/// ```
pub trait Render {
    /// All renderings of the value.
    fn bundle(&self) -> Bundle;
}

impl Render for Bundle {
    fn bundle(&self) -> Bundle {
        self.clone()
    }
}

impl Render for tch::Tensor {
    fn bundle(&self) -> Bundle {
        crate::tensor_fmt::bundle(self)
    }
}

/// Prints evcxr's content blocks for a value (the body of every `evcxr_display`).
pub(crate) fn evcxr_print(bundle: &Bundle) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bundle.evcxr_blocks().as_bytes());
    let _ = out.flush();
}

/// Adds `evcxr_display` (evcxr's rich-output hook) and `Display` (the text form) to a type
/// that implements [`Render`].
macro_rules! rich {
    ($t:ty) => {
        impl $t {
            /// Renders this value in the notebook (evcxr calls it for a cell's final value).
            pub fn evcxr_display(&self) {
                $crate::display::evcxr_print(&$crate::display::Render::bundle(self));
            }
        }
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&$crate::display::Render::bundle(self).text)
            }
        }
    };
}
pub(crate) use rich;

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
        crate::tensor_fmt::repr(self)
    }
    fn to_html(&self) -> String {
        crate::tensor_fmt::html(self)
    }
}

/// A live output: created by [`show`], replaced in place by [`update`](Self::update).
///
/// ```
/// use tchbook_prelude::display::{show, Bundle};
/// let handle = show(&Bundle::text("step 1"));
/// handle.update(&Bundle::text("step 2")); // outside a kernel: prints "step 2"
/// ```
#[derive(Debug, Clone)]
pub struct DisplayHandle {
    id: Option<String>,
}

impl DisplayHandle {
    /// Replaces the output with a new rendering (inside a kernel; prints the text otherwise).
    ///
    /// ```
    /// use tchbook_prelude::display::{show, Bundle};
    /// let h = show(&Bundle::text("epoch 1"));
    /// h.update(&Bundle::text("epoch 2"));
    /// ```
    pub fn update<T: Render + ?Sized>(&self, value: &T) {
        let bundle = value.bundle();
        match &self.id {
            Some(id) => runtime::emit(&runtime::update_message(bundle.to_json(), id)),
            None => println!("{}", bundle.text),
        }
    }

    /// Replaces the output only inside a kernel; a plain process prints nothing. For frequent
    /// updates (progress) whose text form would flood a log.
    ///
    /// ```
    /// use tchbook_prelude::display::{show, Bundle};
    /// let h = show(&Bundle::text("0%"));
    /// h.update_quiet(&Bundle::text("50%")); // prints nothing outside a kernel
    /// ```
    pub fn update_quiet<T: Render + ?Sized>(&self, value: &T) {
        if let Some(id) = &self.id {
            runtime::emit(&runtime::update_message(value.bundle().to_json(), id));
        }
    }

    /// The display id used on the protocol (`None` outside a kernel).
    ///
    /// ```
    /// use tchbook_prelude::display::{show, Bundle};
    /// assert!(show(&Bundle::text("x")).id().is_none()); // not inside a kernel
    /// ```
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

/// Shows a value now (mid-cell) and returns a handle to update it in place.
/// Outside a kernel it prints the value's text form.
///
/// ```
/// use tchbook_prelude::display::{show, Bundle};
/// let h = show(&Bundle::text("hello"));
/// assert!(h.id().is_none()); // doc tests are not inside a kernel
/// ```
pub fn show<T: Render + ?Sized>(value: &T) -> DisplayHandle {
    let bundle = value.bundle();
    if runtime::in_kernel() {
        let id = runtime::new_display_id();
        runtime::emit(&runtime::display_message(bundle.to_json(), Some(&id)));
        DisplayHandle { id: Some(id) }
    } else {
        println!("{}", bundle.text);
        DisplayHandle { id: None }
    }
}

/// Like [`show`] but a plain process prints nothing now (the caller prints a final text later).
pub(crate) fn show_quiet<T: Render + ?Sized>(value: &T) -> DisplayHandle {
    if runtime::in_kernel() {
        let id = runtime::new_display_id();
        runtime::emit(&runtime::display_message(
            value.bundle().to_json(),
            Some(&id),
        ));
        DisplayHandle { id: Some(id) }
    } else {
        DisplayHandle { id: None }
    }
}

/// A live output redrawn at most once per `every` (the shared half of plots and progress bars).
/// Outside a kernel it never draws.
pub(crate) struct Live {
    every: Duration,
    handle: Option<DisplayHandle>,
    last: Option<Instant>,
}

impl Live {
    pub(crate) fn new(every: Duration) -> Self {
        Live {
            every,
            handle: None,
            last: None,
        }
    }

    /// Whether to redraw now: inside a kernel, when forced or when `every` has passed.
    pub(crate) fn due(&mut self, force: bool) -> bool {
        if !runtime::in_kernel() {
            return false;
        }
        let now = Instant::now();
        if !force && self.last.is_some_and(|t| now - t < self.every) {
            return false;
        }
        self.last = Some(now);
        true
    }

    /// Shows the value the first time, replaces it in place afterwards.
    pub(crate) fn draw<T: Render + ?Sized>(&mut self, value: &T) {
        match &self.handle {
            Some(h) => h.update_quiet(value),
            None => self.handle = Some(show_quiet(value)),
        }
    }

    /// Whether anything was drawn yet.
    pub(crate) fn shown(&self) -> bool {
        self.handle.is_some()
    }
}

/// Clears the cell's output (Jupyter's `clear_output(wait)`); does nothing outside a kernel.
///
/// ```
/// tchbook_prelude::display::clear_output(true);
/// ```
pub fn clear_output(wait: bool) {
    runtime::emit(&runtime::clear_message(wait));
}

/// Builds an HTML table; cells are escaped.
pub(crate) fn html_table(caption: Option<&str>, header: &[String], rows: &[Vec<String>]) -> String {
    use crate::sys::escape_html as esc;
    let mut h = String::from("<table class=\"tchbook\">");
    if let Some(c) = caption {
        h.push_str(&format!(
            "<caption style=\"text-align:left\">{}</caption>",
            esc(c)
        ));
    }
    h.push_str("<thead><tr>");
    for c in header {
        h.push_str(&format!("<th>{}</th>", esc(c)));
    }
    h.push_str("</tr></thead><tbody>");
    for row in rows {
        h.push_str("<tr>");
        for c in row {
            h.push_str(&format!("<td>{}</td>", esc(c)));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

/// Builds a fixed-width text table with a header rule.
pub(crate) fn text_table(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, c) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:>w$}", w = widths[i]))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = line(header);
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    for row in rows {
        out.push('\n');
        out.push_str(&line(row));
    }
    out
}
