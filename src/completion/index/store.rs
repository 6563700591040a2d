//! Making and keeping the index: rust-analyzer asked once per build cache, the answers kept
//! there as JSON.

use super::super::messages::{Index, Item, Reply};
use anyhow::{Result, bail};
use std::io::Write;
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
    let mut partial = tempfile::NamedTempFile::new_in(path.parent().unwrap_or(Path::new(".")))?;
    partial.write_all(&serde_json::to_vec(index)?)?;
    partial.persist(path)?;
    Ok(())
}
