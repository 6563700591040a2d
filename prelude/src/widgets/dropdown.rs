//! `Dropdown`: an option the user chooses among labels (`DropdownModel` and its
//! `DescriptionStyleModel`). Its state holds the labels (`_options_labels`) and the chosen one's
//! position (`index`), which the front end's updates keep among them.

use super::kind::{self, Kind};
use super::model::{Change, Model};
use super::shown::{Shown, py, tuple};
use super::validate::{self, Checked};
use super::widget::{attributes, control, set, widget};
use crate::sys::escape_html;
use serde_json::{Map, Value, json};
use std::sync::Arc;

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
            model: Model::new(&KIND),
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
        selected(&self.model.state())
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
        let options = labels(&self.model.state());
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
            Arc::new(move |change: &Change| f(selected(&change.state))),
        );
    }
}

widget!(Dropdown);
control!(Dropdown, Option<String>, &["index", "_options_labels"]);
attributes! { Dropdown = Dropdown::new();
    description, set_description, "description": &str = "optimizer", "The label before it";
    disabled, set_disabled, "disabled": bool = true, "Whether the user can choose";
}

static KIND: Kind = Kind {
    style: Some(&STYLE),
    repr,
    html,
    check,
    ..Kind::control("Dropdown", "DropdownModel", "DropdownView", || {
        kind::described(json!({"_options_labels": [], "disabled": false, "index": null}))
    })
};

static STYLE: Kind = Kind::style("DescriptionStyleModel", || json!({"description_width": ""}));

fn repr(shown: &Shown) -> Vec<String> {
    let labels = labels(shown.state);
    let mut fields = vec![format!(
        "options=({})",
        tuple(labels.iter().map(|l| py(&Value::from(l.as_str()))))
    )];
    if let Some(value) = selected(shown.state) {
        fields.push(format!("value={}", py(&Value::from(value))));
    }
    fields
}

fn html(shown: &Shown) -> String {
    let chosen = selected(shown.state);
    let options: String = labels(shown.state)
        .iter()
        .map(|l| {
            let on = if chosen.as_ref() == Some(l) {
                " selected"
            } else {
                ""
            };
            format!("<option{on}>{}</option>", escape_html(l))
        })
        .collect();
    shown.row(&format!("<select disabled>{options}</select>"))
}

/// The front end's `index` is none, or a whole number below the number of options.
fn check(state: &Map<String, Value>, key: &str, value: &Value) -> Checked {
    if key != "index" {
        return validate::by_type(state, key, value);
    }
    let options = labels_of(state).map_or(0, Vec::len);
    match value {
        Value::Null => Checked::Accepted,
        Value::Number(n) if n.as_u64().is_some_and(|i| (i as usize) < options) => Checked::Accepted,
        _ => Checked::Refused(format!(
            "expected none or an option's index below {options}"
        )),
    }
}

fn labels_of(state: &Map<String, Value>) -> Option<&Vec<Value>> {
    state.get("_options_labels").and_then(Value::as_array)
}

/// The option labels.
fn labels(state: &Map<String, Value>) -> Vec<String> {
    labels_of(state)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The chosen option's label.
fn selected(state: &Map<String, Value>) -> Option<String> {
    let index = state.get("index")?.as_u64()? as usize;
    labels(state).get(index).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_front_ends_index_stays_among_the_options() {
        let mut state = kind::state(&KIND);
        state.insert("_options_labels".into(), json!(["a", "b"]));
        state.insert("index".into(), json!(0));
        let check = |value: Value| kind::check(&KIND, &state, "index", &value);
        assert_eq!(check(json!(1)), Checked::Accepted);
        assert_eq!(check(json!(null)), Checked::Accepted);
        for bad in [json!(2), json!(-1), json!(1.5), json!("a")] {
            assert_eq!(
                check(bad),
                Checked::Refused("expected none or an option's index below 2".into())
            );
        }
        assert!(matches!(
            kind::check(&KIND, &state, "disabled", &json!(0)),
            Checked::Refused(_)
        ));
    }
}
