//! `Button`: clicks the user makes, counted the moment they arrive (`ButtonModel` and its
//! `ButtonStyleModel`).

use super::kind::{self, Kind};
use super::model::Model;
use super::shown::Shown;
use super::widget::{attributes, widget};
use crate::sys::escape_html;
use serde_json::{Value, json};
use std::sync::Arc;

/// A button (`ipywidgets.Button`). The front end's clicks are counted the moment they arrive, so a
/// training loop can poll [`clicks`](Self::clicks); [`on_click`](Self::on_click) runs code for
/// each.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let stop = Button::new().description("Stop").button_style("danger").icon("stop");
/// assert_eq!(stop.clicks(), 0);
/// // for batch in &loader { if stop.clicks() > 0 { break; } ... }
/// ```
#[derive(Clone)]
pub struct Button {
    model: Arc<Model>,
}

impl Default for Button {
    fn default() -> Self {
        Self::new()
    }
}

impl Button {
    /// A button without a label.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Button::new().description("Go").to_string(), "Button(description='Go')");
    /// ```
    pub fn new() -> Self {
        Button {
            model: Model::new(&KIND),
        }
    }

    /// How many times the front end clicked it.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Button::new().clicks(), 0);
    /// ```
    pub fn clicks(&self) -> u64 {
        self.model.events()
    }

    /// Runs `f` at each click, on the prelude's callback thread: `f` may use what it captured
    /// (clones of widgets, `Arc`s), not the notebook's variables, which belong to the running
    /// cell.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let button = Button::new().description("Count");
    /// let label = Label::new("0 clicks");
    /// let (b, l) = (button.clone(), label.clone());
    /// button.on_click(move || l.set_value(format!("{} clicks", b.clicks())));
    /// ```
    pub fn on_click(&self, f: impl Fn() + Send + Sync + 'static) {
        self.model.listen_custom(Arc::new(move |content: &Value| {
            if content.get("event").and_then(Value::as_str) == Some("click") {
                f()
            }
        }));
    }
}

widget!(Button);
attributes! { Button = Button::new();
    description, set_description, "description": &str = "Stop", "The button's label";
    disabled, set_disabled, "disabled": bool = true, "Whether it can be clicked";
    button_style, set_button_style, "button_style": &str = "danger",
        "Its colour: `primary`, `success`, `info`, `warning`, `danger` or `` (the default)";
    icon, set_icon, "icon": &str = "stop", "A Font Awesome icon's name, shown before the label";
    tooltip, set_tooltip, "tooltip": &str = "Stops training", "Text shown on hover";
}

// A button has a description but not `description_allow_html`.
static KIND: Kind = Kind {
    style: Some(&STYLE),
    html,
    ..Kind::control("Button", "ButtonModel", "ButtonView", || {
        kind::dom(json!({
            "button_style": "", "description": "", "disabled": false, "icon": "",
        }))
    })
};

static STYLE: Kind = Kind::style("ButtonStyleModel", || {
    kind::fonts(json!({"button_color": null}))
});

fn html(shown: &Shown) -> String {
    format!(
        "<button disabled title=\"{}\">{}</button>",
        escape_html(&shown.text("tooltip")),
        escape_html(&shown.text("description"))
    )
}
