//! The layout model every widget references (`LayoutModel`): its CSS attributes, all `null` by
//! default. Not a widget of its own: a model opens its layout before itself and closes it with
//! itself.

use super::kind::{Kind, Package};
use serde_json::{Map, Value};

/// The kind of every widget's layout model.
pub(crate) static LAYOUT: Kind = Kind {
    has_layout: false,
    ..Kind::new(
        "Layout",
        ("LayoutModel", Package::Base),
        ("LayoutView", Package::Base),
        || {
            Value::Object(
                KEYS.iter()
                    .map(|k| ((*k).into(), Value::Null))
                    .collect::<Map<_, _>>(),
            )
        },
    )
};

/// The CSS attributes of a `LayoutModel`.
const KEYS: &[&str] = &[
    "align_content",
    "align_items",
    "align_self",
    "border_bottom",
    "border_left",
    "border_right",
    "border_top",
    "bottom",
    "display",
    "flex",
    "flex_flow",
    "grid_area",
    "grid_auto_columns",
    "grid_auto_flow",
    "grid_auto_rows",
    "grid_column",
    "grid_gap",
    "grid_row",
    "grid_template_areas",
    "grid_template_columns",
    "grid_template_rows",
    "height",
    "justify_content",
    "justify_items",
    "left",
    "margin",
    "max_height",
    "max_width",
    "min_height",
    "min_width",
    "object_fit",
    "object_position",
    "order",
    "overflow",
    "padding",
    "right",
    "top",
    "visibility",
    "width",
];
