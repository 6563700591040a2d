//! What the sliders and the progress bars share: a value kept within `min..=max`, as
//! ipywidgets' bounded traits keep it, by the code's setters (`bounded!`) and against the front
//! end's updates ([`check`]), and the repr's `value`, `min` and `max`.

use super::kind::Kind;
use super::shown::Shown;
use super::validate::{self, Checked};
use serde_json::{Map, Value};

/// The kind of a bounded widget whose style model is `style` and static HTML `html`: the repr's
/// `value`, `min` and `max`, and the front end's `value` kept within them.
pub(crate) const fn kind(
    style: &'static Kind,
    html: fn(&Shown) -> String,
    name: &'static str,
    model: &'static str,
    view: &'static str,
    attributes: fn() -> Value,
) -> Kind {
    Kind {
        style: Some(style),
        repr,
        html,
        check,
        ..Kind::control(name, model, view, attributes)
    }
}

/// The repr's fields of a bounded widget: `value=3, min=0, max=10`.
pub(crate) fn repr(shown: &Shown) -> Vec<String> {
    ["value", "min", "max"]
        .into_iter()
        .filter_map(|key| shown.field(key))
        .collect()
}

/// A front end's `value` kept within `min..=max`; every other attribute checked by its type.
pub(crate) fn check(state: &Map<String, Value>, key: &str, value: &Value) -> Checked {
    if key == "value" {
        validate::within_bounds(state, value)
    } else {
        validate::by_type(state, key, value)
    }
}

/// Gives a bounded widget type (a struct with a `model` field) `new` for a model of `$kind`,
/// `Default`, `value`, and builders and setters for `value`, `min` and `max` that keep the value
/// within the bounds; and the [`Widget`](super::widget::Widget) trait.
macro_rules! bounded {
    ($t:ident, $num:ty, $from_json:ident, $kind:expr, $new:expr, $example:expr) => {
        impl Default for $t {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $t {
            #[doc = concat!("A new `", stringify!($t), "` at the specification's defaults.\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ", stringify!($t), "::new();\nassert_eq!(w.value(), ", stringify!($num), "::default());\n```")]
            pub fn new() -> Self {
                $t {
                    model: super::model::Model::new($kind),
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
                    ::serde_json::Map::from_iter([("value".to_owned(), ::serde_json::Value::from(value))])
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
                    let mut changes = ::serde_json::Map::from_iter([("min".to_owned(), ::serde_json::Value::from(min))]);
                    if Self::bound(state, "value") < min {
                        changes.insert("value".into(), ::serde_json::Value::from(min));
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
                    let mut changes = ::serde_json::Map::from_iter([("max".to_owned(), ::serde_json::Value::from(max))]);
                    if Self::bound(state, "value") > max {
                        changes.insert("value".into(), ::serde_json::Value::from(max));
                    }
                    changes
                });
            }

            /// One of the state's numbers (0 if it has none).
            fn bound(state: &::serde_json::Map<String, ::serde_json::Value>, key: &str) -> $num {
                state.get(key).and_then(::serde_json::Value::$from_json).unwrap_or_default() as $num
            }
        }

        super::widget::widget!($t);
    };
}
pub(crate) use bounded;
