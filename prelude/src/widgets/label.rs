//! `Label` and `HTML`: text the code sets, shown as text or as HTML (`LabelModel` and
//! `HTMLModel`, and their `LabelStyleModel` and `HTMLStyleModel`).

use super::kind::{self, Kind};
use super::model::Model;
use super::shown::Shown;
use super::widget::{attributes, set, text_of, widget};
use crate::sys::escape_html;
use serde_json::{Value, json};
use std::sync::Arc;

/// A widget showing a string the code sets: `Label` (text) and `HTML`.
macro_rules! shown_text {
    ($t:ident, $kind:expr, $what:literal, $example:literal) => {
        impl $t {
            #[doc = concat!("A widget showing `", $what, "`.\n\n```\nuse tchbook_prelude::prelude::*;\nassert_eq!(", stringify!($t), "::new(", stringify!($example), ").to_string(), \"", stringify!($t), "(value='", $example, "')\");\n```")]
            pub fn new(value: impl Into<String>) -> Self {
                let widget = $t {
                    model: Model::new($kind),
                };
                set(&widget.model, "value", value.into());
                widget
            }

            #[doc = concat!("The ", $what, " shown.\n\n```\nuse tchbook_prelude::prelude::*;\nassert_eq!(", stringify!($t), "::new(", stringify!($example), ").value(), ", stringify!($example), ");\n```")]
            pub fn value(&self) -> String {
                text_of(&self.model.get("value")).unwrap_or_default()
            }

            #[doc = concat!("Replaces the ", $what, " (the front end's views follow).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new(\"\");\nw.set_value(", stringify!($example), ");\nassert_eq!(w.value(), ", stringify!($example), ");\n```")]
            pub fn set_value(&self, value: impl Into<String>) {
                set(&self.model, "value", value.into());
            }
        }

        widget!($t);
        attributes! { $t = $t::new("");
            description, set_description, "description": &str = "status", "The label before it";
        }
    };
}

/// Text the code sets (`ipywidgets.Label`): a status line beside other widgets.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let status = Label::new("epoch 1");
/// status.set_value(format!("epoch {}", 2));
/// assert_eq!(status.value(), "epoch 2");
/// ```
#[derive(Clone)]
pub struct Label {
    model: Arc<Model>,
}

shown_text!(Label, &LABEL, "text", "loss 0.25");

/// HTML the code sets (`ipywidgets.HTML`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let note = HTML::new("<b>training</b>");
/// assert_eq!(note.value(), "<b>training</b>");
/// ```
#[derive(Clone)]
#[allow(clippy::upper_case_acronyms)] // ipywidgets' name
pub struct HTML {
    model: Arc<Model>,
}

shown_text!(HTML, &HTML_KIND, "HTML", "<b>done</b>");

static LABEL: Kind = Kind {
    style: Some(&LABEL_STYLE),
    repr,
    html: |shown| {
        shown.row(&format!(
            "<span>{}</span>",
            escape_html(&shown.text("value"))
        ))
    },
    ..Kind::control("Label", "LabelModel", "LabelView", attributes)
};

// An HTML widget's value is HTML.
static HTML_KIND: Kind = Kind {
    style: Some(&HTML_STYLE),
    repr,
    html: |shown| shown.row(&shown.text("value")),
    ..Kind::control("HTML", "HTMLModel", "HTMLView", attributes)
};

static LABEL_STYLE: Kind = Kind::style("LabelStyleModel", || {
    kind::fonts(json!({"background": null, "description_width": ""}))
});

static HTML_STYLE: Kind = Kind::style(
    "HTMLStyleModel",
    || json!({"background": null, "description_width": "", "font_size": null, "text_color": null}),
);

fn attributes() -> Value {
    kind::described(json!({"placeholder": "\u{200b}", "value": ""}))
}

fn repr(shown: &Shown) -> Vec<String> {
    shown.field("value").into_iter().collect()
}
