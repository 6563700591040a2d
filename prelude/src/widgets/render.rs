//! A widget's views for front ends without a widget manager, made from its synced state alone
//! (as a saved notebook's widget state would be): the `text/plain` of Python's repr
//! (`IntSlider(value=3, min=0, max=10, description='epochs')`) and a static `text/html`
//! rendering, its inputs disabled since nothing behind them reaches the kernel.

use super::model::Model;
use super::spec::Class;
use crate::sys::escape_html;
use serde_json::{Map, Value};

/// ipywidgets cuts a widget's repr at 110 characters.
const REPR_LIMIT: usize = 110;

/// The repr Python would print for the widget.
pub(crate) fn text(model: &Model) -> String {
    let full = repr(model);
    match full.char_indices().nth(REPR_LIMIT) {
        Some((cut, _)) => format!("{}…", &full[..cut]),
        None => full,
    }
}

/// The class's name in ipywidgets.
pub(crate) fn class_name(class: Class) -> &'static str {
    match class {
        Class::Layout => "Layout",
        Class::IntSlider => "IntSlider",
        Class::FloatSlider => "FloatSlider",
        Class::IntProgress => "IntProgress",
        Class::FloatProgress => "FloatProgress",
        Class::Button => "Button",
        Class::Checkbox => "Checkbox",
        Class::Dropdown => "Dropdown",
        Class::Text => "Text",
        Class::Label => "Label",
        Class::Html => "HTML",
        Class::HBox => "HBox",
        Class::VBox => "VBox",
        Class::Output => "Output",
        Class::Style(_) => "Style",
    }
}

fn repr(model: &Model) -> String {
    let state = model.state();
    let class = model.class();
    let mut fields: Vec<String> = Vec::new();
    let mut field = |key: &str| {
        if let Some(value) = state.get(key) {
            fields.push(format!("{key}={}", py(value)));
        }
    };
    match class {
        Class::IntSlider | Class::FloatSlider | Class::IntProgress | Class::FloatProgress => {
            field("value");
            field("min");
            field("max");
        }
        Class::Checkbox | Class::Text | Class::Label | Class::Html => field("value"),
        Class::Dropdown => {
            let labels = labels(&state);
            fields.push(format!(
                "options=({})",
                tuple(labels.iter().map(|l| py(&Value::from(l.as_str()))))
            ));
            if let Some(value) = selected(&state) {
                fields.push(format!("value={}", py(&Value::from(value))));
            }
        }
        Class::HBox | Class::VBox => {
            let children: Vec<String> = model.children().iter().map(|c| repr(c)).collect();
            fields.push(format!("children=({})", tuple(children.into_iter())));
        }
        Class::Button | Class::Output | Class::Layout | Class::Style(_) => {}
    }
    for key in ["description", "bar_style", "button_style", "box_style"] {
        if state
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            fields.push(format!("{key}={}", py(&state[key])));
        }
    }
    format!("{}({})", class_name(class), fields.join(", "))
}

/// A Python tuple's inside: `'a', 'b'`, or `'a',` for one element.
fn tuple(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.len() {
        1 => format!("{},", items[0]),
        _ => items.join(", "),
    }
}

/// A JSON value as Python's repr writes it.
fn py(value: &Value) -> String {
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

/// A dropdown's option labels.
pub(crate) fn labels(state: &Map<String, Value>) -> Vec<String> {
    state
        .get("_options_labels")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A dropdown's selected label.
pub(crate) fn selected(state: &Map<String, Value>) -> Option<String> {
    let index = state.get("index")?.as_u64()? as usize;
    labels(state).get(index).cloned()
}

/// The static HTML view of the widget.
pub(crate) fn html(model: &Model) -> String {
    format!(
        "<div class=\"tchbook-widget\" style=\"font-family:sans-serif;font-size:13px\">{}</div>",
        inner_html(model)
    )
}

fn inner_html(model: &Model) -> String {
    let state = model.state();
    let s = |key: &str| {
        state
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let n = |key: &str| state.get(key).map(|v| v.to_string()).unwrap_or_default();
    let disabled = if state.get("disabled") == Some(&Value::Bool(true)) {
        " disabled"
    } else {
        ""
    };
    let description = match s("description") {
        d if d.is_empty() => String::new(),
        d => format!(
            "<label style=\"margin-right:0.5em\">{}</label>",
            escape_html(&d)
        ),
    };
    let row = |body: String| {
        format!("<div style=\"display:flex;align-items:center\">{description}{body}</div>")
    };
    match model.class() {
        Class::IntSlider | Class::FloatSlider => row(format!(
            "<input type=\"range\" min=\"{}\" max=\"{}\" step=\"{}\" value=\"{}\" disabled> \
             <span style=\"margin-left:0.5em\">{}</span>",
            n("min"),
            n("max"),
            n("step"),
            n("value"),
            readout(&state)
        )),
        Class::IntProgress | Class::FloatProgress => row(format!(
            "<progress value=\"{}\" max=\"{}\" style=\"width:20em\"></progress>",
            state.get("value").and_then(Value::as_f64).unwrap_or(0.0)
                - state.get("min").and_then(Value::as_f64).unwrap_or(0.0),
            state.get("max").and_then(Value::as_f64).unwrap_or(100.0)
                - state.get("min").and_then(Value::as_f64).unwrap_or(0.0),
        )),
        Class::Button => format!(
            "<button disabled title=\"{}\">{}</button>",
            escape_html(&s("tooltip")),
            escape_html(&s("description"))
        ),
        Class::Checkbox => format!(
            "<label><input type=\"checkbox\"{} disabled> {}</label>",
            if state.get("value") == Some(&Value::Bool(true)) {
                " checked"
            } else {
                ""
            },
            escape_html(&s("description"))
        ),
        Class::Dropdown => {
            let chosen = selected(&state);
            let options: String = labels(&state)
                .iter()
                .map(|l| {
                    let on = if chosen.as_ref() == Some(l) {
                        " selected"
                    } else {
                        ""
                    };
                    format!("<option{on}>{}</option>", escape_html(l))
                })
                .collect();
            row(format!("<select disabled>{options}</select>"))
        }
        Class::Text => row(format!(
            "<input type=\"text\" value=\"{}\"{disabled} readonly>",
            escape_html(&s("value"))
        )),
        Class::Label => row(format!("<span>{}</span>", escape_html(&s("value")))),
        // An HTML widget's value is HTML.
        Class::Html => row(s("value")),
        Class::HBox | Class::VBox => {
            let direction = if model.class() == Class::HBox {
                "row"
            } else {
                "column"
            };
            let children: String = model
                .children()
                .iter()
                .map(|c| format!("<div>{}</div>", inner_html(c)))
                .collect();
            format!(
                "<div style=\"display:flex;flex-direction:{direction};gap:0.5em\">{children}</div>"
            )
        }
        Class::Output => state
            .get("outputs")
            .and_then(Value::as_array)
            .map(|outputs| outputs.iter().map(output_html).collect())
            .unwrap_or_default(),
        Class::Layout | Class::Style(_) => String::new(),
    }
}

/// A slider's value as its readout shows it (`readout_format` `d` or `.Nf`).
fn readout(state: &Map<String, Value>) -> String {
    let value = state.get("value").cloned().unwrap_or(Value::Null);
    let format = state
        .get("readout_format")
        .and_then(Value::as_str)
        .unwrap_or("");
    let digits = format
        .strip_prefix('.')
        .and_then(|f| f.strip_suffix('f'))
        .and_then(|d| d.parse::<usize>().ok());
    match (digits, value.as_f64()) {
        (Some(d), Some(x)) => format!("{x:.d$}"),
        _ => value.to_string(),
    }
}

/// One Jupyter output (of an Output widget's `outputs`) as HTML.
pub(crate) fn output_html(output: &Value) -> String {
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
