//! Documentation requests (Shift+Tab, and the documentation panel JupyterLab's completer fills
//! for the highlighted match) answered from the index, as rust-analyzer's hover would answer
//! them: the item's path, its signature, its doc comment. A variable shows its type and that
//! type's documentation; what the notebook defines shows its definition and doc comment.

use super::super::messages::{Doc, Index};
use super::context::{Context, context};
use super::declared::{defined_doc, type_key};
use super::{Notebook, indexed_path, receiver_type};

/// What is shown for one name: a heading line of code (a path, or `let name: Type`), the
/// signature, and the doc comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    pub(crate) heading: String,
    pub(crate) doc: Option<Doc>,
}

impl Shown {
    /// As markdown, laid out as rust-analyzer lays out a hover.
    pub(crate) fn markdown(&self) -> String {
        let mut out = format!("```rust\n{}\n```", self.heading);
        if let Some(signature) = self.doc.as_ref().and_then(|d| d.signature.as_ref()) {
            out.push_str(&format!("\n\n```rust\n{signature}\n```"));
        }
        if let Some(text) = self.doc.as_ref().and_then(|d| d.text.as_ref()) {
            out.push_str("\n\n---\n\n");
            out.push_str(&rustdoc_markdown(text));
        }
        out
    }

    /// As plain text: the same parts, one paragraph each.
    pub(crate) fn plain(&self) -> String {
        let mut parts = vec![self.heading.clone()];
        if let Some(doc) = &self.doc {
            parts.extend(doc.signature.clone());
            parts.extend(doc.text.as_deref().map(rustdoc_markdown));
        }
        parts.join("\n\n")
    }
}

/// The index's documentation of the name that ends at byte `position` of `code`; `None` when
/// the index does not hold it (a notebook's own item, a method of a method's result).
pub(crate) fn documentation(
    index: &Index,
    code: &str,
    position: usize,
    notebook: Notebook,
) -> Option<Shown> {
    let before = code.get(..position)?;
    let shown = |path: String| {
        index.docs.get(&path).map(|doc| Shown {
            heading: path.clone(),
            doc: Some(doc.clone()),
        })
    };
    // What the notebook defines comes before the index's: a cell may name its own `Net`.
    let defined = |owner: Option<&str>, name: &str| {
        defined_doc(notebook.source, owner, name).map(|doc| Shown {
            heading: match owner {
                Some(owner) => format!("{owner}::{name}"),
                None => name.to_owned(),
            },
            doc: Some(doc),
        })
    };
    match context(code, position) {
        Context::Member { receiver, prefix } if !prefix.is_empty() => {
            let key = type_key(receiver_type(before, receiver, notebook)?);
            defined(Some(key), prefix).or_else(|| shown(format!("{key}::{prefix}")))
        }
        Context::Path { path, prefix } if !prefix.is_empty() => {
            if let [owner] = path[..]
                && let Some(found) = defined(Some(owner), prefix)
            {
                return Some(found);
            }
            let (key, _) = indexed_path(index, &path)?;
            shown(format!("{key}::{prefix}"))
        }
        Context::Name { prefix } if !prefix.is_empty() => {
            if code[position..].starts_with('!') {
                return shown(format!("{prefix}!"));
            }
            let declared_before = &before[..before.len() - prefix.len()];
            if let Some(ty) = receiver_type(declared_before, prefix, notebook) {
                return Some(Shown {
                    heading: format!("let {prefix}: {ty}"),
                    doc: type_doc(index, type_key(ty)).cloned(),
                });
            }
            if let Some(found) = defined(None, prefix) {
                return Some(found);
            }
            shown(prefix.to_owned()).or_else(|| {
                type_doc(index, prefix)?;
                Some(Shown {
                    heading: prefix.to_owned(),
                    doc: type_doc(index, prefix).cloned(),
                })
            })
        }
        _ => None,
    }
}

/// A type's documentation by its key (its name): the one in scope, else the one of the
/// shortest indexed path that ends with it (`HashMap` → `std::collections::HashMap`).
fn type_doc<'a>(index: &'a Index, key: &str) -> Option<&'a Doc> {
    if let Some(doc) = index.docs.get(key) {
        return Some(doc);
    }
    let tail = format!("::{key}");
    let (path, _) = index
        .docs
        .by_path
        .iter()
        .filter(|(path, _)| path.ends_with(&tail))
        .min_by_key(|(path, _)| path.matches("::").count())?;
    index.docs.get(path)
}

/// A doc comment as a reader sees it on docs.rs: code blocks without a language are Rust, and
/// their lines hidden from rendered docs (`# use std::io;`) are dropped.
fn rustdoc_markdown(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_rust = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            match in_rust {
                None => {
                    let rust = info.is_empty()
                        || info.split(',').any(|tag| {
                            matches!(
                                tag.trim(),
                                "rust"
                                    | "no_run"
                                    | "should_panic"
                                    | "ignore"
                                    | "compile_fail"
                                    | "edition2021"
                                    | "edition2024"
                            )
                        });
                    in_rust = Some(rust);
                    out.push(if rust {
                        "```rust".to_owned()
                    } else {
                        line.to_owned()
                    });
                }
                Some(_) => {
                    in_rust = None;
                    out.push(line.to_owned());
                }
            }
            continue;
        }
        if in_rust == Some(true) && (trimmed == "#" || trimmed.starts_with("# ")) {
            continue;
        }
        out.push(line.to_owned());
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::super::super::messages::{Doc, Index, Item};
    use super::*;

    fn index() -> Index {
        let mut index = Index::default();
        index.scope.push(Item::new("Vec", "class"));
        index
            .methods
            .insert("Vec".into(), vec![Item::new("push", "function")]);
        index.paths.insert(
            "std::collections".into(),
            vec![Item::new("HashMap", "class")],
        );
        let docs = [
            ("Vec", "Vec<T, A>", "A contiguous growable array type."),
            (
                "Vec::push",
                "pub fn push(&mut self, value: T)",
                "Appends an element.\n\n```\n# let hidden = 1;\nlet mut v = vec![1];\nv.push(2);\n```",
            ),
            (
                "std::collections::HashMap",
                "HashMap<K, V, S, A>",
                "A hash map.",
            ),
            (
                "println!",
                "macro_rules! println",
                "Prints to the standard output, with a newline.",
            ),
        ];
        for (number, (path, signature, text)) in docs.into_iter().enumerate() {
            index.docs.by_path.insert(path.into(), number as u32);
            index.docs.texts.push(Doc {
                signature: Some(signature.into()),
                text: Some(text.into()),
            });
        }
        index
    }

    fn found(code: &str, variables: &[(String, String)]) -> Option<Shown> {
        let notebook = Notebook {
            variables,
            source: "",
        };
        documentation(&index(), code, code.len(), notebook)
    }

    #[test]
    fn methods_paths_macros_and_types_are_documented() {
        let shown = found("let mut v = vec![1];\nv.push", &[]).unwrap();
        assert_eq!(shown.heading, "Vec::push");
        let markdown = shown.markdown();
        assert!(
            markdown.contains("pub fn push(&mut self, value: T)"),
            "{markdown}"
        );
        assert!(markdown.contains("```rust\nlet mut v"), "{markdown}");
        assert!(!markdown.contains("hidden"), "{markdown}");
        let shown = found("std::collections::HashMap", &[]).unwrap();
        assert!(shown.plain().contains("A hash map."));
        let code = "println!(\"{}\", 1)";
        let shown = documentation(
            &index(),
            code,
            7,
            Notebook {
                variables: &[],
                source: "",
            },
        );
        assert!(shown.unwrap().plain().contains("standard output"));
        assert!(found("Vec", &[]).unwrap().plain().contains("growable"));
        assert_eq!(found("nothing_here", &[]), None);
        assert_eq!(found("v.push", &[]), None, "unknown receiver");
    }

    #[test]
    fn the_notebooks_own_items_are_documented_from_its_source() {
        let source = "/// A point.\nstruct Vec { x: f64 }\n\
            impl Vec {\n    /// Its length.\n    fn push(&self) -> f64 { self.x }\n}";
        let notebook = Notebook {
            variables: &[],
            source,
        };
        // The notebook's own `Vec` hides the index's.
        let code = "let p = Vec { x: 1.0 };\np.push";
        let shown = documentation(&index(), code, code.len(), notebook).unwrap();
        assert_eq!(shown.heading, "Vec::push");
        assert_eq!(
            shown.plain(),
            "Vec::push\n\nfn push(&self) -> f64\n\nIts length."
        );
        let shown = documentation(&index(), "Vec", 3, notebook).unwrap();
        assert!(shown.plain().ends_with("A point."), "{shown:?}");
        let shown = documentation(&index(), "Vec::push", 9, notebook).unwrap();
        assert!(shown.plain().ends_with("Its length."), "{shown:?}");
    }

    #[test]
    fn a_variable_shows_its_type_and_the_types_documentation() {
        let variables = [(
            "m".to_owned(),
            "std::collections::hash::map::HashMap<String, i32>".to_owned(),
        )];
        let shown = found("m", &variables).unwrap();
        assert_eq!(
            shown.heading,
            "let m: std::collections::hash::map::HashMap<String, i32>"
        );
        assert!(shown.plain().contains("A hash map."), "{shown:?}");
    }
}
