//! A widget's views for front ends without a widget manager, made from its synced state alone
//! (as a saved notebook's widget state would be): the `text/plain` of Python's repr
//! (`IntSlider(value=3, min=0, max=10, description='epochs')`) and a static `text/html`
//! rendering, its inputs disabled since nothing behind them reaches the kernel. Each kind
//! renders its own part (`Kind::repr`, `Kind::html`) from its state and its children's renderings; here
//! are the walk down a box's children, the repr's common fields and cut, and the HTML's frame.

use super::model::Model;
use super::shown::{Shown, py};
use serde_json::Value;

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

fn repr(model: &Model) -> String {
    let state = model.state();
    let children = model.children().iter().map(|c| repr(c)).collect();
    let kind = model.kind();
    let mut fields = (kind.repr)(&Shown {
        state: &state,
        children,
    });
    for key in ["description", "bar_style", "button_style", "box_style"] {
        if state
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            fields.push(format!("{key}={}", py(&state[key])));
        }
    }
    format!("{}({})", kind.name, fields.join(", "))
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
    let children = model.children().iter().map(|c| inner_html(c)).collect();
    (model.kind().html)(&Shown {
        state: &state,
        children,
    })
}
