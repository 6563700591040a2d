//! The fallback index: rust-analyzer's own answers for the common cases, asked once per build
//! cache (by `tchbook install`, or by the first kernel whose analyzer has warmed up) and kept in
//! the cache as JSON. Until a kernel's rust-analyzer has analysed std and tch (seconds on two
//! cores), a completion is answered from here at once, from what the cursor follows:
//! - `name.pre` where `name` is a notebook variable (or a `let` earlier in the cell) whose type
//!   the index knows: that type's methods and fields;
//! - `Path::pre`: the items of a type or module in scope;
//! - `pre`: the names in scope, the notebook's variables first.
//!
//! Anything else (`x.f().`, a macro's argument) waits for rust-analyzer.
//!
//! The files: `store.rs` makes, loads and saves the index; `context.rs` reads what the cursor
//! follows; `declared.rs` reads what the cell's text declares; this file answers from them.

mod context;
mod declared;
mod store;

pub(crate) use declared::defined_items;
pub(crate) use store::{build, load, save};

use super::messages::{Index, Item};
use context::{Context, context};
use declared::{declared_type, let_names, type_key};

/// Items of `items` that start with `prefix`, in order.
fn starting_with<'a>(items: &'a [Item], prefix: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
    items
        .iter()
        .filter(move |item| item.text.starts_with(prefix))
}

/// The index's answer at `position`, given the notebook's variables and their types; `None`
/// when the index cannot answer this context.
pub(crate) fn lookup(
    index: &Index,
    code: &str,
    position: usize,
    variables: &[(String, String)],
    defined: &[Item],
) -> Option<(Vec<Item>, usize)> {
    let before = code.get(..position)?;
    let (items, prefix): (Vec<Item>, &str) = match context(code, position) {
        Context::Member { receiver, prefix } => {
            let ty = declared_type(before, receiver).or_else(|| {
                variables
                    .iter()
                    .find(|(name, _)| name == receiver)
                    .map(|(_, ty)| ty.as_str())
            })?;
            let methods = index.methods.get(type_key(ty))?;
            (starting_with(methods, prefix).cloned().collect(), prefix)
        }
        Context::Path { path, prefix } => {
            let items = index.paths.get(*path.last()?)?;
            (starting_with(items, prefix).cloned().collect(), prefix)
        }
        Context::Name { prefix } if !prefix.is_empty() => {
            let variables = variables
                .iter()
                .map(|(name, _)| name.as_str())
                .chain(let_names(&before[..before.len() - prefix.len()]))
                .filter(|name| name.starts_with(prefix))
                .map(|name| Item {
                    text: name.to_owned(),
                    kind: "instance".into(),
                });
            let mut seen = std::collections::HashSet::new();
            let items = variables
                .chain(starting_with(defined, prefix).cloned())
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
        Item {
            text: text.into(),
            kind: kind.into(),
        }
    }

    fn index() -> Index {
        let mut index = Index {
            scope: vec![
                item("Tensor", "class"),
                item("tensor_like", "function"),
                item("nn", "module"),
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
        index
    }

    #[test]
    fn context_never_panics_on_odd_text() {
        for code in ["", ".", "::", "é.", "\u{200b}.", "x\u{202e}.", "$@`\\", "é"] {
            for position in 0..=code.len() + 1 {
                let _ = context(code, position);
                let _ = lookup(&index(), code, position, &[], &[]);
            }
        }
    }

    #[test]
    fn lookup_answers_members_of_known_variables() {
        let vars = [("v".to_owned(), "alloc::vec::Vec<i32>".to_owned())];
        let (items, start) = lookup(&index(), "v.le", 4, &vars, &[]).unwrap();
        assert_eq!(items, vec![item("len", "function")]);
        assert_eq!(start, 2);
        let (items, _) = lookup(
            &index(),
            "let x = Tensor::randn([2], opts);\nx.mat",
            39,
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(items, vec![item("matmul", "function")]);
        assert!(
            lookup(&index(), "w.le", 4, &vars, &[]).is_none(),
            "unknown variable"
        );
    }

    #[test]
    fn lookup_answers_paths_and_names_variables_first() {
        let (items, start) = lookup(&index(), "Tensor::ra", 10, &[], &[]).unwrap();
        assert_eq!((items, start), (vec![item("randn", "function")], 8));
        let vars = [("tensor_a".to_owned(), "Tensor".to_owned())];
        let defined =
            defined_items("fn tensor_sum(x: i32) {}\nstruct Tensorish;\nfn evcxr_internal() {}");
        assert_eq!(
            defined,
            vec![item("tensor_sum", "function"), item("Tensorish", "class")]
        );
        let (items, _) = lookup(
            &index(),
            "let tensor_b = 1;\nlet mut tensor_c = 2; ten",
            43,
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(
            items[..2],
            [item("tensor_b", "instance"), item("tensor_c", "instance")]
        );
        let (items, start) = lookup(&index(), "ten", 3, &vars, &defined).unwrap();
        assert_eq!(start, 0);
        assert_eq!(
            items,
            vec![
                item("tensor_a", "instance"),
                item("tensor_sum", "function"),
                item("tensor_like", "function")
            ]
        );
    }
}
