//! The models' full default states, as jupyter-widgets' model specification for ipywidgets 8
//! (`packages/schema/jupyterwidgetmodels.latest.md`) lists them: every attribute, its default,
//! and the model's and view's names, modules and versions. A `comm_open` carries all of it, so
//! a front end never falls back on defaults of its own.

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

/// A widget class of the specification this prelude speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Layout,
    IntSlider,
    FloatSlider,
    IntProgress,
    FloatProgress,
    Button,
    Checkbox,
    Dropdown,
    Text,
    Label,
    Html,
    HBox,
    VBox,
    Output,
    /// A described widget's style model.
    Style(Style),
}

/// A style model: the one each described widget references, by the widget's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Slider,
    Progress,
    Button,
    Checkbox,
    Description,
    Text,
    Label,
    Html,
}

impl Class {
    /// The model's and the view's names and packages.
    fn names(self) -> (&'static str, Package, &'static str, Package) {
        use Package::*;
        match self {
            Class::Layout => ("LayoutModel", Base, "LayoutView", Base),
            Class::IntSlider => ("IntSliderModel", Controls, "IntSliderView", Controls),
            Class::FloatSlider => ("FloatSliderModel", Controls, "FloatSliderView", Controls),
            Class::IntProgress => ("IntProgressModel", Controls, "ProgressView", Controls),
            Class::FloatProgress => ("FloatProgressModel", Controls, "ProgressView", Controls),
            Class::Button => ("ButtonModel", Controls, "ButtonView", Controls),
            Class::Checkbox => ("CheckboxModel", Controls, "CheckboxView", Controls),
            Class::Dropdown => ("DropdownModel", Controls, "DropdownView", Controls),
            Class::Text => ("TextModel", Controls, "TextView", Controls),
            Class::Label => ("LabelModel", Controls, "LabelView", Controls),
            Class::Html => ("HTMLModel", Controls, "HTMLView", Controls),
            Class::HBox => ("HBoxModel", Controls, "HBoxView", Controls),
            Class::VBox => ("VBoxModel", Controls, "VBoxView", Controls),
            Class::Output => ("OutputModel", Output, "OutputView", Output),
            // Style models live in the controls package; the base package's StyleView shows them.
            Class::Style(style) => (style.model_name(), Controls, "StyleView", Base),
        }
    }

    /// The style model a widget of this class references, if it has one.
    pub(crate) fn style(self) -> Option<Style> {
        match self {
            Class::IntSlider | Class::FloatSlider => Some(Style::Slider),
            Class::IntProgress | Class::FloatProgress => Some(Style::Progress),
            Class::Button => Some(Style::Button),
            Class::Checkbox => Some(Style::Checkbox),
            Class::Dropdown => Some(Style::Description),
            Class::Text => Some(Style::Text),
            Class::Label => Some(Style::Label),
            Class::Html => Some(Style::Html),
            Class::Layout | Class::HBox | Class::VBox | Class::Output | Class::Style(_) => None,
        }
    }

    /// The class's attributes beyond the model and view names and the references (`layout`,
    /// `style`), at their defaults.
    fn attributes(self) -> Value {
        // Every DOM widget's, and every described widget's, attributes.
        let dom = json!({"_dom_classes": [], "tabbable": null, "tooltip": null});
        let described = json!({"description": "", "description_allow_html": false});
        let own = match self {
            Class::Layout => {
                let mut layout = Map::new();
                for key in LAYOUT_KEYS {
                    layout.insert((*key).into(), Value::Null);
                }
                return Value::Object(layout);
            }
            Class::IntSlider => json!({
                "behavior": "drag-tap", "continuous_update": true, "disabled": false,
                "max": 100, "min": 0, "orientation": "horizontal", "readout": true,
                "readout_format": "d", "step": 1, "value": 0,
            }),
            Class::FloatSlider => json!({
                "behavior": "drag-tap", "continuous_update": true, "disabled": false,
                "max": 100.0, "min": 0.0, "orientation": "horizontal", "readout": true,
                "readout_format": ".2f", "step": 0.1, "value": 0.0,
            }),
            Class::IntProgress => json!({
                "bar_style": "", "max": 100, "min": 0, "orientation": "horizontal", "value": 0,
            }),
            Class::FloatProgress => json!({
                "bar_style": "", "max": 100.0, "min": 0.0, "orientation": "horizontal",
                "value": 0.0,
            }),
            Class::Button => {
                // A button has a description but not `description_allow_html`.
                return merge(
                    dom,
                    json!({
                        "button_style": "", "description": "", "disabled": false, "icon": "",
                    }),
                );
            }
            Class::Checkbox => json!({"disabled": false, "indent": true, "value": false}),
            Class::Dropdown => json!({"_options_labels": [], "disabled": false, "index": null}),
            Class::Text => json!({
                "continuous_update": true, "disabled": false, "placeholder": "\u{200b}",
                "value": "",
            }),
            Class::Label | Class::Html => json!({"placeholder": "\u{200b}", "value": ""}),
            Class::HBox | Class::VBox => {
                return merge(dom, json!({"box_style": "", "children": []}));
            }
            Class::Output => return merge(dom, json!({"msg_id": "", "outputs": []})),
            Class::Style(style) => return style.attributes(),
        };
        merge(merge(dom, described), own)
    }
}

impl Style {
    fn model_name(self) -> &'static str {
        match self {
            Style::Slider => "SliderStyleModel",
            Style::Progress => "ProgressStyleModel",
            Style::Button => "ButtonStyleModel",
            Style::Checkbox => "CheckboxStyleModel",
            Style::Description => "DescriptionStyleModel",
            Style::Text => "TextStyleModel",
            Style::Label => "LabelStyleModel",
            Style::Html => "HTMLStyleModel",
        }
    }

    fn attributes(self) -> Value {
        let fonts = json!({
            "font_family": null, "font_size": null, "font_style": null, "font_variant": null,
            "font_weight": null, "text_color": null, "text_decoration": null,
        });
        match self {
            Style::Slider => json!({"description_width": "", "handle_color": null}),
            Style::Progress => json!({"bar_color": null, "description_width": ""}),
            Style::Button => merge(fonts, json!({"button_color": null})),
            Style::Checkbox => json!({"background": null, "description_width": ""}),
            Style::Description => json!({"description_width": ""}),
            Style::Text | Style::Html => json!({
                "background": null, "description_width": "", "font_size": null,
                "text_color": null,
            }),
            Style::Label => merge(fonts, json!({"background": null, "description_width": ""})),
        }
    }
}

/// The CSS attributes of a `LayoutModel`, all `null` by default.
const LAYOUT_KEYS: &[&str] = &[
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

fn merge(base: Value, more: Value) -> Value {
    let (Value::Object(mut base), Value::Object(more)) = (base, more) else {
        unreachable!("both are JSON objects");
    };
    base.extend(more);
    Value::Object(base)
}

fn names(model: &str, module: Package, view: &str, view_module: Package) -> Map<String, Value> {
    let value = json!({
        "_model_module": module.name(),
        "_model_module_version": module.version(),
        "_model_name": model,
        "_view_module": view_module.name(),
        "_view_module_version": view_module.version(),
        "_view_name": view,
    });
    let Value::Object(map) = value else {
        unreachable!("a JSON object")
    };
    map
}

/// The full default state of a model of `class`, without its `layout` and `style` references
/// (the caller's: they name models of their own).
pub(crate) fn state(class: Class) -> Map<String, Value> {
    let (model, module, view, view_module) = class.names();
    let mut state = names(model, module, view, view_module);
    if let Value::Object(attributes) = class.attributes() {
        state.extend(attributes);
    }
    state
}

/// How a state names another model: `"IPY_MODEL_<comm id>"`.
pub(crate) fn reference(model_id: &str) -> Value {
    Value::String(format!("IPY_MODEL_{model_id}"))
}
