//! What makes a widget kind ([`Kind`]): its model's and view's names and packages and its full
//! default state, as jupyter-widgets' model specification for ipywidgets 8
//! (`packages/schema/jupyterwidgetmodels.latest.md`) lists them, its style model, its views for
//! front ends without a widget manager and its rules for the front end's updates. Each widget's
//! file declares its kind; a model holds a reference to it. A `comm_open` carries the whole
//! default state, so a front end never falls back on defaults of its own.

use super::shown::Shown;
use super::validate::{self, Checked};
use serde_json::{Map, Value, json};

/// The three packages the core models come from, each at the version ipywidgets 8 registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Package {
    Base,
    Controls,
    Output,
}

impl Package {
    fn name(self) -> &'static str {
        match self {
            Package::Base => "@jupyter-widgets/base",
            Package::Controls => "@jupyter-widgets/controls",
            Package::Output => "@jupyter-widgets/output",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Package::Base | Package::Controls => "2.0.0",
            Package::Output => "1.0.0",
        }
    }
}

/// A model class of the specification this prelude speaks: its names, defaults and style, its
/// views for front ends without a widget manager, and its rules for the front end's updates.
/// Each widget's file declares its kind as a `static`, starting from [`Kind::control`]; a model
/// holds a reference to it.
pub(crate) struct Kind {
    /// The class's name in ipywidgets (`IntSlider`), which starts its repr.
    pub(crate) name: &'static str,
    /// The model's name and package (`IntSliderModel` in the controls package).
    pub(crate) model: (&'static str, Package),
    /// The view's name and package.
    pub(crate) view: (&'static str, Package),
    /// The attributes beyond the model and view names and the references (`layout`, `style`),
    /// at their defaults: a JSON object.
    pub(crate) attributes: fn() -> Value,
    /// The kind of the style model a widget of this kind references, if it has one.
    pub(crate) style: Option<&'static Kind>,
    /// Whether a model of this kind references a layout model of its own (every widget does;
    /// layouts and styles do not).
    pub(crate) has_layout: bool,
    /// The fields of its repr after the class's name, before the ones the repr adds for every
    /// kind (`description` and the styles).
    pub(crate) repr: fn(&Shown) -> Vec<String>,
    /// Its static HTML view, inside the frame every widget's has.
    pub(crate) html: fn(&Shown) -> String,
    /// What becomes of a value sent by the front end for an attribute (which the state holds),
    /// once it is within the [`validate::limits`] of every value.
    pub(crate) check: fn(&Map<String, Value>, &str, &Value) -> Checked,
}

impl Kind {
    /// A kind of model with a layout, no style, no fields in its repr, no HTML, and the front
    /// end's values checked by their types alone.
    pub(crate) const fn new(
        name: &'static str,
        model: (&'static str, Package),
        view: (&'static str, Package),
        attributes: fn() -> Value,
    ) -> Kind {
        Kind {
            name,
            model,
            view,
            attributes,
            style: None,
            has_layout: true,
            repr: |_| Vec::new(),
            html: |_| String::new(),
            check: validate::by_type,
        }
    }

    /// [`Kind::new`] for a model and a view of the controls package, as most widgets' are.
    pub(crate) const fn control(
        name: &'static str,
        model: &'static str,
        view: &'static str,
        attributes: fn() -> Value,
    ) -> Kind {
        Kind::new(
            name,
            (model, Package::Controls),
            (view, Package::Controls),
            attributes,
        )
    }

    /// A style model (`SliderStyleModel`), the one each described widget references. Style
    /// models live in the controls package; the base package's StyleView shows them.
    pub(crate) const fn style(model: &'static str, attributes: fn() -> Value) -> Kind {
        Kind {
            has_layout: false,
            ..Kind::new(
                "Style",
                (model, Package::Controls),
                ("StyleView", Package::Base),
                attributes,
            )
        }
    }
}

/// What becomes of `value` sent by the front end for the attribute `key` of a model of `kind`:
/// the limits of every value, then the kind's rules.
pub(crate) fn check(kind: &Kind, state: &Map<String, Value>, key: &str, value: &Value) -> Checked {
    validate::limits(value).unwrap_or_else(|| (kind.check)(state, key, value))
}

/// A DOM widget's attributes (every widget's: `_dom_classes`, `tabbable`, `tooltip`) and `own`.
pub(crate) fn dom(own: Value) -> Value {
    merge(
        json!({"_dom_classes": [], "tabbable": null, "tooltip": null}),
        own,
    )
}

/// A described widget's attributes (a DOM widget's, `description` and
/// `description_allow_html`) and `own`.
pub(crate) fn described(own: Value) -> Value {
    let described = json!({"description": "", "description_allow_html": false});
    merge(dom(described), own)
}

/// The font attributes of the button's and the label's style models, and `own`.
pub(crate) fn fonts(own: Value) -> Value {
    let fonts = json!({
        "font_family": null, "font_size": null, "font_style": null, "font_variant": null,
        "font_weight": null, "text_color": null, "text_decoration": null,
    });
    merge(fonts, own)
}

fn merge(base: Value, more: Value) -> Value {
    let (Value::Object(mut base), Value::Object(more)) = (base, more) else {
        unreachable!("both are JSON objects");
    };
    base.extend(more);
    Value::Object(base)
}

/// The full default state of a model of `kind`, without its `layout` and `style` references
/// (the caller's: they name models of their own).
pub(crate) fn state(kind: &Kind) -> Map<String, Value> {
    let ((model, module), (view, view_module)) = (kind.model, kind.view);
    let names = json!({
        "_model_module": module.name(),
        "_model_module_version": module.version(),
        "_model_name": model,
        "_view_module": view_module.name(),
        "_view_module_version": view_module.version(),
        "_view_name": view,
    });
    let Value::Object(mut state) = names else {
        unreachable!("a JSON object")
    };
    if let Value::Object(attributes) = (kind.attributes)() {
        state.extend(attributes);
    }
    state
}

/// How a state names another model: `"IPY_MODEL_<comm id>"`.
pub(crate) fn reference(model_id: &str) -> Value {
    Value::String(format!("IPY_MODEL_{model_id}"))
}
