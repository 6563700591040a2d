//! The analyzer process (`tchbook analyzer --dir DIR`): rust-analyzer alone in a process of its
//! own, answering [`Request`]s from stdin with [`Reply`]s on stdout, one JSON line each.
//!
//! Why a process: rust-analyzer can panic on odd input (a stray `$` or a bidi mark in a cell
//! panics ra_ap_hir 0.0.347's `failed to unify type owners`), hang, or grow without bound. In
//! the engine thread any of those took the evaluation engine, and every variable of the
//! notebook, with it. Here a panic ends this process after a `Failed` reply, and the kernel
//! starts a new one when it is next needed; a hang or a blow-up is the kernel's to kill
//! ([`super::analyzer`]). The process also keeps rust-analyzer's memory (about 1 GiB once std
//! and tch are analysed) out of kernels that never complete.

use super::messages::{Doc, Item, Reply, Request};
use super::rust_analyzer::StandaloneAnalyzer;
use anyhow::{Context, Result};
use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// Names evcxr's wrapper adds around a cell; never offered to the user.
const INTERNAL_NAMES: &[&str] = &[
    "evcxr_variable_store",
    "evcxr_internal_runtime",
    "evcxr_analysis_wrapper",
];

/// Serves requests until stdin closes. `dir` holds the `Cargo.toml` of the crate analysed.
pub fn serve(dir: &Path) -> Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut analyzer = None;
    for line in stdin.lines() {
        let line = line.context("reading a request")?;
        let request = match serde_json::from_str::<Request>(&line) {
            Ok(request) => request,
            Err(error) => {
                send(
                    &mut stdout,
                    &Reply::Failed {
                        message: format!("unreadable request: {error}"),
                    },
                )?;
                continue;
            }
        };
        match catch_unwind(AssertUnwindSafe(|| answer(&mut analyzer, dir, &request))) {
            Ok(reply) => send(&mut stdout, &reply)?,
            Err(payload) => {
                let text = tchbook_wire::payload_text(&*payload);
                let message = format!(
                    "rust-analyzer panicked: {}",
                    text.unwrap_or("a panic without a message")
                );
                send(
                    &mut stdout,
                    &Reply::Failed {
                        message: message.clone(),
                    },
                )?;
                // Its database may be half-updated: a new process starts clean.
                anyhow::bail!(message);
            }
        }
    }
    Ok(())
}

fn send(out: &mut impl Write, reply: &Reply) -> Result<()> {
    let line = serde_json::to_string(reply)?;
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

fn answer(analyzer: &mut Option<StandaloneAnalyzer>, dir: &Path, request: &Request) -> Reply {
    let analyzer = match analyzer {
        Some(analyzer) => analyzer,
        None => match StandaloneAnalyzer::new(dir) {
            Ok(made) => analyzer.insert(made),
            Err(error) => {
                return Reply::Failed {
                    message: format!("starting rust-analyzer in {}: {error:#}", dir.display()),
                };
            }
        },
    };
    let result = match request {
        Request::Complete { source, docs } => complete(analyzer, &source.into(), *docs),
        Request::Hover { source } => hover(analyzer, &source.into()),
    };
    result.unwrap_or_else(|error| Reply::Failed {
        message: format!("{error:#}"),
    })
}

/// rust-analyzer's completions as replies: bare names (no argument placeholders), internal
/// names dropped, each name once, in rust-analyzer's order of relevance; with `docs`, each with
/// its signature and documentation.
pub(crate) fn complete(
    analyzer: &mut StandaloneAnalyzer,
    source: &tchbook_cellcode::AnalysisSource,
    docs: bool,
) -> Result<Reply> {
    let found = analyzer.completions(source)?;
    let mut seen = std::collections::HashSet::new();
    let items = found
        .completions
        .into_iter()
        .map(|c| Item {
            text: bare_name(&c.code),
            kind: c.kind.to_owned(),
            doc: if docs && (c.detail.is_some() || c.documentation.is_some()) {
                Some(Doc {
                    signature: c.detail,
                    text: c.documentation,
                })
            } else {
                None
            },
        })
        .filter(|item| {
            !item.text.is_empty()
                && !INTERNAL_NAMES.contains(&item.text.as_str())
                && seen.insert(item.text.clone())
        })
        .collect();
    Ok(Reply::Completions {
        items,
        start: found.start_offset,
        end: found.end_offset,
    })
}

fn hover(
    analyzer: &mut StandaloneAnalyzer,
    source: &tchbook_cellcode::AnalysisSource,
) -> Result<Reply> {
    let markdown = analyzer.hover(source, true)?;
    let plain = analyzer.hover(source, false)?;
    Ok(Reply::Hover {
        markdown: markdown.map(|text| without_private_fields(&text)),
        plain: plain.map(|text| without_private_fields(&text)),
    })
}

/// `push(value)` → `push`: what JupyterLab inserts is the name; the user types the arguments.
fn bare_name(code: &str) -> String {
    code.split(['(', '{', '['])
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// rust-analyzer shows a struct's first fields in its hover, private ones included (because
/// evcxr marks every source root local): `LossPlot { title: String, .. }` tells a user of the
/// type nothing they can use. Field lines without `pub` are replaced by one `/* private
/// fields */` line.
fn without_private_fields(hover: &str) -> String {
    let mut out = Vec::new();
    let mut in_struct = false;
    let mut hid = false;
    for line in hover.lines() {
        let trimmed = line.trim();
        if trimmed.contains("struct ") && trimmed.ends_with('{') {
            in_struct = true;
            hid = false;
        } else if in_struct && trimmed.starts_with('}') {
            if hid {
                out.push("    /* private fields */".to_owned());
            }
            in_struct = false;
        } else if in_struct && is_private_field(trimmed) {
            hid = true;
            continue;
        }
        out.push(line.to_owned());
    }
    out.join("\n")
}

fn is_private_field(line: &str) -> bool {
    let Some((name, _ty)) = line.split_once(':') else {
        return false;
    };
    !name.starts_with("pub")
        && !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_name_drops_argument_placeholders() {
        assert_eq!(bare_name("push(value)"), "push");
        assert_eq!(bare_name("println!(…)"), "println!");
        assert_eq!(bare_name("len()"), "len");
        assert_eq!(bare_name("Vec"), "Vec");
    }

    #[test]
    fn hover_hides_private_fields_and_keeps_public_ones() {
        let hover = "```rust\ntchbook_prelude::plot\n```\n\n```rust\npub struct LossPlot {\n    title: String,\n    series: Vec<Series>,\n    pub shown: bool,\n}\n```\n\nA loss plot.";
        let shown = without_private_fields(hover);
        assert!(!shown.contains("title: String"), "{shown}");
        assert!(!shown.contains("series:"), "{shown}");
        assert!(shown.contains("pub shown: bool"), "{shown}");
        assert!(shown.contains("/* private fields */"), "{shown}");
        assert!(shown.ends_with("A loss plot."), "{shown}");
        // Nothing hidden: nothing added.
        let open = "```rust\npub struct P {\n    pub x: f64,\n}\n```";
        assert_eq!(without_private_fields(open), open);
    }
}
