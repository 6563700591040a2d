//! What a widget kind renders its views from ([`Shown`]: its synced state and its children's
//! renderings), and the pieces those views share: Python's repr of a JSON value, and the row of
//! a described control's static HTML.

use crate::sys::escape_html;
use serde_json::{Map, Value};

/// A model as a kind renders it: its state, and a box's children already rendered the same way
/// (their reprs for a repr, their HTML for HTML).
pub(crate) struct Shown<'a> {
    pub(crate) state: &'a Map<String, Value>,
    pub(crate) children: Vec<String>,
}

impl Shown<'_> {
    /// A text attribute (empty if the state has none).
    pub(crate) fn text(&self, key: &str) -> String {
        self.state
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    }

    /// An attribute as JSON text (`3`, `0.5`; empty if the state has none).
    pub(crate) fn json(&self, key: &str) -> String {
        self.state
            .get(key)
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    /// A number attribute, `default` if the state has none.
    pub(crate) fn number(&self, key: &str, default: f64) -> f64 {
        self.state
            .get(key)
            .and_then(Value::as_f64)
            .unwrap_or(default)
    }

    /// Whether a boolean attribute is `true`.
    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.state.get(key) == Some(&Value::Bool(true))
    }

    /// The repr's `key=<value>` (`value=3`), if the state has `key`.
    pub(crate) fn field(&self, key: &str) -> Option<String> {
        self.state
            .get(key)
            .map(|value| format!("{key}={}", py(value)))
    }

    /// A described control's HTML: its description's label, then `body`, in a row.
    pub(crate) fn row(&self, body: &str) -> String {
        let description = match self.text("description") {
            d if d.is_empty() => String::new(),
            d => format!(
                "<label style=\"margin-right:0.5em\">{}</label>",
                escape_html(&d)
            ),
        };
        format!("<div style=\"display:flex;align-items:center\">{description}{body}</div>")
    }
}

/// A Python tuple's inside: `'a', 'b'`, or `'a',` for one element.
pub(crate) fn tuple(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.len() {
        1 => format!("{},", items[0]),
        _ => items.join(", "),
    }
}

/// A JSON value as Python's repr writes it.
pub(crate) fn py(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) if n.is_f64() => py_float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) => format!("[{}]", items.iter().map(py).collect::<Vec<_>>().join(", ")),
        Value::Object(_) => value.to_string(),
    }
}

/// Python's repr of a float: shortest round trip, always with a point (`5.0`, `0.1`, `1e-05`).
fn py_float(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else if x.is_finite() && x != 0.0 && x.abs() < 1e-4 {
        let s = format!("{x:e}");
        // Rust writes `1e-5`, Python `1e-05`.
        match s.split_once("e-") {
            Some((m, e)) if e.len() == 1 => format!("{m}e-0{e}"),
            _ => s,
        }
    } else {
        x.to_string()
    }
}
