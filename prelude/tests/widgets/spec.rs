//! Every widget opens with the full default state ipywidgets 8's model specification gives it,
//! after its layout and style.

use super::{opened, protocol};
use crate::{is_child, run_child};
use serde_json::{Map, Value, json};
use tchbook_prelude::display::show;
use tchbook_prelude::prelude::*;
use tchbook_prelude::runtime;
use tchbook_wire::Message;

/// The attributes of each model beyond its names, at the defaults ipywidgets 8's specification
/// (`packages/schema/jupyterwidgetmodels.latest.md`) gives them; `layout` and `style` are
/// references checked apart.
fn specified(model: &str) -> Value {
    let dom = json!({"_dom_classes": [], "tabbable": null, "tooltip": null});
    let described = json!({"description": "", "description_allow_html": false});
    let slider = json!({"behavior": "drag-tap", "continuous_update": true, "disabled": false,
        "orientation": "horizontal", "readout": true});
    let fonts = json!({"font_family": null, "font_size": null, "font_style": null,
        "font_variant": null, "font_weight": null, "text_color": null, "text_decoration": null});
    let own = match model {
        "IntSliderModel" => [described, slider, json!({"max": 100, "min": 0, "readout_format": "d", "step": 1, "value": 0})].to_vec(),
        "FloatSliderModel" => [described, slider, json!({"max": 100.0, "min": 0.0, "readout_format": ".2f", "step": 0.1, "value": 0.0})].to_vec(),
        "IntProgressModel" => [described, json!({"bar_style": "", "max": 100, "min": 0, "orientation": "horizontal", "value": 0})].to_vec(),
        "FloatProgressModel" => [described, json!({"bar_style": "", "max": 100.0, "min": 0.0, "orientation": "horizontal", "value": 0.0})].to_vec(),
        "ButtonModel" => vec![json!({"button_style": "", "description": "", "disabled": false, "icon": ""})],
        "CheckboxModel" => [described, json!({"disabled": false, "indent": true, "value": false})].to_vec(),
        "DropdownModel" => [described, json!({"_options_labels": [], "disabled": false, "index": null})].to_vec(),
        "TextModel" => [described, json!({"continuous_update": true, "disabled": false, "placeholder": "\u{200b}", "value": ""})].to_vec(),
        "LabelModel" | "HTMLModel" => [described, json!({"placeholder": "\u{200b}", "value": ""})].to_vec(),
        "HBoxModel" | "VBoxModel" => vec![json!({"box_style": "", "children": []})],
        "OutputModel" => vec![json!({"msg_id": "", "outputs": []})],
        "LayoutModel" => {
            let keys = "align_content align_items align_self border_bottom border_left border_right \
                border_top bottom display flex flex_flow grid_area grid_auto_columns grid_auto_flow \
                grid_auto_rows grid_column grid_gap grid_row grid_template_areas grid_template_columns \
                grid_template_rows height justify_content justify_items left margin max_height max_width \
                min_height min_width object_fit object_position order overflow padding right top \
                visibility width";
            return Value::Object(keys.split_whitespace().map(|k| (k.to_owned(), Value::Null)).collect());
        }
        "SliderStyleModel" => return json!({"description_width": "", "handle_color": null}),
        "ProgressStyleModel" => return json!({"bar_color": null, "description_width": ""}),
        "ButtonStyleModel" => {
            let mut style = fonts.as_object().unwrap().clone();
            style.insert("button_color".into(), Value::Null);
            return Value::Object(style);
        }
        "CheckboxStyleModel" => return json!({"background": null, "description_width": ""}),
        "DescriptionStyleModel" => return json!({"description_width": ""}),
        "TextStyleModel" | "HTMLStyleModel" => return json!({"background": null,
            "description_width": "", "font_size": null, "text_color": null}),
        "LabelStyleModel" => {
            let mut style = fonts.as_object().unwrap().clone();
            style.insert("background".into(), Value::Null);
            style.insert("description_width".into(), "".into());
            return Value::Object(style);
        }
        other => panic!("no specification for {other}"),
    };
    let mut all = dom.as_object().unwrap().clone();
    for part in own {
        all.extend(part.as_object().unwrap().clone());
    }
    Value::Object(all)
}

/// The model's and view's names, modules and versions the specification registers it with.
fn registered(model: &str) -> [&'static str; 5] {
    const CONTROLS: &str = "@jupyter-widgets/controls";
    const BASE: &str = "@jupyter-widgets/base";
    const OUTPUT: &str = "@jupyter-widgets/output";
    match model {
        "LayoutModel" => [BASE, "2.0.0", "LayoutView", BASE, "2.0.0"],
        "OutputModel" => [OUTPUT, "1.0.0", "OutputView", OUTPUT, "1.0.0"],
        m if m.ends_with("StyleModel") => [CONTROLS, "2.0.0", "StyleView", BASE, "2.0.0"],
        "IntProgressModel" | "FloatProgressModel" => {
            [CONTROLS, "2.0.0", "ProgressView", CONTROLS, "2.0.0"]
        }
        "IntSliderModel" => [CONTROLS, "2.0.0", "IntSliderView", CONTROLS, "2.0.0"],
        "FloatSliderModel" => [CONTROLS, "2.0.0", "FloatSliderView", CONTROLS, "2.0.0"],
        "ButtonModel" => [CONTROLS, "2.0.0", "ButtonView", CONTROLS, "2.0.0"],
        "CheckboxModel" => [CONTROLS, "2.0.0", "CheckboxView", CONTROLS, "2.0.0"],
        "DropdownModel" => [CONTROLS, "2.0.0", "DropdownView", CONTROLS, "2.0.0"],
        "TextModel" => [CONTROLS, "2.0.0", "TextView", CONTROLS, "2.0.0"],
        "LabelModel" => [CONTROLS, "2.0.0", "LabelView", CONTROLS, "2.0.0"],
        "HTMLModel" => [CONTROLS, "2.0.0", "HTMLView", CONTROLS, "2.0.0"],
        "HBoxModel" => [CONTROLS, "2.0.0", "HBoxView", CONTROLS, "2.0.0"],
        "VBoxModel" => [CONTROLS, "2.0.0", "VBoxView", CONTROLS, "2.0.0"],
        other => panic!("no registration for {other}"),
    }
}

/// The style model each described widget references.
fn style_of(model: &str) -> Option<&'static str> {
    Some(match model {
        "IntSliderModel" | "FloatSliderModel" => "SliderStyleModel",
        "IntProgressModel" | "FloatProgressModel" => "ProgressStyleModel",
        "ButtonModel" => "ButtonStyleModel",
        "CheckboxModel" => "CheckboxStyleModel",
        "DropdownModel" => "DescriptionStyleModel",
        "TextModel" => "TextStyleModel",
        "LabelModel" => "LabelStyleModel",
        "HTMLModel" => "HTMLStyleModel",
        _ => return None,
    })
}

const DEFAULTS_CHILD: &str = "widgets::spec::defaults_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn defaults_child() {
    if !is_child(DEFAULTS_CHILD) {
        return;
    }
    runtime::attach();
    show(&IntSlider::new());
    show(&FloatSlider::new());
    show(&IntProgress::new());
    show(&FloatProgress::new());
    show(&Button::new());
    show(&Checkbox::new());
    show(&Dropdown::new());
    show(&Text::new());
    show(&Label::new(""));
    show(&HTML::new(""));
    show(&Output::new());
    show(&HBox::new(&[]));
    show(&VBox::new(&[]));
}

#[test]
fn every_widget_opens_with_the_specifications_full_default_state_after_its_layout_and_style() {
    let messages = protocol(&run_child(DEFAULTS_CHILD));
    let opened = opened(&messages);
    let mut seen: Map<String, Value> = Map::new();
    let mut widgets = Vec::new();
    for (id, state) in &opened {
        assert_eq!(id.len(), 32, "a uuid4 in hex: {id}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        let model = state["_model_name"].as_str().unwrap().to_owned();
        let [module, version, view, view_module, view_version] = registered(&model);
        assert_eq!(state["_model_module"], module, "{model}");
        assert_eq!(state["_model_module_version"], version, "{model}");
        assert_eq!(state["_view_name"], view, "{model}");
        assert_eq!(state["_view_module"], view_module, "{model}");
        assert_eq!(state["_view_module_version"], view_version, "{model}");
        let mut rest = state.clone();
        for key in [
            "_model_module",
            "_model_module_version",
            "_model_name",
            "_view_name",
            "_view_module",
            "_view_module_version",
        ] {
            rest.remove(key);
        }
        // References name models opened before, of the right kind.
        for (key, kind) in [("layout", Some("LayoutModel")), ("style", style_of(&model))] {
            let Some(reference) = rest.remove(key) else {
                assert!(
                    model.ends_with("StyleModel") || model == "LayoutModel" || kind.is_none(),
                    "{model} has no {key}"
                );
                continue;
            };
            let target = reference
                .as_str()
                .unwrap()
                .strip_prefix("IPY_MODEL_")
                .unwrap();
            assert_eq!(
                seen.get(target).and_then(Value::as_str),
                kind,
                "{model}'s {key} names a model opened before it"
            );
        }
        assert_eq!(
            Value::Object(rest),
            specified(&model),
            "{model}'s attributes"
        );
        if !model.ends_with("StyleModel") && model != "LayoutModel" {
            widgets.push(model.clone());
        }
        seen.insert(id.clone(), model.into());
    }
    assert_eq!(
        widgets,
        [
            "IntSliderModel",
            "FloatSliderModel",
            "IntProgressModel",
            "FloatProgressModel",
            "ButtonModel",
            "CheckboxModel",
            "DropdownModel",
            "TextModel",
            "LabelModel",
            "HTMLModel",
            "OutputModel",
            "HBoxModel",
            "VBoxModel"
        ]
    );
    // Each widget is displayed once, after its comms, by its view.
    let displays = messages
        .iter()
        .filter(|m| matches!(m, Message::Display { .. }))
        .count();
    assert_eq!(displays, widgets.len());
}
