//! `Text`: a line of text the user types (`TextModel` and its `TextStyleModel`).

use super::kind::{self, Kind};
use super::model::Model;
use super::shown::Shown;
use super::widget::{attributes, control, listen, text_of, widget};
use crate::sys::escape_html;
use serde_json::json;
use std::sync::Arc;

/// A one-line text field (`ipywidgets.Text`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let name = Text::new().placeholder("run name").description("name");
/// assert_eq!(name.value(), "");
/// ```
#[derive(Clone)]
pub struct Text {
    model: Arc<Model>,
}

impl Default for Text {
    fn default() -> Self {
        Self::new()
    }
}

impl Text {
    /// An empty field.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Text::new().with_value("x").to_string(), "Text(value='x')");
    /// ```
    pub fn new() -> Self {
        Text {
            model: Model::new(&KIND),
        }
    }

    /// The text now (as typed in the front end, applied the moment it arrives).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Text::new().with_value("resnet").value(), "resnet");
    /// ```
    pub fn value(&self) -> String {
        text_of(&self.model.get("value")).unwrap_or_default()
    }

    /// Runs `f` with the new text each time it changes, on the prelude's callback thread (see
    /// [`IntSlider::on_change`](super::IntSlider::on_change) for what `f` may touch).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// Text::new().on_change(|text| println!("{text}"));
    /// ```
    pub fn on_change(&self, f: impl Fn(String) + Send + Sync + 'static) {
        listen(&self.model, "value", text_of, f);
    }
}

widget!(Text);
control!(Text, String, &["value"]);
attributes! { Text = Text::new();
    with_value, set_value, "value": &str = "resnet18", "Sets the text";
    placeholder, set_placeholder, "placeholder": &str = "run name", "Grey text shown while empty";
    description, set_description, "description": &str = "name", "The label before it";
    disabled, set_disabled, "disabled": bool = true, "Whether the user can type";
    continuous_update, set_continuous_update, "continuous_update": bool = false,
        "Whether the front end sends each keystroke, not only on Enter or leaving the field";
}

static KIND: Kind = Kind {
    style: Some(&STYLE),
    repr: |shown| shown.field("value").into_iter().collect(),
    html,
    ..Kind::control("Text", "TextModel", "TextView", || {
        kind::described(json!({
            "continuous_update": true, "disabled": false, "placeholder": "\u{200b}",
            "value": "",
        }))
    })
};

static STYLE: Kind = Kind::style(
    "TextStyleModel",
    || json!({"background": null, "description_width": "", "font_size": null, "text_color": null}),
);

fn html(shown: &Shown) -> String {
    let disabled = if shown.is_true("disabled") {
        " disabled"
    } else {
        ""
    };
    shown.row(&format!(
        "<input type=\"text\" value=\"{}\"{disabled} readonly>",
        escape_html(&shown.text("value"))
    ))
}
