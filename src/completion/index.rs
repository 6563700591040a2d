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

use super::wire::{Index, Item, Reply};
use anyhow::{bail, Result};
use std::path::Path;

/// Scalar types, which are not names in scope but are common receivers.
const PRIMITIVES: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32",
    "f64", "bool", "char", "str",
];

/// Asks `complete` (rust-analyzer) for every entry of the index. `header` puts the prelude in
/// scope as in a cell.
pub(crate) fn build(
    header: &str,
    mut complete: impl FnMut(&evcxr::AnalysisSource) -> Result<Reply>,
) -> Result<Index> {
    let mut ask = |body: &str| -> Result<Vec<Item>> {
        let code = format!("{header}\n#[allow(unused)]\nfn tchbook_index() {{\n{body}\n}}\n");
        let offset = code.len() - "\n}\n".len();
        match complete(&evcxr::AnalysisSource { code, offset })? {
            Reply::Completions { items, .. } => Ok(items),
            Reply::Failed { message } => bail!(message),
            other => bail!("unexpected reply {other:?}"),
        }
    };
    let mut index = Index {
        scope: ask("")?,
        ..Index::default()
    };
    let scope = index.scope.clone();
    let types = scope
        .iter()
        .filter(|item| item.kind == "class")
        .map(|item| item.text.as_str())
        .chain(PRIMITIVES.iter().copied());
    for name in types {
        let binding = if name == "str" { "&str" } else { name };
        let methods = ask(&format!("let x: {binding} = todo!();\nx."))?;
        if !methods.is_empty() {
            index.methods.insert(name.to_owned(), methods);
        }
    }
    for item in scope
        .iter()
        .filter(|item| matches!(item.kind.as_str(), "class" | "module"))
    {
        let items = ask(&format!("{}::", item.text))?;
        if !items.is_empty() {
            index.paths.insert(item.text.clone(), items);
        }
    }
    Ok(index)
}

/// The index kept at `path`, if one was written for this cache.
pub(crate) fn load(path: &Path) -> Option<Index> {
    let text = std::fs::read(path).ok()?;
    match serde_json::from_slice(&text) {
        Ok(index) => Some(index),
        Err(error) => {
            tracing::warn!("ignoring the completion index {}: {error}", path.display());
            None
        }
    }
}

/// Writes the index atomically (a kernel may read it at the same moment).
pub(crate) fn save(path: &Path, index: &Index) -> Result<()> {
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, serde_json::to_vec(index)?)?;
    std::fs::rename(&partial, path)?;
    Ok(())
}

/// What the text before the cursor asks to complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Context<'a> {
    /// `receiver.prefix`, `receiver` a plain name.
    Member { receiver: &'a str, prefix: &'a str },
    /// `a::b::prefix`.
    Path { path: Vec<&'a str>, prefix: &'a str },
    /// A name being typed.
    Name { prefix: &'a str },
    /// Something only rust-analyzer can answer.
    Other,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier that ends where `before` ends (possibly empty).
fn trailing_ident(before: &str) -> &str {
    let start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident_char(*c))
        .last()
        .map_or(before.len(), |(i, _)| i);
    &before[start..]
}

/// Reads the completion context of `code` at byte `position` (which must be a char boundary;
/// anything else reads as [`Context::Other`]).
pub(crate) fn context(code: &str, position: usize) -> Context<'_> {
    let Some(before) = code.get(..position) else {
        return Context::Other;
    };
    let prefix = trailing_ident(before);
    if prefix.starts_with(|c: char| c.is_ascii_digit()) {
        return Context::Other;
    }
    let rest = &before[..before.len() - prefix.len()];
    if let Some(receiver_end) = rest.strip_suffix('.') {
        let receiver = trailing_ident(receiver_end);
        let ahead = &receiver_end[..receiver_end.len() - receiver.len()];
        let simple = !receiver.is_empty()
            && !receiver.starts_with(|c: char| c.is_ascii_digit())
            && !ahead.ends_with(['.', ':', '\'', '"']);
        return if simple {
            Context::Member { receiver, prefix }
        } else {
            Context::Other
        };
    }
    if rest.ends_with("::") {
        let mut path = Vec::new();
        let mut rest = rest;
        while let Some(head) = rest.strip_suffix("::") {
            let segment = trailing_ident(head);
            if segment.is_empty() {
                break;
            }
            path.push(segment);
            rest = &head[..head.len() - segment.len()];
        }
        path.reverse();
        return if path.is_empty() {
            Context::Other
        } else {
            Context::Path { path, prefix }
        };
    }
    if rest.ends_with(['\'', '"', '\\']) {
        return Context::Other;
    }
    Context::Name { prefix }
}

/// The index's key for a type as rustc or evcxr write it: `&mut alloc::vec::Vec<i32>` → `Vec`.
pub(crate) fn type_key(type_name: &str) -> &str {
    let mut t = type_name.trim();
    loop {
        let stripped = t
            .trim_start_matches('&')
            .trim_start()
            .trim_start_matches("mut ")
            .trim_start();
        let stripped = match stripped.strip_prefix('\'') {
            Some(lifetime) => lifetime
                .split_once(' ')
                .map_or(stripped, |(_, rest)| rest.trim_start()),
            None => stripped,
        };
        if stripped == t {
            break;
        }
        t = stripped;
    }
    let head = t.split('<').next().unwrap_or(t);
    head.rsplit("::").next().unwrap_or(head).trim()
}

/// The type of `name` as the cell's text declares it before the cursor, for the usual forms:
/// `let name: T = …`, `let name = T::…`, `let name = T {…`, `let name = vec![…`.
pub(crate) fn declared_type<'a>(before: &'a str, name: &str) -> Option<&'a str> {
    let mut found = None;
    for statement in before.split(';') {
        let Some(rest) = statement.trim_start().strip_prefix("let ") else {
            continue;
        };
        let rest = rest.trim_start();
        let rest = rest.strip_prefix("mut ").unwrap_or(rest).trim_start();
        let Some(after) = rest.strip_prefix(name) else {
            continue;
        };
        if after.starts_with(is_ident_char) {
            continue;
        }
        let after = after.trim_start();
        if let Some(annotated) = after.strip_prefix(':') {
            let ty = annotated.split('=').next().unwrap_or_default().trim();
            found = Some(ty);
        } else if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            if value.starts_with("vec!") {
                found = Some("Vec");
            } else if value.starts_with('"') {
                found = Some("str");
            } else {
                let end = value
                    .find(|c: char| !(is_ident_char(c) || c == ':'))
                    .unwrap_or(value.len());
                let path = &value[..end];
                // `Tensor::randn(…)`, `LossPlot::new(…)`: a constructor of the type before `::`.
                found = path
                    .rsplit_once("::")
                    .map(|(ty, _)| ty)
                    .filter(|ty| ty.starts_with(|c: char| c.is_uppercase()))
                    .or(Some(path).filter(|p| p.starts_with(|c: char| c.is_uppercase())));
            }
        }
    }
    found
}

/// The items a notebook defined (evcxr copies them into the source it gives rust-analyzer):
/// functions, types, constants, modules, as completion items.
pub(crate) fn defined_items(source: &str) -> Vec<Item> {
    use ra_ap_syntax::ast::{self, HasModuleItem, HasName};
    let file = ra_ap_syntax::SourceFile::parse(source, ra_ap_syntax::Edition::Edition2024).tree();
    file.items()
        .filter_map(|item| {
            let (name, kind) = match item {
                ast::Item::Fn(f) => (f.name()?, "function"),
                ast::Item::Struct(s) => (s.name()?, "class"),
                ast::Item::Enum(e) => (e.name()?, "class"),
                ast::Item::Trait(t) => (t.name()?, "class"),
                ast::Item::TypeAlias(t) => (t.name()?, "class"),
                ast::Item::Union(u) => (u.name()?, "class"),
                ast::Item::Const(c) => (c.name()?, "instance"),
                ast::Item::Static(s) => (s.name()?, "instance"),
                ast::Item::Module(m) => (m.name()?, "module"),
                _ => return None,
            };
            let text = name.text().to_string();
            (!text.starts_with("evcxr_")).then(|| Item {
                text,
                kind: kind.into(),
            })
        })
        .collect()
}

/// The names the cell's text binds with `let` (`let x`, `let mut x`).
fn let_names(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("let ").filter_map(move |(at, _)| {
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident_char(c));
        let rest = text[at + 4..].trim_start();
        let rest = rest.strip_prefix("mut ").unwrap_or(rest).trim_start();
        let name = &rest[..rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len())];
        (before_ok && !name.is_empty()).then_some(name)
    })
}

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
    fn context_reads_members_paths_and_names() {
        assert_eq!(
            context("v.le", 4),
            Context::Member {
                receiver: "v",
                prefix: "le"
            }
        );
        assert_eq!(
            context("let y = x.", 10),
            Context::Member {
                receiver: "x",
                prefix: ""
            }
        );
        assert_eq!(
            context("tch::nn::li", 11),
            Context::Path {
                path: vec!["tch", "nn"],
                prefix: "li"
            }
        );
        assert_eq!(context("Ten", 3), Context::Name { prefix: "Ten" });
        assert_eq!(context("x.f().", 6), Context::Other);
        assert_eq!(context("1.", 2), Context::Other);
        assert_eq!(context("a.b.c", 5), Context::Other);
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
    fn type_keys_drop_references_paths_and_generics() {
        assert_eq!(type_key("alloc::vec::Vec<i32>"), "Vec");
        assert_eq!(type_key("&mut Vec<Vec<f64>>"), "Vec");
        assert_eq!(type_key("&'static str"), "str");
        assert_eq!(type_key("tch::wrappers::tensor::Tensor"), "Tensor");
        assert_eq!(type_key("i64"), "i64");
    }

    #[test]
    fn declared_types_come_from_the_usual_let_forms() {
        let cell = "let v = vec![1, 2];\nlet mut t = Tensor::randn([2], (Kind::Float, Device::Cpu));\nlet n: usize = 3;\n";
        assert_eq!(declared_type(cell, "v"), Some("Vec"));
        assert_eq!(declared_type(cell, "t"), Some("Tensor"));
        assert_eq!(declared_type(cell, "n"), Some("usize"));
        assert_eq!(declared_type(cell, "m"), None);
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
