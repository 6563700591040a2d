//! The rendering vocabulary every displayable value shares: a [`Bundle`] of MIME renderings,
//! the [`Render`] trait, and the `rich!` macro that gives a type evcxr's `evcxr_display` hook.

use base64::Engine;
use serde_json::{Map, Value};
use std::io::Write;

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
    /// What the image shows, in words: the alt text a screen reader reads and nbconvert's HTML
    /// puts on the `<img>` (sent in [`metadata`](Self::metadata)). An image without one is
    /// described by [`text`](Self::text).
    pub alt: Option<String>,
    /// The comm id of an ipywidgets model this value is a view of (`crate::widgets`), sent as
    /// [`tchbook_wire::widgets::VIEW_MIME`]: a front end with a widget manager shows the live
    /// widget, any other the HTML or text beside it.
    pub widget: Option<String>,
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

    /// Adds the alt text of the bundle's image (what it shows, in words).
    ///
    /// ```
    /// let b = tchbook_prelude::display::Bundle::text("x").with_alt("a rising line");
    /// assert_eq!(b.alt.as_deref(), Some("a rising line"));
    /// ```
    pub fn with_alt(mut self, alt: impl Into<String>) -> Self {
        self.alt = Some(alt.into());
        self
    }

    /// The output's metadata: every image rendering's alt text under its MIME type
    /// (`{"image/png": {"alt": …}}`), where nbconvert reads it for the `<img alt>` of its HTML.
    /// Empty for a bundle without images.
    ///
    /// ```
    /// use tchbook_prelude::display::Bundle;
    /// let mut b = Bundle::text("loss: 3 points").with_alt("a falling line");
    /// assert!(b.metadata().is_empty());
    /// b.png = Some(vec![0x89]);
    /// assert_eq!(b.metadata()["image/png"]["alt"], "a falling line");
    /// ```
    pub fn metadata(&self) -> Map<String, Value> {
        let alt = self.alt.as_ref().unwrap_or(&self.text);
        let mut map = Map::new();
        for (mime, present) in [
            ("image/svg+xml", self.svg.is_some()),
            ("image/png", self.png.is_some()),
        ] {
            if present {
                map.insert(mime.into(), serde_json::json!({ "alt": alt }));
            }
        }
        map
    }

    /// The Jupyter MIME bundle (`image/png` base64-encoded).
    ///
    /// ```
    /// let j = tchbook_prelude::display::Bundle::text("x").to_json();
    /// assert_eq!(j["text/plain"], "x");
    /// ```
    pub fn to_json(&self) -> Value {
        Value::Object(self.data())
    }

    /// The Jupyter MIME bundle as a message carries it.
    ///
    /// ```
    /// let d = tchbook_prelude::display::Bundle::text("x").with_html("<b>x</b>").data();
    /// assert_eq!(d["text/html"], "<b>x</b>");
    /// ```
    pub fn data(&self) -> tchbook_wire::MimeData {
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
        if let Some(model_id) = &self.widget {
            map.insert(
                tchbook_wire::widgets::VIEW_MIME.into(),
                serde_json::json!({"model_id": model_id, "version_major": 2, "version_minor": 0}),
            );
        }
        map
    }

    /// Shows this bundle as a cell's final value: what a type of your own calls in its
    /// `evcxr_display()` (which evcxr calls for a cell's last expression). In the kernel the
    /// bundle and its metadata (image alt text) become the cell's result; outside it, evcxr's
    /// content blocks are printed ([`evcxr_blocks`](Self::evcxr_blocks)).
    ///
    /// ```
    /// use tchbook_prelude::display::Bundle;
    /// struct Answer;
    /// impl Answer {
    ///     pub fn evcxr_display(&self) {
    ///         Bundle::text("42").with_html("<b>42</b>").evcxr_display();
    ///     }
    /// }
    /// Answer.evcxr_display(); // outside a kernel: prints the two blocks
    /// ```
    pub fn evcxr_display(&self) {
        evcxr_print(self);
    }

    /// evcxr's content blocks for this bundle, one per MIME type (evcxr's convention, which has
    /// no output metadata), keyed as the kernel reads them (`tchbook_wire::content_block`): what
    /// a prelude type's `evcxr_display()` prints outside the kernel and exported programs (evcxr's
    /// own kernel reads them). Inside them it sends the bundle and its metadata as one message.
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
        let view = self
            .widget
            .as_ref()
            .map(|_| tchbook_wire::widgets::VIEW_MIME);
        let order = ["text/plain", "text/html", "image/svg+xml", "image/png"];
        for mime in order.iter().copied().chain(data.as_deref()).chain(view) {
            let text = match json.get(mime) {
                Some(Value::String(v)) => v.clone(),
                Some(v) => v.to_string(),
                None => continue,
            };
            out.push_str(&tchbook_wire::content_block(mime, &text));
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

/// Shows a cell's final value (the body of every `evcxr_display`): in the kernel and in exported
/// programs, one `value` message, the bundle with its metadata (image alt text) as it was made;
/// elsewhere evcxr's content blocks.
pub(crate) fn evcxr_print(bundle: &Bundle) {
    if crate::runtime::in_kernel() {
        crate::runtime::emit(&crate::runtime::Message::Value {
            data: bundle.data(),
            metadata: bundle.metadata(),
        });
        return;
    }
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
                $crate::display::bundle::evcxr_print(&$crate::display::bundle::Render::bundle(
                    self,
                ));
            }
        }
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&$crate::display::bundle::Render::bundle(self).text)
            }
        }
    };
}
pub(crate) use rich;

/// A PNG of 8-bit `pixels` (rows of `w` pixels of `color`), compressed fast: plots redraw it
/// live, and TensorBoard images are written while a run trains.
pub(crate) fn encode_png(pixels: &[u8], w: u32, h: u32, color: png::ColorType) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(color);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        if let Ok(mut writer) = encoder.write_header() {
            let _ = writer.write_image_data(pixels);
        }
    }
    out
}
