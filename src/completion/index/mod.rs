//! The index: rust-analyzer's own answers, asked once per build cache (by `tchbook install`, or
//! in the background by the first kernel that finds none) and kept in the cache as JSON, with
//! the documentation of every item it holds. A completion is answered from here at once, from
//! what the cursor follows:
//! - `name.pre` where `name` is a notebook variable (or a `let` earlier in the cell) whose type
//!   the index knows, or a type the notebook defined: its methods and fields;
//! - `path::pre`: the items of a type or module in scope, or of a module or type reached from
//!   the crates in scope (`std::collections::`, `tch::nn::`), or of a notebook type;
//! - `pre`: the names in scope, the notebook's variables first.
//!
//! Anything else (`x.f().`, a macro's argument) waits for rust-analyzer. A documentation request
//! is answered from the same contexts ([`documentation`]).
//!
//! The files: `store.rs` makes, loads and saves the index; `context.rs` reads what the cursor
//! follows; `declared.rs` reads what the cell's text and the notebook's items declare;
//! `documentation.rs` answers documentation requests; this file answers completions.

mod context;
mod declared;
mod documentation;
mod store;

pub(crate) use declared::defined_items;
pub(crate) use documentation::documentation;
pub(crate) use store::{build, load, save};

use super::messages::{Index, Item};
use context::{Context, context};
use declared::{declared_type, defined_members, let_names, type_key};

/// Whether `name` continues what is typed, as rust-analyzer matches a name: `Lin` offers
/// `Linear` and `linear`, ASCII case aside.
pub(crate) fn continues(name: &str, typed: &str) -> bool {
    name.get(..typed.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(typed))
}

/// Items of `items` that continue `prefix`, in order.
fn starting_with<'a>(items: &'a [Item], prefix: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
    items
        .iter()
        .filter(move |item| continues(&item.text, prefix))
}

/// What the notebook holds beside the cell: its variables with their types, and the source evcxr
/// gives rust-analyzer (the notebook's items, this cell's included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Notebook<'a> {
    pub(crate) variables: &'a [(String, String)],
    pub(crate) source: &'a str,
}

/// The type of `receiver` at the end of `before`: its `let` in the cell, else the notebook's
/// variable of that name.
fn receiver_type<'a>(before: &'a str, receiver: &str, notebook: Notebook<'a>) -> Option<&'a str> {
    declared_type(before, receiver).or_else(|| {
        notebook
            .variables
            .iter()
            .find(|(name, _)| name == receiver)
            .map(|(_, ty)| ty.as_str())
    })
}

/// The index's key for `path` as a cell writes it, and its items: the path itself
/// (`std::collections`, `Tensor`), else the shortest indexed path it ends (`collections` after
/// `use std::collections;`).
fn indexed_path<'a>(index: &'a Index, path: &[&str]) -> Option<(&'a str, &'a [Item])> {
    let joined = path.join("::");
    if let Some((key, items)) = index.paths.get_key_value(&joined) {
        return Some((key, items));
    }
    let tail = format!("::{joined}");
    index
        .paths
        .iter()
        .filter(|(key, _)| key.ends_with(&tail))
        .min_by_key(|(key, _)| key.matches("::").count())
        .map(|(key, items)| (key.as_str(), items.as_slice()))
}

/// The index's answer at `position`; `None` when the index cannot answer this context.
pub(crate) fn lookup(
    index: &Index,
    code: &str,
    position: usize,
    notebook: Notebook,
) -> Option<(Vec<Item>, usize)> {
    let before = code.get(..position)?;
    let (items, prefix): (Vec<Item>, &str) = match context(code, position) {
        Context::Member { receiver, prefix } => {
            let key = type_key(receiver_type(before, receiver, notebook)?);
            let mut items = defined_members(notebook.source, key, true);
            items.extend(index.methods.get(key).into_iter().flatten().cloned());
            if items.is_empty() {
                return None;
            }
            (starting_with(&items, prefix).cloned().collect(), prefix)
        }
        Context::Path { path, prefix } => {
            let mut items = match path[..] {
                [name] => defined_members(notebook.source, name, false),
                _ => Vec::new(),
            };
            if let Some((_, indexed)) = indexed_path(index, &path) {
                items.extend(indexed.iter().cloned());
            }
            if items.is_empty() {
                return None;
            }
            (starting_with(&items, prefix).cloned().collect(), prefix)
        }
        Context::Name { prefix } if !prefix.is_empty() => {
            let variables = notebook
                .variables
                .iter()
                .map(|(name, _)| name.as_str())
                .chain(let_names(&before[..before.len() - prefix.len()]))
                .filter(|name| continues(name, prefix))
                .map(|name| Item::new(name, "instance"));
            let defined = defined_items(notebook.source);
            let mut seen = std::collections::HashSet::new();
            let items = variables
                .chain(starting_with(&defined, prefix).cloned())
                .chain(starting_with(&index.scope, prefix).cloned())
                .filter(|item| seen.insert(item.text.clone()))
                .collect();
            (items, prefix)
        }
        Context::Name { .. } | Context::Other => return None,
    };
    Some((items, position - prefix.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str, kind: &str) -> Item {
        Item::new(text, kind)
    }

    fn index() -> Index {
        let mut index = Index {
            scope: vec![
                item("Tensor", "class"),
                item("tensor_like", "function"),
                item("nn", "module"),
                item("std::", "module"),
            ],
            ..Index::default()
        };
        index.methods.insert(
            "Vec".into(),
            vec![item("len", "function"), item("last", "function")],
        );
        index.methods.insert(
            "Tensor".into(),
            vec![item("matmul", "function"), item("max", "function")],
        );
        index
            .paths
            .insert("Tensor".into(), vec![item("randn", "function")]);
        index.paths.insert(
            "std::collections".into(),
            vec![
                item("HashMap", "class"),
                item("HashSet", "class"),
                item("hash_map::", "module"),
            ],
        );
        index.paths.insert(
            "std::collections::hash_map".into(),
            vec![item("Entry", "class")],
        );
        index
    }

    const EMPTY: Notebook = Notebook {
        variables: &[],
        source: "",
    };

    #[test]
    fn context_never_panics_on_odd_text() {
        for code in ["", ".", "::", "é.", "\u{200b}.", "x\u{202e}.", "$@`\\", "é"] {
            for position in 0..=code.len() + 1 {
                let _ = context(code, position);
                let _ = lookup(&index(), code, position, EMPTY);
            }
        }
    }

    #[test]
    fn lookup_answers_members_of_known_variables() {
        let vars = [("v".to_owned(), "alloc::vec::Vec<i32>".to_owned())];
        let notebook = Notebook {
            variables: &vars,
            source: "",
        };
        let (items, start) = lookup(&index(), "v.le", 4, notebook).unwrap();
        assert_eq!(items, vec![item("len", "function")]);
        assert_eq!(start, 2);
        let (items, _) = lookup(
            &index(),
            "let x = Tensor::randn([2], opts);\nx.mat",
            39,
            EMPTY,
        )
        .unwrap();
        assert_eq!(items, vec![item("matmul", "function")]);
        assert!(
            lookup(&index(), "w.le", 4, notebook).is_none(),
            "unknown variable"
        );
    }

    #[test]
    fn lookup_answers_members_of_the_notebooks_own_types() {
        let code = "struct P { x: f64 }\nlet p = P { x: 1.0 };\np.";
        let notebook = Notebook {
            variables: &[],
            source: "struct P { x: f64 }\nimpl P { fn norm(&self) -> f64 { self.x } fn origin() -> P { P { x: 0.0 } } }",
        };
        let (items, _) = lookup(&index(), code, code.len(), notebook).unwrap();
        assert_eq!(items, vec![item("x", "instance"), item("norm", "function")]);
        let (items, _) = lookup(&index(), "P::o", 4, notebook).unwrap();
        assert_eq!(items, vec![item("origin", "function")]);
    }

    #[test]
    fn lookup_answers_paths_from_the_crates_in_scope() {
        let code = "std::collections::HashM";
        let (items, start) = lookup(&index(), code, code.len(), EMPTY).unwrap();
        assert_eq!(items, vec![item("HashMap", "class")]);
        assert_eq!(start, "std::collections::".len());
        // A module named from a `use`: the shortest indexed path it ends.
        let code = "use std::collections;\ncollections::HashS";
        let (items, _) = lookup(&index(), code, code.len(), EMPTY).unwrap();
        assert_eq!(items, vec![item("HashSet", "class")]);
        let code = "std::collections::hash";
        let (items, _) = lookup(&index(), code, code.len(), EMPTY).unwrap();
        assert_eq!(
            items,
            vec![
                item("HashMap", "class"),
                item("HashSet", "class"),
                item("hash_map::", "module")
            ],
            "case aside, as rust-analyzer matches"
        );
        let code = "hash_map::E";
        let (items, _) = lookup(&index(), code, code.len(), EMPTY).unwrap();
        assert_eq!(items, vec![item("Entry", "class")]);
        assert!(lookup(&index(), "nothing::here::x", 16, EMPTY).is_none());
    }

    #[test]
    fn lookup_answers_paths_and_names_variables_first() {
        let (items, start) = lookup(&index(), "Tensor::ra", 10, EMPTY).unwrap();
        assert_eq!((items, start), (vec![item("randn", "function")], 8));
        let vars = [("tensor_a".to_owned(), "Tensor".to_owned())];
        let source = "fn tensor_sum(x: i32) {}\nstruct Tensorish;\nfn evcxr_internal() {}";
        assert_eq!(
            defined_items(source),
            vec![item("tensor_sum", "function"), item("Tensorish", "class")]
        );
        let (items, _) = lookup(
            &index(),
            "let tensor_b = 1;\nlet mut tensor_c = 2; ten",
            43,
            EMPTY,
        )
        .unwrap();
        assert_eq!(
            items[..2],
            [item("tensor_b", "instance"), item("tensor_c", "instance")]
        );
        let notebook = Notebook {
            variables: &vars,
            source,
        };
        let (items, start) = lookup(&index(), "ten", 3, notebook).unwrap();
        assert_eq!(start, 0);
        assert_eq!(
            items,
            vec![
                item("tensor_a", "instance"),
                item("tensor_sum", "function"),
                item("Tensorish", "class"),
                item("Tensor", "class"),
                item("tensor_like", "function")
            ]
        );
    }
}
