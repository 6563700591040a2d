//! Making and keeping the index: rust-analyzer asked once per build cache, the answers kept
//! there as JSON.
//!
//! What is asked: the names in scope in an empty cell; after `x.`, for every type in scope, the
//! primitives, and the types of the modules walked (those of [`HELPER_MODULES`] and of modules
//! at [`MAX_DEPTH`] aside); after `path::`, for every type and module in scope, every module
//! reached from the crates in scope (`std`, `tch`, the prelude), [`MAX_DEPTH`] segments deep,
//! and the same types. Each answer brings the items' signatures and documentation, which go to
//! [`Index::docs`] once per item.

use super::super::messages::{Doc, Index, Item, Reply, Source};
use anyhow::{Result, bail};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::Write;
use std::path::Path;

/// Scalar types, which are not names in scope but are common receivers.
const PRIMITIVES: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32",
    "f64", "bool", "char", "str",
];

/// How deep the walk goes from a crate in scope: `std::collections::hash_map` is 3 segments,
/// which reaches what cells name (`std::f64::consts::PI`, `tch::nn::init`) without the long tail
/// of platform modules.
const MAX_DEPTH: usize = 3;

/// Modules not walked: thousands of CPU intrinsics and compiler internals nobody completes in a
/// notebook, and `core`/`alloc`, whose public items `std` re-exports (walked there once).
const NOT_WALKED: &[&str] = &[
    "arch",
    "intrinsics",
    "simd",
    "core",
    "alloc",
    "os",
    "prelude",
];

/// Modules whose types are listed but not asked about (their methods, their associated items):
/// iterator adapters, guards and markers, which std's functions return and a notebook consumes
/// rather than names. Skipping them saves about a third of the index's questions (minutes on
/// two cores).
const HELPER_MODULES: &[&str] = &[
    "iter",
    "str",
    "slice",
    "char",
    "array",
    "ascii",
    "hint",
    "marker",
    "pin",
    "ptr",
    "task",
    "future",
    "async_iter",
    "panic",
    "primitive",
    "backtrace",
];

/// An item's name as a path segment: `collections::` (a module, as rust-analyzer inserts it)
/// is `collections`.
fn segment(item: &Item) -> &str {
    item.text.trim_end_matches("::")
}

/// The last segment of `path`.
fn last(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// Asks rust-analyzer for every entry of the index. `complete` answers a round of questions
/// that do not depend on each other, each reply in its question's place (several analyzers may
/// share a round); the answers are taken in the order that asking one question at a time would
/// take them, so the index holds the same entries however many answer. `header` puts the
/// prelude in scope as in a cell. `check_scope` sees the first answer, what is in scope, and may
/// stop there: the rest is asked of the same analyzer and would lack whatever that lacks.
pub(crate) fn build(
    header: &str,
    check_scope: impl FnOnce(&[Item]) -> Result<()>,
    complete: impl FnMut(Vec<Source>) -> Result<Vec<Reply>>,
) -> Result<Index> {
    let mut builder = Builder {
        header,
        complete,
        index: Index::default(),
        texts: HashMap::new(),
    };
    let scope = builder.ask(&[String::new()])?.pop().unwrap_or_default();
    check_scope(&scope)?;
    let scope = builder.keep_docs(None, scope);
    builder.index.scope = scope.clone();

    // Methods after `x.`: the types in scope and the primitives first, so that a name they
    // share with a type walked later (`Result`, `Error`) keeps theirs.
    let mut typed: Vec<(String, String)> = scope
        .iter()
        .filter(|item| item.kind == "class")
        .map(|item| (item.text.clone(), item.text.clone()))
        .chain(PRIMITIVES.iter().map(|p| (p.to_string(), p.to_string())))
        .collect();
    builder.walk_paths(&scope, &mut typed)?;
    builder.ask_methods(&typed)?;
    Ok(builder.index)
}

/// The index being built, and the way to ask rust-analyzer for its entries.
struct Builder<'a, C> {
    header: &'a str,
    complete: C,
    index: Index,
    /// Each documentation text's number in `index.docs.texts`.
    texts: HashMap<Doc, u32>,
}

impl<C: FnMut(Vec<Source>) -> Result<Vec<Reply>>> Builder<'_, C> {
    /// One round of questions: the completions at the end of each body, written in a function
    /// after the header.
    fn ask(&mut self, bodies: &[String]) -> Result<Vec<Vec<Item>>> {
        let header = self.header;
        let sources = bodies
            .iter()
            .map(|body| {
                let code =
                    format!("{header}\n#[allow(unused)]\nfn tchbook_index() {{\n{body}\n}}\n");
                let offset = code.len() - "\n}\n".len();
                Source { code, offset }
            })
            .collect();
        (self.complete)(sources)?
            .into_iter()
            .map(|reply| match reply {
                Reply::Completions { items, .. } => Ok(items),
                Reply::Failed { message } => bail!(message),
                other => bail!("unexpected reply {other:?}"),
            })
            .collect()
    }

    /// Paths after `Name::`: the types and modules in `scope`, then what the modules hold,
    /// breadth first, a round of the queue at a time; a type's associated items are asked for,
    /// but nothing below them. Each type met is added to `typed`, for its methods.
    fn walk_paths(&mut self, scope: &[Item], typed: &mut Vec<(String, String)>) -> Result<()> {
        let mut queue: VecDeque<(String, usize, bool)> = scope
            .iter()
            .filter(|item| matches!(item.kind.as_str(), "class" | "module"))
            .filter(|item| !NOT_WALKED.contains(&segment(item)))
            .map(|item| (segment(item).to_owned(), 1, item.kind == "class"))
            .collect();
        let mut walked = BTreeSet::new();
        while !queue.is_empty() {
            let round: Vec<(String, usize, bool)> = queue
                .drain(..)
                .filter(|(path, _, _)| walked.insert(path.clone()))
                .collect();
            let bodies: Vec<String> = round.iter().map(|(path, ..)| format!("{path}::")).collect();
            for ((path, depth, is_type), items) in round.into_iter().zip(self.ask(&bodies)?) {
                for item in items.iter().filter(|_| !is_type) {
                    let name = segment(item);
                    let child = format!("{path}::{name}");
                    match item.kind.as_str() {
                        "module" if depth < MAX_DEPTH && !NOT_WALKED.contains(&name) => {
                            queue.push_back((child, depth + 1, false));
                        }
                        "class" if depth < MAX_DEPTH && !HELPER_MODULES.contains(&last(&path)) => {
                            typed.push((name.to_owned(), child.clone()));
                            queue.push_back((child, depth, true));
                        }
                        _ => {}
                    }
                }
                if !items.is_empty() {
                    let items = self.keep_docs(Some(&path), items);
                    self.index.paths.insert(path, items);
                }
            }
        }
        Ok(())
    }

    /// A name's methods are those of its first type in `typed` that has any: each round asks
    /// the first not yet asked of each name still without methods.
    fn ask_methods(&mut self, typed: &[(String, String)]) -> Result<()> {
        let mut asked = vec![false; typed.len()];
        loop {
            // In order, so the first entry of a name not yet asked is the one that claims it.
            let mut claimed = BTreeSet::new();
            let round: Vec<usize> = (0..typed.len())
                .filter(|&i| {
                    let key = &typed[i].0;
                    !asked[i] && !self.index.methods.contains_key(key) && claimed.insert(key)
                })
                .collect();
            if round.is_empty() {
                return Ok(());
            }
            let bodies: Vec<String> = round
                .iter()
                .map(|&i| {
                    let (key, path) = &typed[i];
                    let binding = if key == "str" { "&str" } else { path };
                    format!("let x: {binding} = todo!();\nx.")
                })
                .collect();
            for (&i, methods) in round.iter().zip(self.ask(&bodies)?) {
                asked[i] = true;
                let key = typed[i].0.clone();
                if methods.iter().any(|item| item.kind != "keyword") {
                    let methods = self.keep_docs(Some(&key), methods);
                    self.index.methods.insert(key, methods);
                }
            }
        }
    }

    /// Moves the items' documentation into `index.docs`, under `parent::name` (or `name` at the
    /// top), keeping the first one found for a path and each text once; returns the items
    /// without it.
    fn keep_docs(&mut self, parent: Option<&str>, items: Vec<Item>) -> Vec<Item> {
        let (index, texts) = (&mut self.index, &mut self.texts);
        items
            .into_iter()
            .map(|mut item| {
                if let Some(doc) = item.doc.take() {
                    let path = match parent {
                        Some(parent) => format!("{parent}::{}", segment(&item)),
                        None => segment(&item).to_owned(),
                    };
                    if !index.docs.by_path.contains_key(&path) {
                        let next = texts.len() as u32;
                        let number = *texts.entry(doc.clone()).or_insert(next);
                        if number == next {
                            index.docs.texts.push(doc);
                        }
                        index.docs.by_path.insert(path, number);
                    }
                }
                item
            })
            .collect()
    }
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
    let mut partial = tempfile::NamedTempFile::new_in(path.parent().unwrap_or(Path::new(".")))?;
    partial.write_all(&serde_json::to_vec(index)?)?;
    partial.persist(path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rust-analyzer's answers for a small crate: `m` holds `Error` (keywords only after `x.`,
    /// as for a type rust-analyzer cannot name) and `n`, which holds another `Error` with
    /// methods; `T` is in scope.
    fn answer(source: &Source) -> Reply {
        let body = source.code[..source.offset]
            .rsplit("fn tchbook_index() {\n")
            .next()
            .unwrap();
        let items = match body {
            "" => vec![Item::new("m::", "module"), Item::new("T", "class")],
            "m::" => vec![Item::new("Error", "class"), Item::new("n::", "module")],
            "m::n::" => vec![Item::new("Error", "class")],
            "T::" => vec![Item::new("new", "function")],
            "m::Error::" | "m::n::Error::" => vec![],
            "let x: T = todo!();\nx." => vec![Item::new("len", "function")],
            "let x: m::Error = todo!();\nx." => vec![Item::new("if", "keyword")],
            "let x: m::n::Error = todo!();\nx." => vec![Item::new("source", "function")],
            other if other.starts_with("let x: ") => vec![],
            other => panic!("not asked in this crate: {other:?}"),
        };
        Reply::Completions {
            items,
            start: 0,
            end: 0,
        }
    }

    #[test]
    fn questions_that_do_not_depend_on_each_other_are_asked_in_one_round() {
        let mut rounds = Vec::new();
        let index = build(
            "",
            |_| Ok(()),
            |sources| {
                rounds.push(sources.len());
                Ok(sources.iter().map(answer).collect())
            },
        )
        .unwrap();
        // The scope; the walk a depth at a time (`m` and `T`; `m::Error` and `m::n`;
        // `m::n::Error`); the methods of each name's first type (`T`, the primitives,
        // `m::Error`), then of the next `Error`, since the first had only keywords.
        assert_eq!(rounds, [1, 2, 2, 1, 2 + PRIMITIVES.len(), 1]);
        assert_eq!(index.paths.keys().collect::<Vec<_>>(), ["T", "m", "m::n"]);
        assert_eq!(index.methods["T"], [Item::new("len", "function")]);
        assert_eq!(index.methods["Error"], [Item::new("source", "function")]);
    }

    #[test]
    fn a_scope_without_what_the_header_brings_ends_the_build_at_the_first_answer() {
        let mut asked = 0;
        let error = build(
            "",
            |scope| {
                if scope.iter().any(|item| item.text == "Tensor") {
                    Ok(())
                } else {
                    bail!("no `Tensor` in scope")
                }
            },
            |sources| {
                asked += sources.len();
                Ok(sources.iter().map(answer).collect())
            },
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "no `Tensor` in scope");
        assert_eq!(asked, 1);
    }
}
