//! The other core widgets: `Button` (clicks), `Checkbox`, `Dropdown` and `Text` (values the
//! user sets), `Label` and `HTML` (text the code sets).

use super::model::{Change, Model};
use super::render;
use super::spec::Class;
use super::widget::{attributes, set, widget};
use serde_json::Value;
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
            model: Model::new(Class::Button),
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

/// Runs `f` with the value of `key` each time it changes, on the callback thread.
fn listen<T: 'static>(
    model: &Model,
    key: &'static str,
    read: fn(&Value) -> Option<T>,
    f: impl Fn(T) + Send + Sync + 'static,
) {
    model.listen(
        &[key],
        Arc::new(move |change: &Change| {
            if let Some(value) = change.keys.get(key).and_then(read) {
                f(value)
            }
        }),
    );
}

fn text_of(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

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
            model: Model::new(Class::Checkbox),
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
attributes! { Checkbox = Checkbox::new();
    with_value, set_value, "value": bool = true, "Checks or unchecks it";
    description, set_description, "description": &str = "stop", "The label beside it";
    disabled, set_disabled, "disabled": bool = true, "Whether the user can change it";
    indent, set_indent, "indent": bool = false, "Whether it is indented as if it had a label";
}

/// A drop-down list of options (`ipywidgets.Dropdown`); its value is the chosen option's label.
/// Setting options selects the first, as ipywidgets does.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let optimizer = Dropdown::new().options(["sgd", "adam"]).with_value("adam").description("opt");
/// assert_eq!(optimizer.value().as_deref(), Some("adam"));
/// assert_eq!(optimizer.index(), Some(1));
/// ```
#[derive(Clone)]
pub struct Dropdown {
    model: Arc<Model>,
}

/// A label that is not among a [`Dropdown`]'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOption {
    /// The label asked for.
    pub label: String,
    /// The options there are.
    pub options: Vec<String>,
}

impl std::fmt::Display for UnknownOption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no option `{}` in this Dropdown: its options are {:?}",
            self.label, self.options
        )
    }
}

impl std::error::Error for UnknownOption {}

impl Default for Dropdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Dropdown {
    /// A drop-down without options.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Dropdown::new().value(), None);
    /// ```
    pub fn new() -> Self {
        Dropdown {
            model: Model::new(Class::Dropdown),
        }
    }

    /// The options when building; the first is chosen.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let d = Dropdown::new().options(["a", "b"]);
    /// assert_eq!(d.value().as_deref(), Some("a"));
    /// ```
    pub fn options<S: AsRef<str>>(self, options: impl IntoIterator<Item = S>) -> Self {
        self.set_options(options);
        self
    }

    /// Replaces the options; the first is chosen (none if there are none).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let d = Dropdown::new();
    /// d.set_options(vec!["relu".to_string(), "tanh".to_string()]);
    /// assert_eq!(d.index(), Some(0));
    /// ```
    pub fn set_options<S: AsRef<str>>(&self, options: impl IntoIterator<Item = S>) {
        let labels: Vec<Value> = options.into_iter().map(|o| o.as_ref().into()).collect();
        let index = if labels.is_empty() {
            Value::Null
        } else {
            0.into()
        };
        self.model.set(serde_json::Map::from_iter([
            ("_options_labels".to_owned(), Value::Array(labels)),
            ("index".to_owned(), index),
        ]));
    }

    /// The chosen option's label (`None` without options).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Dropdown::new().options(["x"]).value().as_deref(), Some("x"));
    /// ```
    pub fn value(&self) -> Option<String> {
        render::selected(&self.model.state())
    }

    /// The chosen option's position.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Dropdown::new().options(["x", "y"]).with_value("y").index(), Some(1));
    /// ```
    pub fn index(&self) -> Option<usize> {
        self.model.get("index").as_u64().map(|i| i as usize)
    }

    /// Chooses the option labelled `label` when building. Panics if there is none such
    /// ([`f_set_value`](Self::f_set_value) returns the error instead).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let d = Dropdown::new().options(["a", "b"]).with_value("b");
    /// assert_eq!(d.index(), Some(1));
    /// ```
    pub fn with_value(self, label: &str) -> Self {
        self.set_value(label);
        self
    }

    /// Chooses the option labelled `label`. Panics if there is none such
    /// ([`f_set_value`](Self::f_set_value) returns the error instead).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let d = Dropdown::new().options(["a", "b"]);
    /// d.set_value("b");
    /// assert_eq!(d.value().as_deref(), Some("b"));
    /// ```
    pub fn set_value(&self, label: &str) {
        if let Err(error) = self.f_set_value(label) {
            panic!("{error}");
        }
    }

    /// Chooses the option labelled `label`, or says which options there are.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let d = Dropdown::new().options(["a", "b"]);
    /// assert!(d.f_set_value("c").unwrap_err().to_string().contains("\"a\", \"b\""));
    /// ```
    pub fn f_set_value(&self, label: &str) -> Result<(), UnknownOption> {
        let options = render::labels(&self.model.state());
        match options.iter().position(|o| o == label) {
            Some(index) => {
                set(&self.model, "index", index);
                Ok(())
            }
            None => Err(UnknownOption {
                label: label.to_owned(),
                options,
            }),
        }
    }

    /// Runs `f` with the newly chosen label each time the choice changes, on the prelude's
    /// callback thread (see [`IntSlider::on_change`](super::IntSlider::on_change) for what `f`
    /// may touch).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let d = Dropdown::new().options(["sgd", "adam"]);
    /// d.on_change(|choice| println!("optimizer: {choice:?}"));
    /// ```
    pub fn on_change(&self, f: impl Fn(Option<String>) + Send + Sync + 'static) {
        self.model.listen(
            &["index", "_options_labels"],
            Arc::new(move |change: &Change| f(render::selected(&change.state))),
        );
    }
}

widget!(Dropdown);
attributes! { Dropdown = Dropdown::new();
    description, set_description, "description": &str = "optimizer", "The label before it";
    disabled, set_disabled, "disabled": bool = true, "Whether the user can choose";
}

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
            model: Model::new(Class::Text),
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
attributes! { Text = Text::new();
    with_value, set_value, "value": &str = "resnet18", "Sets the text";
    placeholder, set_placeholder, "placeholder": &str = "run name", "Grey text shown while empty";
    description, set_description, "description": &str = "name", "The label before it";
    disabled, set_disabled, "disabled": bool = true, "Whether the user can type";
    continuous_update, set_continuous_update, "continuous_update": bool = false,
        "Whether the front end sends each keystroke, not only on Enter or leaving the field";
}

/// A widget showing a string the code sets: `Label` (text) and `HTML`.
macro_rules! shown_text {
    ($t:ident, $class:expr, $what:literal, $example:literal) => {
        impl $t {
            #[doc = concat!("A widget showing `", $what, "`.\n\n```\nuse tchbook_prelude::prelude::*;\nassert_eq!(", stringify!($t), "::new(", stringify!($example), ").to_string(), \"", stringify!($t), "(value='", $example, "')\");\n```")]
            pub fn new(value: impl Into<String>) -> Self {
                let widget = $t {
                    model: Model::new($class),
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

shown_text!(Label, Class::Label, "text", "loss 0.25");

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

shown_text!(HTML, Class::Html, "HTML", "<b>done</b>");
