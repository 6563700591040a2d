//! A front end's state update, checked before it is applied, as ipywidgets' traits check it.
//! Here are the rules every attribute of every widget has: no value larger than
//! [`MAX_VALUE_BYTES`] or nested deeper than [`MAX_DEPTH`] ([`limits`]), and each value keeps its
//! attribute's JSON type, a number finite and whole for an integer attribute ([`by_type`]). A
//! widget kind adds its own rules in its file (`Kind::check`): a bounded `value` kept within
//! `min..=max` ([`within_bounds`]), a dropdown's `index` among its options. Anything a front end
//! (or whoever holds the connection) sends lands here before a loop reads it.

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

/// The refusal of a value too deeply nested or too large for any attribute, if it is.
pub(crate) fn limits(value: &Value) -> Option<Checked> {
    if depth(value) > MAX_DEPTH {
        return Some(Checked::Refused(format!(
            "nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let size = match value {
        Value::String(text) => text.len(),
        other => other.to_string().len(),
    };
    (size > MAX_VALUE_BYTES).then(|| {
        Checked::Refused(format!(
            "{size} bytes, more than the {MAX_VALUE_BYTES} a widget's value may hold"
        ))
    })
}

/// Checks `value` for the attribute `key` of a model whose state is `state` (which holds `key`)
/// by its type alone: the JSON type the attribute has now, a finite number, whole where the
/// attribute is.
pub(crate) fn by_type(state: &Map<String, Value>, key: &str, value: &Value) -> Checked {
    typed(state, key, value, (None, None))
}

/// A bounded widget's `value`: [`by_type`], and kept within the model's `min..=max`.
pub(crate) fn within_bounds(state: &Map<String, Value>, value: &Value) -> Checked {
    let bound = |name| state.get(name).and_then(Value::as_f64);
    typed(state, "value", value, (bound("min"), bound("max")))
}

fn typed(
    state: &Map<String, Value>,
    key: &str,
    value: &Value,
    bounds: (Option<f64>, Option<f64>),
) -> Checked {
    let current = state.get(key).unwrap_or(&Value::Null);
    match (current, value) {
        (Value::Null, _) => Checked::Accepted,
        (Value::Number(now), Value::Number(sent)) => {
            let whole = now.is_i64() || now.is_u64();
            number(whole, sent.as_f64().unwrap_or(f64::NAN), value, bounds)
        }
        (Value::Bool(_), Value::Bool(_))
        | (Value::String(_), Value::String(_))
        | (Value::Array(_), Value::Array(_))
        | (Value::Object(_), Value::Object(_)) => Checked::Accepted,
        (now, _) => Checked::Refused(format!("expected {}", kind(now))),
    }
}

/// A number for a numeric attribute: finite, whole where the attribute is, and within `bounds`.
fn number(whole: bool, sent: f64, raw: &Value, (min, max): (Option<f64>, Option<f64>)) -> Checked {
    if !sent.is_finite() {
        return Checked::Refused("expected a finite number".to_owned());
    }
    let mut kept = if whole { sent.trunc() } else { sent };
    if let Some(min) = min {
        kept = kept.max(min);
    }
    if let Some(max) = max {
        kept = kept.min(max);
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

    fn state(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn an_attribute_keeps_its_type_and_a_whole_number_stays_whole() {
        let state = state(json!({"step": 1, "description": "lr", "disabled": false}));
        assert_eq!(by_type(&state, "step", &json!(7)), Checked::Accepted);
        assert_eq!(
            by_type(&state, "step", &json!(7.9)),
            Checked::Corrected(json!(7))
        );
        assert_eq!(
            by_type(&state, "description", &json!("x")),
            Checked::Accepted
        );
        for bad in [json!("abc"), json!(null), json!(true), json!([1])] {
            let checked = by_type(&state, "step", &bad);
            assert!(matches!(checked, Checked::Refused(_)), "{bad}: {checked:?}");
        }
        assert!(matches!(
            by_type(&state, "disabled", &json!("no")),
            Checked::Refused(why) if why == "expected true or false"
        ));
    }

    #[test]
    fn a_bounded_value_is_kept_within_min_and_max() {
        let ints = state(json!({"value": 5, "min": 0, "max": 100}));
        assert_eq!(within_bounds(&ints, &json!(7)), Checked::Accepted);
        assert_eq!(
            within_bounds(&ints, &json!(1e15)),
            Checked::Corrected(json!(100))
        );
        assert_eq!(
            within_bounds(&ints, &json!(-5)),
            Checked::Corrected(json!(0))
        );
        let floats = state(json!({"value": 0.5, "min": 0.0, "max": 1.0}));
        assert_eq!(within_bounds(&floats, &json!(0.25)), Checked::Accepted);
        assert_eq!(
            within_bounds(&floats, &json!(3)),
            Checked::Corrected(json!(1.0))
        );
    }

    #[test]
    fn values_too_large_or_too_deep_are_refused() {
        assert_eq!(limits(&json!({"a": [1, 2]})), None);
        let large = Value::String("x".repeat(MAX_VALUE_BYTES + 1));
        assert!(matches!(limits(&large), Some(Checked::Refused(why)) if why.contains("bytes")));
        let mut deep = json!(0);
        for _ in 0..126 {
            deep = json!([deep]);
        }
        assert!(matches!(limits(&deep), Some(Checked::Refused(why)) if why.contains("nested")));
    }
}
