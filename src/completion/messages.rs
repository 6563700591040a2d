//! The analyzer process's protocol, both sides: one JSON line per request on its stdin, one JSON
//! line per reply on its stdout, in order. The kernel ([`super::analyzer`]) writes requests and
//! reads replies; the process ([`super::server`]) does the opposite, with these same types.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Source as rust-analyzer sees it: a cell wrapped by evcxr, and the byte offset asked about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub(crate) code: String,
    pub(crate) offset: usize,
}

impl From<tchbook_cellcode::AnalysisSource> for Source {
    fn from(source: tchbook_cellcode::AnalysisSource) -> Self {
        Source {
            code: source.code,
            offset: source.offset,
        }
    }
}

impl From<&Source> for tchbook_cellcode::AnalysisSource {
    fn from(source: &Source) -> Self {
        tchbook_cellcode::AnalysisSource {
            code: source.code.clone(),
            offset: source.offset,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    /// Completions at `source.offset`; with `docs`, each with its signature and documentation
    /// (for the index: a live completion does not need them, and a `Tensor` has thousands).
    Complete {
        source: Source,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        docs: bool,
    },
    /// Documentation of the name at `source.offset`.
    Hover { source: Source },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub(crate) enum Reply {
    /// Matches, most relevant first; `start..end` is the text they replace (bytes of the source).
    Completions {
        items: Vec<Item>,
        start: usize,
        end: usize,
    },
    /// Markdown and plain text, or nothing found.
    Hover {
        markdown: Option<String>,
        plain: Option<String>,
    },
    /// rust-analyzer failed (or panicked) on this request; the process may have ended.
    Failed { message: String },
}

/// One completion: what is inserted, and its kind as JupyterLab names kinds (`function`,
/// `class`, `module`, `instance`, `keyword`, `magic`, ...), for its icons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Item {
    pub(crate) text: String,
    pub(crate) kind: String,
    /// Its signature and documentation, asked for when the index is built (never sent with a
    /// live completion, where a `Tensor` offers thousands of methods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) doc: Option<Doc>,
}

impl Item {
    pub(crate) fn new(text: impl Into<String>, kind: impl Into<String>) -> Item {
        Item {
            text: text.into(),
            kind: kind.into(),
            doc: None,
        }
    }
}

/// What a documentation request shows of an item: rust-analyzer's signature (`pub fn
/// push(&mut self, value: T)`) and its doc comment, as markdown.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Doc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
}

/// What rust-analyzer answers for the common cases, computed once per build cache so a kernel
/// can complete, and show documentation, without rust-analyzer (its first analysis of std and
/// tch takes seconds and ~1 GiB; JupyterLab drops completion replies slower than one second).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Index {
    /// Names in scope in an empty cell: the prelude's, std's prelude, keywords, macros.
    pub(crate) scope: Vec<Item>,
    /// After `x.`, by the name of `x`'s type (its last path segment, without generics).
    pub(crate) methods: BTreeMap<String, Vec<Item>>,
    /// After `path::`, by the path as a cell writes it: a name in scope (`Tensor`, `nn`) or a
    /// module or type reached from one (`std::collections`, `std::collections::HashMap`).
    pub(crate) paths: BTreeMap<String, Vec<Item>>,
    /// The documentation of the items above.
    pub(crate) docs: Docs,
}

/// Documentation by item path (`std::collections::HashMap`, `Tensor::zeros`, `println!`; a
/// method's path starts with its type's key, `Vec::push`). Each text is kept once: the
/// iterator adapters of std share `Iterator`'s ~70 methods, and their documentation would
/// otherwise be most of the index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Docs {
    pub(crate) by_path: BTreeMap<String, u32>,
    pub(crate) texts: Vec<Doc>,
}

impl Docs {
    pub(crate) fn get(&self, path: &str) -> Option<&Doc> {
        self.texts.get(*self.by_path.get(path)? as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_as_one_line_each() {
        let source = Source {
            code: "fn f() {\n    x.\n}".into(),
            offset: 15,
        };
        for docs in [false, true] {
            let request = Request::Complete {
                source: source.clone(),
                docs,
            };
            let line = serde_json::to_string(&request).unwrap();
            assert!(!line.contains('\n'));
            assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), request);
        }
        let mut documented = Item::new("len", "function");
        documented.doc = Some(Doc {
            signature: Some("pub fn len(&self) -> usize".into()),
            text: Some("Returns the number of elements in the vector.".into()),
        });
        let reply = Reply::Completions {
            items: vec![documented, Item::new("last", "function")],
            start: 15,
            end: 15,
        };
        let line = serde_json::to_string(&reply).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Reply>(&line).unwrap(), reply);
    }

    #[test]
    fn the_index_reads_back_as_itself() {
        let mut index = Index::default();
        index
            .methods
            .insert("Vec".into(), vec![Item::new("len", "function")]);
        index.docs.by_path.insert("Vec::len".into(), 0);
        index.docs.texts.push(Doc {
            signature: Some("pub fn len(&self) -> usize".into()),
            text: None,
        });
        let text = serde_json::to_string(&index).unwrap();
        let read: Index = serde_json::from_str(&text).unwrap();
        assert_eq!(read, index);
        assert_eq!(
            read.docs
                .get("Vec::len")
                .and_then(|d| d.signature.as_deref()),
            Some("pub fn len(&self) -> usize")
        );
    }
}
