//! `HBox` and `VBox`: widgets laid out in a row or a column. A box's children are opened
//! before it, since its state names them.

use super::kind::{self, Kind};
use super::model::Model;
use super::shown::{Shown, tuple};
use super::widget::{Widget, attributes, widget};
use serde_json::{Map, Value, json};
use std::sync::Arc;

fn set_children(model: &Model, children: &[&dyn Widget]) {
    let models: Vec<Arc<Model>> = children.iter().map(|c| Arc::clone(c.model())).collect();
    let references = models.iter().map(|m| kind::reference(m.id())).collect();
    model.set_with_children(
        Map::from_iter([("children".to_owned(), Value::Array(references))]),
        models,
    );
}

macro_rules! layout_box {
    ($t:ident, $kind:expr, $python:literal) => {
        #[doc = concat!("Widgets in a ", $python, " (`ipywidgets.", stringify!($t), "`); its children are handles on the same models as the widgets given, so they stay live.\n\n```\nuse tchbook_prelude::prelude::*;\nlet lr = FloatSlider::new().description(\"lr\");\nlet go = Button::new().description(\"Train\");\nlet controls = ", stringify!($t), "::new(&[&lr, &go]);\nassert_eq!(controls.len(), 2);\n```")]
        #[derive(Clone)]
        pub struct $t {
            model: Arc<Model>,
        }

        impl $t {
            #[doc = concat!("A box of `children` (any widgets, in order).\n\n```\nuse tchbook_prelude::prelude::*;\nlet b = ", stringify!($t), "::new(&[&Label::new(\"a\"), &Label::new(\"b\")]);\nassert!(b.to_string().starts_with(\"", stringify!($t), "(children=(Label(value='a'), \"));\n```")]
            pub fn new(children: &[&dyn Widget]) -> Self {
                let b = $t {
                    model: Model::new($kind),
                };
                set_children(&b.model, children);
                b
            }

            #[doc = concat!("Replaces the children (opened first if the box is shown).\n\n```\nuse tchbook_prelude::prelude::*;\nlet b = ", stringify!($t), "::new(&[]);\nb.set_children(&[&Label::new(\"x\")]);\nassert_eq!(b.len(), 1);\n```")]
            pub fn set_children(&self, children: &[&dyn Widget]) {
                set_children(&self.model, children);
            }

            #[doc = concat!("How many children it has.\n\n```\nuse tchbook_prelude::prelude::*;\nassert!(", stringify!($t), "::new(&[]).is_empty());\n```")]
            pub fn len(&self) -> usize {
                self.model.children().len()
            }

            #[doc = concat!("Whether it has no children.\n\n```\nuse tchbook_prelude::prelude::*;\nassert!(!", stringify!($t), "::new(&[&Label::new(\"x\")]).is_empty());\n```")]
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }

        widget!($t);
        attributes! { $t = $t::new(&[]);
            box_style, set_box_style, "box_style": &str = "info",
                "The border's colour: `success`, `info`, `warning`, `danger` or `` (none)";
        }
    };
}

layout_box!(HBox, &HBOX, "row");
layout_box!(VBox, &VBOX, "column");

static HBOX: Kind = Kind {
    repr,
    html: |shown| html(shown, "row"),
    ..Kind::control("HBox", "HBoxModel", "HBoxView", attributes)
};

static VBOX: Kind = Kind {
    repr,
    html: |shown| html(shown, "column"),
    ..Kind::control("VBox", "VBoxModel", "VBoxView", attributes)
};

fn attributes() -> Value {
    kind::dom(json!({"box_style": "", "children": []}))
}

fn repr(shown: &Shown) -> Vec<String> {
    vec![format!(
        "children=({})",
        tuple(shown.children.iter().cloned())
    )]
}

/// The children, each in a `<div>`, in a row or a column (the CSS `flex-direction`).
fn html(shown: &Shown, direction: &str) -> String {
    let children: String = shown
        .children
        .iter()
        .map(|c| format!("<div>{c}</div>"))
        .collect();
    format!("<div style=\"display:flex;flex-direction:{direction};gap:0.5em\">{children}</div>")
}
