//! The type probe's reading of rustc's diagnostics.
//!
//! evcxr asks rust-analyzer for the type of each variable a cell defines; its first analysis of
//! the standard library and tch takes seconds and hundreds of MB. The kernel's evcxr first
//! type-checks the cell once with rustc, each new variable compared to `&()`
//! ([`probe_statement`]): each mismatch's note names the variable's type, by full public path
//! (`-Ztrim-diagnostic-paths=false`). rust-analyzer is still asked where rustc's answer cannot be
//! written as a type, the check fails for other reasons, or the build then fails where the
//! variable is stored ([`probed_type_failed`]).

use serde_json::Value;
use std::collections::HashMap;

/// The statement the probe puts where evcxr's analysis code stores `name`.
pub fn probe_statement(name: &str) -> String {
    format!("let _: &() = &{name};")
}

/// One of rustc's diagnostics of the probe, with what evcxr knows of where it points.
#[derive(Clone, Copy, Debug)]
pub struct Diagnostic<'a> {
    /// rustc's JSON message (the child evcxr shows in its place, where it shows one).
    pub json: &'a Value,
    /// The variable whose store (the probe's statement) it points at, if any.
    pub pack_variable: Option<&'a str>,
    /// Whether it points at the user's own code, or at a final value's `evcxr_display()` call
    /// (whose failure the build handles with its fallback): the build reports those.
    pub users_own: bool,
}

/// What a cell's type probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Every new variable's type (`()` where rustc found no mismatch).
    Typed(HashMap<String, String>),
    /// A type not usable as written, or the probe failed for another reason: ask rust-analyzer.
    NeedsAnalyzer,
    /// A variable that cannot be persisted at all (a closure): evcxr's message.
    Refused(String),
}

/// The probe's diagnostics read as the types of `new_variables`.
pub fn read<'a>(
    diagnostics: impl IntoIterator<Item = Diagnostic<'a>>,
    new_variables: &[String],
) -> Probe {
    let mut found: HashMap<String, String> = HashMap::new();
    for diagnostic in diagnostics {
        let is_error = diagnostic.json["level"].as_str() == Some("error");
        match (
            diagnostic.pack_variable,
            diagnostic.json["code"]["code"].as_str(),
        ) {
            (Some(variable), Some("E0308")) => {
                let Some(type_name) = type_name(diagnostic.json) else {
                    return Probe::NeedsAnalyzer;
                };
                if type_name.contains("{closure") {
                    return Probe::Refused(closure_message(variable));
                }
                if !is_usable(&type_name) {
                    return Probe::NeedsAnalyzer;
                }
                found.insert(variable.to_owned(), type_name);
            }
            // A variable the cell moves away: the build reports it as evcxr expects.
            (Some(_), Some("E0382")) => {}
            (Some(_), _) if is_error => return Probe::NeedsAnalyzer,
            // Warnings; the cell's own errors, which the build reports (the variables' types do
            // not matter then).
            _ if !is_error || diagnostic.users_own => {}
            _ => return Probe::NeedsAnalyzer,
        }
    }
    Probe::Typed(
        new_variables
            .iter()
            // No mismatch: the variable is `()`.
            .map(|name| {
                let type_name = found.remove(name).unwrap_or_else(|| "()".to_owned());
                (name.clone(), type_name)
            })
            .collect(),
    )
}

/// evcxr's words for a closure it cannot store.
fn closure_message(variable: &str) -> String {
    format!(
        "The variable `{variable}` is a closure, which cannot be persisted.\n\
         You can however persist closures if you box them. e.g.:\n\
         let f: Box<dyn Fn()> = Box::new(|| {{println!(\"foo\")}});\n\
         Alternatively, you can prevent evcxr from attempting to persist\n\
         the variable by wrapping your code in braces."
    )
}

/// The type a probe mismatch found, `&T` → `T`, with unsuffixed literals given the types rustc
/// gives them when nothing else decides (`i32`, `f64`). rustc's note (`found reference
/// `&std::num::NonZero<u8>``) is read first: with `-Ztrim-diagnostic-paths=false` it names
/// types by their full public path, which works in any cell; the label names them as briefly as
/// rustc can.
pub fn type_name(diagnostic: &Value) -> Option<String> {
    let note = diagnostic["children"].as_array().and_then(|children| {
        children
            .iter()
            .filter_map(|child| child["message"].as_str())
            .find_map(|message| {
                message
                    .split_once("found reference `")
                    .map(|(_, found)| found)
            })
    });
    let label = || {
        diagnostic["spans"]
            .as_array()?
            .iter()
            .find(|span| span["is_primary"].as_bool() == Some(true))?["label"]
            .as_str()?
            .split_once(", found `")
            .map(|(_, found)| found)
    };
    let found = note.or_else(label)?;
    let found = found.strip_suffix('`')?.strip_prefix('&')?;
    Some(found.replace("{integer}", "i32").replace("{float}", "f64"))
}

/// Whether a type rustc printed can be written in code as it stands (not a closure, an
/// `impl Trait`, an unresolved `_` or lifetime, or a name rustc shortened).
pub fn is_usable(type_name: &str) -> bool {
    let mut words = type_name
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .filter(|word| !word.is_empty());
    !type_name.contains('{')
        && !type_name.contains("...")
        && !type_name.contains("impl ")
        && !type_name.is_empty()
        && words.all(|word| word != "_" && word != "'_")
}

/// What evcxr's reader of rustc's errors keeps of a top-level diagnostic where it shows a child
/// message in its place (one that points at the cell): whether the build failed at a
/// variable's store, and why, is the top level's to say.
#[derive(Clone, Debug, PartialEq)]
pub struct TopLevel {
    code: Value,
    at_store: bool,
}

/// The kept top level's key in the JSON of the diagnostic evcxr shows.
const TOP_LEVEL: &str = "tchbook_top_level";

impl TopLevel {
    /// `json`'s error code, and whether it points at a variable's store (`at_store`).
    pub fn of(json: &Value, at_store: bool) -> TopLevel {
        let code = json["code"]["code"].clone();
        TopLevel { code, at_store }
    }

    /// Kept in `shown`, the diagnostic evcxr shows (the top level itself, or its child).
    pub fn keep_in(self, shown: &mut Value) {
        if let Some(object) = shown.as_object_mut() {
            let top_level = serde_json::json!({"code": self.code, "at_store": self.at_store});
            object.insert(TOP_LEVEL.to_owned(), top_level);
        }
    }
}

/// Whether a build error (`shown`, its [`TopLevel`] kept) says, at a variable's store, that a
/// type taken from rustc does not work there (a path the cell does not import, a private
/// module, an unstable path, ...): rust-analyzer names types as they are visible from the cell.
pub fn probed_type_failed(shown: &Value) -> bool {
    let top_level = &shown[TOP_LEVEL];
    top_level["at_store"].as_bool() == Some(true)
        && matches!(
            top_level["code"].as_str(),
            Some("E0412" | "E0422" | "E0433" | "E0603" | "E0658" | "E0308" | "E0107")
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mismatch(note: &str) -> Value {
        json!({
            "level": "error",
            "code": {"code": "E0308"},
            "children": [{"message": format!("expected reference `&()`\nfound reference `{note}`")}],
            "spans": [],
        })
    }

    fn at<'a>(json: &'a Value, variable: &'static str) -> Diagnostic<'a> {
        Diagnostic {
            json,
            pack_variable: Some(variable),
            users_own: false,
        }
    }

    #[test]
    fn the_note_names_the_type_by_its_full_path() {
        let found = type_name(&mismatch("&std::num::NonZero<u8>"));
        assert_eq!(found.as_deref(), Some("std::num::NonZero<u8>"));
        assert_eq!(
            type_name(&mismatch("&({integer}, {float})")).as_deref(),
            Some("(i32, f64)")
        );
    }

    #[test]
    fn the_label_is_read_where_there_is_no_note() {
        let json = json!({"spans": [
            {"is_primary": false, "label": "expected `&()`, found `&u8`"},
            {"is_primary": true, "label": "expected `&()`, found `&Vec<i64>`"},
        ]});
        assert_eq!(type_name(&json).as_deref(), Some("Vec<i64>"));
        assert_eq!(type_name(&json!({"spans": []})), None);
    }

    #[test]
    fn types_that_cannot_be_written_are_not_usable() {
        for usable in [
            "i32",
            "Vec<&'static str>",
            "std::collections::HashMap<String, u8>",
        ] {
            assert!(is_usable(usable), "{usable}");
        }
        for unusable in [
            "",
            "impl Fn()",
            "Vec<_>",
            "&'_ str",
            "{closure@src/lib.rs:1:9}",
            "{integer}",
            "a::...::B",
        ] {
            assert!(!is_usable(unusable), "{unusable}");
        }
    }

    #[test]
    fn every_new_variable_is_typed_and_one_without_mismatch_is_unit() {
        let x = mismatch("&tch::Tensor");
        let warning = json!({"level": "warning", "code": null});
        let probe = read([at(&x, "x"), at(&warning, "y")], &["x".into(), "y".into()]);
        let expected = [("x", "tch::Tensor"), ("y", "()")]
            .map(|(name, type_name)| (name.to_owned(), type_name.to_owned()));
        assert_eq!(probe, Probe::Typed(HashMap::from(expected)));
    }

    #[test]
    fn a_closure_is_refused_with_evcxrs_words() {
        let json = mismatch("&{closure@src/lib.rs:3:9}");
        let Probe::Refused(message) = read([at(&json, "f")], &["f".into()]) else {
            panic!("a closure must be refused");
        };
        assert!(message.starts_with("The variable `f` is a closure, which cannot be persisted."));
    }

    #[test]
    fn other_errors_ask_the_analyzer_unless_the_cell_reports_them() {
        let other = json!({"level": "error", "code": {"code": "E0599"}});
        let at_store = at(&other, "x");
        assert_eq!(read([at_store], &["x".into()]), Probe::NeedsAnalyzer);
        let moved = json!({"level": "error", "code": {"code": "E0382"}});
        assert!(matches!(
            read([at(&moved, "x")], &["x".into()]),
            Probe::Typed(_)
        ));
        let users = Diagnostic {
            json: &other,
            pack_variable: None,
            users_own: true,
        };
        assert!(matches!(read([users], &[]), Probe::Typed(_)));
        let generated = Diagnostic {
            users_own: false,
            ..users
        };
        assert_eq!(read([generated], &[]), Probe::NeedsAnalyzer);
        let shortened = mismatch("&impl Iterator<Item = u8>");
        assert_eq!(
            read([at(&shortened, "x")], &["x".into()]),
            Probe::NeedsAnalyzer
        );
    }

    /// rustc's error `code`, shown through a child note as evcxr shows it, with its top level
    /// kept.
    fn shown(code: Option<&str>, at_store: bool) -> Value {
        let top = json!({"code": code.map(|code| json!({"code": code})), "children": []});
        let mut child = json!({"message": "the variable is used here", "code": null});
        TopLevel::of(&top, at_store).keep_in(&mut child);
        child
    }

    #[test]
    fn only_naming_errors_at_the_store_blame_a_probed_type() {
        assert!(probed_type_failed(&shown(Some("E0433"), true)));
        assert!(probed_type_failed(&shown(Some("E0658"), true)));
        assert!(!probed_type_failed(&shown(Some("E0433"), false)));
        assert!(!probed_type_failed(&shown(Some("E0599"), true)));
        assert!(!probed_type_failed(&shown(None, true)));
        assert!(!probed_type_failed(&json!({"code": {"code": "E0433"}})));
        assert_eq!(probe_statement("t"), "let _: &() = &t;");
    }
}
