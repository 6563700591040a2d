//! The progress bars: `IntProgress` and `FloatProgress`, numbers the code moves within
//! `min..=max` (`IntProgressModel`, `FloatProgressModel` and their `ProgressStyleModel`).

use super::bounded::{self, bounded};
use super::kind::{self, Kind};
use super::model::Model;
use super::shown::Shown;
use super::widget::attributes;
use serde_json::{Value, json};
use std::sync::Arc;

/// A progress bar: its bounded value and its attributes.
macro_rules! progress {
    ($t:ident, $num:ty, $from_json:ident, $kind:expr, $example:expr) => {
        bounded!($t, $num, $from_json, $kind, $t::new(), $example);
        attributes! { $t = $t::new();
            description, set_description, "description": &str = "epoch",
                "The label before the bar";
            bar_style, set_bar_style, "bar_style": &str = "success",
                "The bar's colour: `success`, `info`, `warning`, `danger` or `` (the default)";
            orientation, set_orientation, "orientation": &str = "vertical",
                "`horizontal` or `vertical`";
        }
    };
}

/// A progress bar of whole numbers (`ipywidgets.IntProgress`): 0 of `0..=100` by default.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let bar = IntProgress::new().max(10).description("epoch");
/// bar.set_value(3);
/// assert_eq!(bar.value(), 3);
/// ```
#[derive(Clone)]
pub struct IntProgress {
    model: Arc<Model>,
}

progress!(IntProgress, i64, as_i64, &INT, 3);

/// A progress bar of real numbers (`ipywidgets.FloatProgress`): 0.0 of `0.0..=100.0` by default.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let bar = FloatProgress::new().max(1.0);
/// bar.set_value(0.25);
/// assert_eq!(bar.value(), 0.25);
/// ```
#[derive(Clone)]
pub struct FloatProgress {
    model: Arc<Model>,
}

progress!(FloatProgress, f64, as_f64, &FLOAT, 0.5);

static INT: Kind = bounded::kind(
    &STYLE,
    html,
    "IntProgress",
    "IntProgressModel",
    "ProgressView",
    int_defaults,
);

static FLOAT: Kind = bounded::kind(
    &STYLE,
    html,
    "FloatProgress",
    "FloatProgressModel",
    "ProgressView",
    float_defaults,
);

/// The defaults of the whole numbers' model.
fn int_defaults() -> Value {
    kind::described(json!({
        "bar_style": "", "max": 100, "min": 0, "orientation": "horizontal", "value": 0,
    }))
}

/// The defaults of the real numbers' model.
fn float_defaults() -> Value {
    kind::described(json!({
        "bar_style": "", "max": 100.0, "min": 0.0, "orientation": "horizontal",
        "value": 0.0,
    }))
}

static STYLE: Kind = Kind::style(
    "ProgressStyleModel",
    || json!({"bar_color": null, "description_width": ""}),
);

/// An HTML `<progress>` counts from 0: the value and the maximum are shifted by `min`.
fn html(shown: &Shown) -> String {
    let min = shown.number("min", 0.0);
    shown.row(&format!(
        "<progress value=\"{}\" max=\"{}\" style=\"width:20em\"></progress>",
        shown.number("value", 0.0) - min,
        shown.number("max", 100.0) - min,
    ))
}
