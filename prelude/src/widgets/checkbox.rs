//! `Checkbox`: a box the user checks (`CheckboxModel` and its `CheckboxStyleModel`).

use super::kind::{self, Kind};
use super::model::Model;
use super::shown::Shown;
use super::widget::{attributes, control, listen, widget};
use crate::sys::escape_html;
use serde_json::{Value, json};
use std::sync::Arc;

/// A check box (`ipywidgets.Checkbox`), unchecked by default.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let stop = Checkbox::new().description("stop training");
/// assert!(!stop.value());
/// // for epoch in 0..100 { if stop.value() { break; } ... }
/// ```
#[derive(Clone)]
pub struct Checkbox {
    model: Arc<Model>,
}

impl Default for Checkbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Checkbox {
    /// An unchecked box.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Checkbox::new().to_string(), "Checkbox(value=False)");
    /// ```
    pub fn new() -> Self {
        Checkbox {
            model: Model::new(&KIND),
        }
    }

    /// Whether it is checked now (a click in the front end counts the moment it arrives).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(Checkbox::new().with_value(true).value());
    /// ```
    pub fn value(&self) -> bool {
        self.model.get("value").as_bool().unwrap_or(false)
    }

    /// Runs `f` with the new value each time it changes, on the prelude's callback thread (see
    /// [`IntSlider::on_change`](super::IntSlider::on_change) for what `f` may touch).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let c = Checkbox::new();
    /// c.on_change(|checked| println!("checked: {checked}"));
    /// ```
    pub fn on_change(&self, f: impl Fn(bool) + Send + Sync + 'static) {
        listen(&self.model, "value", Value::as_bool, f);
    }
}

widget!(Checkbox);
control!(Checkbox, bool, &["value"]);
attributes! { Checkbox = Checkbox::new();
    with_value, set_value, "value": bool = true, "Checks or unchecks it";
    description, set_description, "description": &str = "stop", "The label beside it";
    disabled, set_disabled, "disabled": bool = true, "Whether the user can change it";
    indent, set_indent, "indent": bool = false, "Whether it is indented as if it had a label";
}

static KIND: Kind = Kind {
    style: Some(&STYLE),
    repr: |shown| shown.field("value").into_iter().collect(),
    html,
    ..Kind::control("Checkbox", "CheckboxModel", "CheckboxView", || {
        kind::described(json!({"disabled": false, "indent": true, "value": false}))
    })
};

static STYLE: Kind = Kind::style(
    "CheckboxStyleModel",
    || json!({"background": null, "description_width": ""}),
);

fn html(shown: &Shown) -> String {
    let checked = if shown.is_true("value") {
        " checked"
    } else {
        ""
    };
    format!(
        "<label><input type=\"checkbox\"{checked} disabled> {}</label>",
        escape_html(&shown.text("description"))
    )
}
