//! A cell's Rust split as evcxr splits it: items go to the program's top level, statements into
//! the function that runs the cells, and the final expression is shown as the kernel shows it.

use anyhow::{Context, Result, bail};
use ra_ap_syntax::ast::{self, HasName};
use ra_ap_syntax::{AstNode, Edition, NodeOrToken, SourceFile, SyntaxKind, SyntaxNode};

/// What a cell's code is wrapped in to parse it as a function body.
const PREFIX: &str = "fn tchbook_cell() {\n";

/// A cell's Rust split as evcxr splits it: items (with their names, `None` for `use` and
/// other unnamed items), the statements in order, and the final expression.
#[derive(Debug, Default)]
pub(super) struct SplitCell {
    pub(super) items: Vec<(Option<String>, String)>,
    pub(super) statements: String,
    pub(super) tail: Option<String>,
}

pub(super) fn split_cell(code: &str) -> Result<SplitCell> {
    let mut split = SplitCell::default();
    if code.trim().is_empty() {
        return Ok(split);
    }
    if let Some(why) = crate::syntax::too_deeply_nested(code) {
        bail!("{why}");
    }
    let wrapped = format!("{PREFIX}{code}\n}}");
    let parsed = SourceFile::parse(&wrapped, Edition::Edition2021);
    if let Some(error) = parsed.errors().first() {
        let at = usize::from(error.range().start()).saturating_sub(PREFIX.len());
        let line = code[..at.min(code.len())].lines().count().max(1);
        bail!("line {line}: {error}");
    }
    let list = parsed
        .tree()
        .syntax()
        .descendants()
        .find_map(ast::StmtList::cast)
        .context("no function body in the parse")?;
    // Every element in order, comments and blank lines included, so the cell reads as written.
    let tail = list.tail_expr().map(|t| t.syntax().clone());
    for element in list.syntax().children_with_tokens() {
        let node = match element {
            NodeOrToken::Token(token) => {
                if !matches!(token.kind(), SyntaxKind::L_CURLY | SyntaxKind::R_CURLY) {
                    split.statements.push_str(token.text());
                }
                continue;
            }
            NodeOrToken::Node(node) => node,
        };
        if Some(&node) == tail.as_ref() {
            split.tail = Some(text(code, &node));
            continue;
        }
        match ast::Item::cast(node.clone()) {
            Some(item) if !matches!(item, ast::Item::MacroCall(_)) => {
                split.items.push((item_name(&item), text(code, &node)));
            }
            _ => split.statements.push_str(&text(code, &node)),
        }
    }
    split.statements = split.statements.trim_matches('\n').to_owned();
    if !split.statements.is_empty() {
        split.statements.push('\n');
    }
    Ok(split)
}

/// The cell's own text of a node parsed from the wrapped code.
fn text(code: &str, node: &SyntaxNode) -> String {
    let range = node.text_range();
    let start = usize::from(range.start()) - PREFIX.len();
    let end = usize::from(range.end()) - PREFIX.len();
    code[start..end].to_owned()
}

/// The name evcxr keeps one definition per; `None` for `use`, `impl` and the like.
fn item_name(item: &ast::Item) -> Option<String> {
    let name = match item {
        ast::Item::Fn(i) => i.name(),
        ast::Item::Struct(i) => i.name(),
        ast::Item::Enum(i) => i.name(),
        ast::Item::Union(i) => i.name(),
        ast::Item::Trait(i) => i.name(),
        ast::Item::TypeAlias(i) => i.name(),
        ast::Item::Const(i) => i.name(),
        ast::Item::Static(i) => i.name(),
        ast::Item::Module(i) => i.name(),
        ast::Item::MacroRules(i) => i.name(),
        _ => None,
    };
    name.map(|n| n.text().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_go_to_the_top_level_and_the_final_expression_is_displayed() {
        let split = split_cell(
            "#[derive(Debug)]\nstruct A { x: i64 }\nimpl A { fn new() -> A { A { x: 1 } } }\n\
             use std::collections::HashMap;\nlet a = A::new();\nprintln!(\"{}\", a.x);\na",
        )
        .unwrap();
        assert_eq!(split.items.len(), 3, "{split:?}");
        assert_eq!(split.items[0].0.as_deref(), Some("A"));
        assert!(split.items[0].1.starts_with("#[derive(Debug)]"));
        assert_eq!(split.items[2].0, None);
        assert!(split.statements.contains("let a = A::new();"));
        assert!(split.statements.contains("println!"));
        assert_eq!(split.tail.as_deref(), Some("a"));
    }

    #[test]
    fn a_loop_ending_a_cell_is_a_statement_or_a_unit_value() {
        let split = split_cell("for i in 0..3 {\n    println!(\"{i}\");\n};").unwrap();
        assert_eq!(split.tail, None);
        let split = split_cell("if true { 1 } else { 2 }").unwrap();
        assert_eq!(split.tail.as_deref(), Some("if true { 1 } else { 2 }"));
    }
}
