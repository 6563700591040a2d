//! The sliders: `IntSlider` and `FloatSlider`, numbers the user moves within `min..=max`
//! (`IntSliderModel`, `FloatSliderModel` and their `SliderStyleModel`).

use super::bounded::{self, bounded};
use super::kind::{self, Kind};
use super::model::{Change, Model};
use super::shown::Shown;
use super::widget::{attributes, control};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The user's half: a change listener, for the sliders.
macro_rules! on_change {
    ($t:ident, $num:ty, $from_json:ident, $new:expr) => {
        impl $t {
            #[doc = concat!("Runs `f` with the new value each time it changes (moved in the front end, or set here), on the prelude's callback thread: `f` may use what it captured (clones of widgets, `Arc`s), not the notebook's variables, which belong to the running cell.\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($new), ";\nlet label = Label::new(\"\");\nlet shown = label.clone();\nw.on_change(move |v| shown.set_value(format!(\"{v}\")));\n```")]
            pub fn on_change(&self, f: impl Fn($num) + Send + Sync + 'static) {
                self.model.listen(
                    &["value"],
                    Arc::new(move |change: &Change| {
                        if let Some(v) = change.keys.get("value").and_then(Value::$from_json) {
                            f(v as $num)
                        }
                    }),
                );
            }
        }
    };
}

/// A slider: its bounded value, its listener, its attributes, and what [`interact`] reads.
///
/// [`interact`]: super::interact::interact
macro_rules! slider {
    ($t:ident, $num:ty, $from_json:ident, $kind:expr, $example:expr, $step:expr) => {
        bounded!($t, $num, $from_json, $kind, $t::new(), $example);
        on_change!($t, $num, $from_json, $t::new());
        control!($t, $num, &["value"]);
        attributes! { $t = $t::new();
            step, set_step, "step": $num = $step, "The step between values";
            description, set_description, "description": &str = "epochs",
                "The label before the slider";
            disabled, set_disabled, "disabled": bool = true, "Whether the user can move it";
            continuous_update, set_continuous_update, "continuous_update": bool = false,
                "Whether the front end sends values while dragging, not only on release";
            orientation, set_orientation, "orientation": &str = "vertical",
                "`horizontal` or `vertical`";
            readout, set_readout, "readout": bool = false, "Whether the value is shown beside it";
            readout_format, set_readout_format, "readout_format": &str = "d",
                "How the value is shown, a Python format (`d`, `.2f`)";
        }
    };
}

/// A slider of whole numbers (`ipywidgets.IntSlider`): 0 in `0..=100`, step 1, by default.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let epochs = IntSlider::new().min(1).max(20).with_value(5).description("epochs");
/// assert_eq!(epochs.value(), 5);
/// assert_eq!(epochs.to_string(), "IntSlider(value=5, min=1, max=20, description='epochs')");
/// ```
#[derive(Clone)]
pub struct IntSlider {
    model: Arc<Model>,
}

slider!(IntSlider, i64, as_i64, &INT, 3, 2);

/// A slider of real numbers (`ipywidgets.FloatSlider`): 0.0 in `0.0..=100.0`, step 0.1, by
/// default.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let lr = FloatSlider::new().min(0.0001).max(0.1).step(0.0001).with_value(0.01).description("lr");
/// assert_eq!(lr.value(), 0.01);
/// ```
#[derive(Clone)]
pub struct FloatSlider {
    model: Arc<Model>,
}

slider!(FloatSlider, f64, as_f64, &FLOAT, 0.5, 0.01);

static INT: Kind = bounded::kind(
    &STYLE,
    html,
    "IntSlider",
    "IntSliderModel",
    "IntSliderView",
    int_defaults,
);

static FLOAT: Kind = bounded::kind(
    &STYLE,
    html,
    "FloatSlider",
    "FloatSliderModel",
    "FloatSliderView",
    float_defaults,
);

/// The defaults of the whole numbers' model.
fn int_defaults() -> Value {
    kind::described(json!({
        "behavior": "drag-tap", "continuous_update": true, "disabled": false,
        "max": 100, "min": 0, "orientation": "horizontal", "readout": true,
        "readout_format": "d", "step": 1, "value": 0,
    }))
}

/// The defaults of the real numbers' model.
fn float_defaults() -> Value {
    kind::described(json!({
        "behavior": "drag-tap", "continuous_update": true, "disabled": false,
        "max": 100.0, "min": 0.0, "orientation": "horizontal", "readout": true,
        "readout_format": ".2f", "step": 0.1, "value": 0.0,
    }))
}

static STYLE: Kind = Kind::style(
    "SliderStyleModel",
    || json!({"description_width": "", "handle_color": null}),
);

fn html(shown: &Shown) -> String {
    shown.row(&format!(
        "<input type=\"range\" min=\"{}\" max=\"{}\" step=\"{}\" value=\"{}\" disabled> \
         <span style=\"margin-left:0.5em\">{}</span>",
        shown.json("min"),
        shown.json("max"),
        shown.json("step"),
        shown.json("value"),
        readout(shown.state)
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widgets::validate::Checked;

    #[test]
    fn a_front_ends_value_stays_within_the_range_and_keeps_its_type() {
        let ints = kind::state(&INT);
        let check = |key: &str, value: Value| kind::check(&INT, &ints, key, &value);
        assert_eq!(check("value", json!(7)), Checked::Accepted);
        assert_eq!(check("value", json!(1e15)), Checked::Corrected(json!(100)));
        assert_eq!(check("value", json!(-5)), Checked::Corrected(json!(0)));
        assert_eq!(check("value", json!(7.9)), Checked::Corrected(json!(7)));
        for bad in [json!("abc"), json!(null), json!(true), json!([1])] {
            assert!(matches!(check("value", bad), Checked::Refused(_)));
        }
        assert!(matches!(
            check("disabled", json!("no")),
            Checked::Refused(_)
        ));
        assert_eq!(check("description", json!("x")), Checked::Accepted);
        let floats = kind::state(&FLOAT);
        let check = |value: Value| kind::check(&FLOAT, &floats, "value", &value);
        assert_eq!(check(json!(0.25)), Checked::Accepted);
        assert_eq!(check(json!(300)), Checked::Corrected(json!(100.0)));
    }
}
