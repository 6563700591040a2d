//! The numeric widgets: `IntSlider` and `FloatSlider`, which the user moves, and `IntProgress`
//! and `FloatProgress`, which the code moves. Each keeps its value within `min..=max`, as
//! ipywidgets' bounded traits do.

use super::model::{Change, Model};
use super::spec::Class;
use super::widget::{attributes, widget};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The bounded value attributes (`value`, `min`, `max`) shared by the four types.
macro_rules! bounded {
    ($t:ident, $num:ty, $from_json:ident, $class:expr, $new:expr, $example:expr) => {
        impl Default for $t {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $t {
            #[doc = concat!("A new `", stringify!($t), "` at the specification's defaults.\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new();\nassert_eq!(w.value(), ", stringify!($num), "::default());\n```")]
            pub fn new() -> Self {
                $t {
                    model: Model::new($class),
                }
            }

            #[doc = concat!("The value now: the last one set here or moved in the front end (applied the moment it arrives, while a cell runs too).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($new), ".with_value(", stringify!($example), ");\nassert_eq!(w.value(), ", stringify!($example), ");\n```")]
            pub fn value(&self) -> $num {
                self.model.get("value").$from_json().unwrap_or_default() as $num
            }

            #[doc = concat!("Sets the value when building, kept within `min..=max` (so set the bounds first).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($new), ".with_value(", stringify!($example), ");\n# let _ = w;\n```")]
            pub fn with_value(self, value: $num) -> Self {
                self.set_value(value);
                self
            }

            #[doc = concat!("Sets the value, kept within `min..=max`; the front end's views follow.\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($new), ";\nw.set_value(", stringify!($example), ");\nassert_eq!(w.value(), ", stringify!($example), ");\n```")]
            pub fn set_value(&self, value: $num) {
                self.model.set_with(|state| {
                    let (min, max) = (Self::bound(state, "min"), Self::bound(state, "max"));
                    let value = if value < min { min } else if value > max { max } else { value };
                    Map::from_iter([("value".to_owned(), Value::from(value))])
                });
            }

            #[doc = concat!("The lower bound when building (the value follows if below it).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new().min(", stringify!($example), ");\nassert_eq!(w.value(), ", stringify!($example), ");\n```")]
            pub fn min(self, min: $num) -> Self {
                self.set_min(min);
                self
            }

            #[doc = concat!("Sets the lower bound (the value follows if below it).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new();\nw.set_min(", stringify!($example), ");\n```")]
            pub fn set_min(&self, min: $num) {
                self.model.set_with(|state| {
                    let mut changes = Map::from_iter([("min".to_owned(), Value::from(min))]);
                    if Self::bound(state, "value") < min {
                        changes.insert("value".into(), Value::from(min));
                    }
                    changes
                });
            }

            #[doc = concat!("The upper bound when building (the value follows if above it).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new().with_value(", stringify!($example), ").max(1 as _);\nassert!(w.value() <= 1 as _);\n```")]
            pub fn max(self, max: $num) -> Self {
                self.set_max(max);
                self
            }

            #[doc = concat!("Sets the upper bound (the value follows if above it).\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new();\nw.set_max(", stringify!($example), ");\n```")]
            pub fn set_max(&self, max: $num) {
                self.model.set_with(|state| {
                    let mut changes = Map::from_iter([("max".to_owned(), Value::from(max))]);
                    if Self::bound(state, "value") > max {
                        changes.insert("value".into(), Value::from(max));
                    }
                    changes
                });
            }

            /// One of the state's numbers (0 if it has none).
            fn bound(state: &Map<String, Value>, key: &str) -> $num {
                state.get(key).and_then(Value::$from_json).unwrap_or_default() as $num
            }
        }

        widget!($t);
    };
}

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

/// A slider: its bounded value, its listener and its attributes.
macro_rules! slider {
    ($t:ident, $num:ty, $from_json:ident, $class:expr, $example:expr, $step:expr) => {
        bounded!($t, $num, $from_json, $class, $t::new(), $example);
        on_change!($t, $num, $from_json, $t::new());
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

/// A progress bar: its bounded value and its attributes.
macro_rules! progress {
    ($t:ident, $num:ty, $from_json:ident, $class:expr, $example:expr) => {
        bounded!($t, $num, $from_json, $class, $t::new(), $example);
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

slider!(IntSlider, i64, as_i64, Class::IntSlider, 3, 2);

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

slider!(FloatSlider, f64, as_f64, Class::FloatSlider, 0.5, 0.01);

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

progress!(IntProgress, i64, as_i64, Class::IntProgress, 3);

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

progress!(FloatProgress, f64, as_f64, Class::FloatProgress, 0.5);
