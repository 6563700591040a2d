//! A front end's state update, checked against the model before it is applied, as ipywidgets'
//! traits check it: each value keeps its attribute's JSON type, a number is finite (and whole
//! for an integer attribute), a bounded `value` is kept within `min..=max` and a dropdown's
//! `index` within its options, and no value is larger than [`MAX_VALUE_BYTES`] or nested deeper
//! than [`MAX_DEPTH`]. Anything a front end (or whoever holds the connection) sends lands here
//! before a loop reads it.

use serde_json::{Map, Value};

/// The largest value one attribute takes from a front end (its JSON text): far above any
/// control's, far below what would make the notebook's memory jump.
pub(crate) const MAX_VALUE_BYTES: usize = 1 << 20;
/// The deepest nesting of arrays and objects a value may have.
pub(crate) const MAX_DEPTH: usize = 32;

/// What becomes of one attribute of a front end's update.
#[derive(Debug, PartialEq)]
pub(crate) enum Checked {
    /// Applied as sent.
    Accepted,
    /// Applied as this value instead (kept within its bounds, made whole).
    Corrected(Value),
    /// Not applied, for this reason (the model keeps its value).
    Refused(String),
}

/// Checks `value` for the attribute `key` of a model whose state is `state` (which holds `key`).
pub(crate) fn check(state: &Map<String, Value>, key: &str, value: &Value) -> Checked {
    if depth(value) > MAX_DEPTH {
        return Checked::Refused(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    let size = match value {
        Value::String(text) => text.len(),
        other => other.to_string().len(),
    };
    if size > MAX_VALUE_BYTES {
        return Checked::Refused(format!(
            "{size} bytes, more than the {MAX_VALUE_BYTES} a widget's value may hold"
        ));
    }
    let current = state.get(key).unwrap_or(&Value::Null);
    if key == "index" && state.get("_options_labels").is_some_and(Value::is_array) {
        return option_index(state, value);
    }
    match (current, value) {
        (Value::Null, _) => Checked::Accepted,
        (Value::Number(now), Value::Number(sent)) => {
            let whole = now.is_i64() || now.is_u64();
            number(state, key, whole, sent.as_f64().unwrap_or(f64::NAN), value)
        }
        (Value::Bool(_), Value::Bool(_))
        | (Value::String(_), Value::String(_))
        | (Value::Array(_), Value::Array(_))
        | (Value::Object(_), Value::Object(_)) => Checked::Accepted,
        (now, _) => Checked::Refused(format!("expected {}", kind(now))),
    }
}

/// A number for a numeric attribute: finite, whole where the attribute is, and a `value`
/// within the model's `min..=max`.
fn number(state: &Map<String, Value>, key: &str, whole: bool, sent: f64, raw: &Value) -> Checked {
    if !sent.is_finite() {
        return Checked::Refused("expected a finite number".to_owned());
    }
    let mut kept = if whole { sent.trunc() } else { sent };
    if key == "value" {
        let bound = |name| state.get(name).and_then(Value::as_f64);
        if let Some(min) = bound("min") {
            kept = kept.max(min);
        }
        if let Some(max) = bound("max") {
            kept = kept.min(max);
        }
    }
    let kept = if whole {
        // Within i64 now: the bounds are the model's own integers, or the value was whole.
        Value::from(kept.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
    } else {
        Value::from(kept)
    };
    // A float attribute sent a whole number (`1` for `1.0`) takes it as it came.
    if kept == *raw || (!whole && kept.as_f64() == raw.as_f64()) {
        Checked::Accepted
    } else {
        Checked::Corrected(kept)
    }
}

/// A dropdown's `index`: none, or a whole number below the number of options.
fn option_index(state: &Map<String, Value>, value: &Value) -> Checked {
    let options = state
        .get("_options_labels")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    match value {
        Value::Null => Checked::Accepted,
        Value::Number(n) if n.as_u64().is_some_and(|i| (i as usize) < options) => Checked::Accepted,
        _ => Checked::Refused(format!(
            "expected none or an option's index below {options}"
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "none",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// How deeply `value` nests (a scalar: 0), without recursion: a hostile value may nest deeper
/// than any stack.
fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 0usize)];
    while let Some((value, level)) = pending.pop() {
        deepest = deepest.max(level);
        if level > MAX_DEPTH {
            break;
        }
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|v| (v, level + 1))),
            Value::Object(map) => pending.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slider() -> Map<String, Value> {
        json!({"value": 5, "min": 0, "max": 100, "description": "lr", "disabled": false})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn a_slider_keeps_its_range_and_its_type() {
        let state = slider();
        assert_eq!(check(&state, "value", &json!(7)), Checked::Accepted);
        assert_eq!(
            check(&state, "value", &json!(1e15)),
            Checked::Corrected(json!(100))
        );
        assert_eq!(
            check(&state, "value", &json!(-5)),
            Checked::Corrected(json!(0))
        );
        assert_eq!(
            check(&state, "value", &json!(7.9)),
            Checked::Corrected(json!(7))
        );
        for bad in [json!("abc"), json!(null), json!(true), json!([1])] {
            assert!(
                matches!(check(&state, "value", &bad), Checked::Refused(_)),
                "{bad}"
            );
        }
        assert!(matches!(
            check(&state, "disabled", &json!("no")),
            Checked::Refused(_)
        ));
        assert_eq!(check(&state, "description", &json!("x")), Checked::Accepted);
    }

    #[test]
    fn a_float_slider_takes_fractions_within_its_range() {
        let state = json!({"value": 0.5, "min": 0.0, "max": 1.0})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(check(&state, "value", &json!(0.25)), Checked::Accepted);
        assert_eq!(
            check(&state, "value", &json!(3)),
            Checked::Corrected(json!(1.0))
        );
    }

    #[test]
    fn a_dropdown_index_stays_among_its_options() {
        let state = json!({"index": 0, "_options_labels": ["a", "b"]})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(check(&state, "index", &json!(1)), Checked::Accepted);
        assert_eq!(check(&state, "index", &json!(null)), Checked::Accepted);
        assert!(matches!(
            check(&state, "index", &json!(2)),
            Checked::Refused(_)
        ));
        assert!(matches!(
            check(&state, "index", &json!(-1)),
            Checked::Refused(_)
        ));
    }

    #[test]
    fn values_too_large_or_too_deep_are_refused() {
        let state = json!({"value": "", "_dom_classes": []})
            .as_object()
            .unwrap()
            .clone();
        let large = Value::String("x".repeat(MAX_VALUE_BYTES + 1));
        assert!(
            matches!(check(&state, "value", &large), Checked::Refused(why) if why.contains("bytes"))
        );
        let mut deep = json!(0);
        for _ in 0..126 {
            deep = json!([deep]);
        }
        assert!(
            matches!(check(&state, "_dom_classes", &deep), Checked::Refused(why) if why.contains("nested"))
        );
    }
}
