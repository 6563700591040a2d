//! `Output`: an area of Jupyter outputs the code fills, through the widget's synced `outputs`
//! (a list of Jupyter output dicts), so it works from a callback between cells as well as from
//! a cell.

use super::kind::{self, Kind, Package};
use super::model::Model;
use super::shown::Shown;
use super::widget::widget;
use crate::display::Render;
use crate::runtime::StreamName;
use crate::sys::escape_html;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// An output area (`ipywidgets.Output`): text and rich values appended by the code, replaced or
/// cleared at will. Where a Python cell writes `with out: print(..)`, a Rust cell (or a
/// callback) calls [`append_stdout`](Self::append_stdout) or
/// [`append_display`](Self::append_display).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// use tchbook_prelude::display::Bundle;
/// let log = Output::new();
/// log.append_stdout("epoch 1: loss 0.52\n");
/// log.append_display(&Bundle::text("a plot").with_html("<b>a plot</b>"));
/// assert_eq!(log.outputs().len(), 2);
/// log.clear();
/// assert!(log.outputs().is_empty());
/// ```
#[derive(Clone)]
pub struct Output {
    model: Arc<Model>,
}

impl Default for Output {
    fn default() -> Self {
        Self::new()
    }
}

impl Output {
    /// An empty output area.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Output::new().to_string(), "Output()");
    /// ```
    pub fn new() -> Self {
        Output {
            model: Model::new(&KIND),
        }
    }

    /// Appends text to its stdout (a stream output; the front end joins consecutive ones).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let out = Output::new();
    /// out.append_stdout("hello\n");
    /// assert_eq!(out.outputs()[0]["text"], "hello\n");
    /// ```
    pub fn append_stdout(&self, text: impl Into<String>) {
        self.append(stream(StreamName::Stdout, text.into()));
    }

    /// Appends text to its stderr.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let out = Output::new();
    /// out.append_stderr("warning\n");
    /// assert_eq!(out.outputs()[0]["name"], "stderr");
    /// ```
    pub fn append_stderr(&self, text: impl Into<String>) {
        self.append(stream(StreamName::Stderr, text.into()));
    }

    /// Appends a rich value (a plot, a table, a tensor's `TensorDisplay`, another widget) as a
    /// `display_data`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// use tchbook_prelude::display::Bundle;
    /// let out = Output::new();
    /// out.append_display(&Bundle::text("x").with_html("<i>x</i>"));
    /// assert_eq!(out.outputs()[0]["data"]["text/html"], "<i>x</i>");
    /// ```
    pub fn append_display<T: Render + ?Sized>(&self, value: &T) {
        self.append(display(value));
    }

    /// Replaces everything shown with one rich value (one update, so the area does not flicker
    /// empty between a clear and an append).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// use tchbook_prelude::display::Bundle;
    /// let out = Output::new();
    /// out.append_stdout("old");
    /// out.show_only(&Bundle::text("new"));
    /// assert_eq!(out.outputs().len(), 1);
    /// ```
    pub fn show_only<T: Render + ?Sized>(&self, value: &T) {
        self.set_outputs(vec![display(value)]);
    }

    /// Removes every output (Python's `out.clear_output()`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let out = Output::new();
    /// out.append_stdout("x");
    /// out.clear();
    /// assert!(out.outputs().is_empty());
    /// ```
    pub fn clear(&self) {
        self.set_outputs(Vec::new());
    }

    /// The outputs shown, as Jupyter's output dicts (`{"output_type": "stream", ...}`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(Output::new().outputs().is_empty());
    /// ```
    pub fn outputs(&self) -> Vec<Value> {
        match self.model.get("outputs") {
            Value::Array(outputs) => outputs,
            _ => Vec::new(),
        }
    }

    fn append(&self, output: Value) {
        // Read and written under the model's lock: a callback and the cell may both append.
        self.model.set_with(|state| {
            let mut outputs = match state.get("outputs") {
                Some(Value::Array(outputs)) => outputs.clone(),
                _ => Vec::new(),
            };
            outputs.push(output);
            Map::from_iter([("outputs".to_owned(), Value::Array(outputs))])
        });
    }

    pub(crate) fn set_outputs(&self, outputs: Vec<Value>) {
        self.model.set(Map::from_iter([(
            "outputs".to_owned(),
            Value::Array(outputs),
        )]));
    }
}

widget!(Output);

fn stream(name: StreamName, text: String) -> Value {
    json!({"output_type": "stream", "name": name.as_str(), "text": text})
}

/// A `display_data` output of a rich value.
pub(crate) fn display<T: Render + ?Sized>(value: &T) -> Value {
    let bundle = value.bundle();
    json!({
        "output_type": "display_data",
        "data": Value::Object(bundle.data()),
        "metadata": Value::Object(bundle.metadata()),
    })
}

static KIND: Kind = Kind {
    html,
    ..Kind::new(
        "Output",
        ("OutputModel", Package::Output),
        ("OutputView", Package::Output),
        || kind::dom(json!({"msg_id": "", "outputs": []})),
    )
};

fn html(shown: &Shown) -> String {
    shown
        .state
        .get("outputs")
        .and_then(Value::as_array)
        .map(|outputs| outputs.iter().map(output_html).collect())
        .unwrap_or_default()
}

/// One Jupyter output (of an Output widget's `outputs`) as HTML.
fn output_html(output: &Value) -> String {
    let pre = |text: &str| format!("<pre style=\"margin:0\">{}</pre>", escape_html(text));
    match output.get("output_type").and_then(Value::as_str) {
        Some("stream") => pre(output.get("text").and_then(Value::as_str).unwrap_or("")),
        Some("display_data" | "execute_result") => {
            let data = output.get("data").cloned().unwrap_or(Value::Null);
            let get = |mime: &str| data.get(mime).and_then(Value::as_str);
            if let Some(html) = get("text/html") {
                html.to_owned()
            } else if let Some(svg) = get("image/svg+xml") {
                svg.to_owned()
            } else if let Some(png) = get("image/png") {
                format!("<img src=\"data:image/png;base64,{png}\">")
            } else {
                pre(get("text/plain").unwrap_or(""))
            }
        }
        _ => String::new(),
    }
}
