//! The analyzer process's protocol, both sides: one JSON line per request on its stdin, one JSON
//! line per reply on its stdout, in order. The kernel ([`super::analyzer`]) writes requests and
//! reads replies; the process ([`super::server`]) does the opposite, with these same types.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Source as rust-analyzer sees it: a cell wrapped by evcxr, and the byte offset asked about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub code: String,
    pub offset: usize,
}

impl From<evcxr::AnalysisSource> for Source {
    fn from(source: evcxr::AnalysisSource) -> Self {
        Source {
            code: source.code,
            offset: source.offset,
        }
    }
}

impl From<&Source> for evcxr::AnalysisSource {
    fn from(source: &Source) -> Self {
        evcxr::AnalysisSource {
            code: source.code.clone(),
            offset: source.offset,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Completions at `source.offset`.
    Complete { source: Source },
    /// Documentation of the name at `source.offset`.
    Hover { source: Source },
    /// The fallback index ([`Index`]) of what a cell sees: `header` is the start-up cell's `use`
    /// line(s), which put the prelude in scope.
    BuildIndex { header: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
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
    Index(Index),
    /// rust-analyzer failed (or panicked) on this request; the process may have ended.
    Failed {
        message: String,
    },
}

/// One completion: what is inserted, and its kind as JupyterLab names kinds (`function`,
/// `class`, `module`, `instance`, `keyword`, `magic`, ...), for its icons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub text: String,
    pub kind: String,
}

/// What rust-analyzer answers for the common cases, computed once per build cache so a kernel
/// can complete before rust-analyzer has warmed up (its first analysis of std and tch takes
/// seconds; JupyterLab drops replies slower than one second).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Index {
    /// Names in scope in an empty cell: the prelude's, std's prelude, keywords, macros.
    pub scope: Vec<Item>,
    /// After `x.`, by the name of `x`'s type (its last path segment, without generics).
    pub methods: BTreeMap<String, Vec<Item>>,
    /// After `Name::`, by the type's or module's name.
    pub paths: BTreeMap<String, Vec<Item>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_as_one_line_each() {
        let request = Request::Complete {
            source: Source {
                code: "fn f() {\n    x.\n}".into(),
                offset: 15,
            },
        };
        let line = serde_json::to_string(&request).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), request);
        let mut index = Index::default();
        index.methods.insert(
            "Vec".into(),
            vec![Item {
                text: "len".into(),
                kind: "function".into(),
            }],
        );
        let reply = Reply::Index(index);
        let line = serde_json::to_string(&reply).unwrap();
        assert_eq!(serde_json::from_str::<Reply>(&line).unwrap(), reply);
    }
}
