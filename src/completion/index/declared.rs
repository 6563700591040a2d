//! What the cell's own text declares, for the index's lookups: the type a `let` gives a name,
//! the names `let` binds, the items a notebook defined, and a type's key in the index.

use super::super::messages::{Doc, Item};
use super::context::is_ident_char;

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
        // The statement's `let`, also after an item that needs no `;` (`struct P { .. }`).
        let Some(at) = statement
            .rmatch_indices("let ")
            .map(|(at, _)| at)
            .find(|&at| {
                at == 0 || statement[..at].ends_with(|c: char| c.is_whitespace() || c == '}')
            })
        else {
            continue;
        };
        let rest = &statement[at + "let ".len()..];
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
            (!text.starts_with("evcxr_")).then(|| Item::new(text, kind))
        })
        .collect()
}

/// What a notebook type named `key` offers: after `value.`, its fields (named or numbered) and
/// the methods of its `impl` blocks; after `key::`, its variants, associated functions and
/// constants. Read from the source evcxr gives rust-analyzer, which holds every item the
/// notebook defined, this cell's included.
pub(crate) fn defined_members(source: &str, key: &str, after_dot: bool) -> Vec<Item> {
    use ra_ap_syntax::ast::{self, HasModuleItem, HasName};
    let named = |name: Option<ast::Name>| name.is_some_and(|n| n.text() == key);
    let file = ra_ap_syntax::SourceFile::parse(source, ra_ap_syntax::Edition::Edition2024).tree();
    let mut found = Vec::new();
    for item in file.items() {
        match item {
            ast::Item::Struct(s) if after_dot && named(s.name()) => match s.field_list() {
                Some(ast::FieldList::RecordFieldList(fields)) => found.extend(
                    fields
                        .fields()
                        .filter_map(|f| f.name())
                        .map(|n| Item::new(n.text().to_string(), "instance")),
                ),
                Some(ast::FieldList::TupleFieldList(fields)) => found.extend(
                    (0..fields.fields().count()).map(|i| Item::new(i.to_string(), "instance")),
                ),
                None => {}
            },
            ast::Item::Enum(e) if !after_dot && named(e.name()) => found.extend(
                e.variant_list()
                    .into_iter()
                    .flat_map(|list| list.variants())
                    .filter_map(|v| v.name())
                    .map(|n| Item::new(n.text().to_string(), "instance")),
            ),
            ast::Item::Impl(i) if implements_for(&i, key) => {
                for assoc in i
                    .assoc_item_list()
                    .into_iter()
                    .flat_map(|l| l.assoc_items())
                {
                    let (name, kind, takes_self) = match assoc {
                        ast::AssocItem::Fn(f) => {
                            let takes_self = f.param_list().and_then(|p| p.self_param()).is_some();
                            (f.name(), "function", takes_self)
                        }
                        ast::AssocItem::Const(c) => (c.name(), "instance", false),
                        _ => continue,
                    };
                    if let Some(name) = name
                        && (takes_self == after_dot || !after_dot)
                    {
                        found.push(Item::new(name.text().to_string(), kind));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// The signature and doc comment of what the notebook defines: the item named `name` (`owner`
/// `None`), or the field, variant or associated item `name` of its type `owner`; read from the
/// source evcxr gives rust-analyzer, as [`defined_members`] is.
pub(crate) fn defined_doc(source: &str, owner: Option<&str>, name: &str) -> Option<Doc> {
    use ra_ap_syntax::AstNode;
    use ra_ap_syntax::ast::{self, HasModuleItem, HasName};
    let is = |n: Option<ast::Name>, wanted: &str| n.is_some_and(|n| n.text() == wanted);
    let file = ra_ap_syntax::SourceFile::parse(source, ra_ap_syntax::Edition::Edition2024).tree();
    for item in file.items() {
        let found = match (owner, &item) {
            (None, ast::Item::Fn(f)) if is(f.name(), name) => Some(described(f.syntax(), f.body())),
            (None, ast::Item::Struct(i)) if is(i.name(), name) => Some(described(i.syntax(), None)),
            (None, ast::Item::Enum(i)) if is(i.name(), name) => Some(described(i.syntax(), None)),
            (None, ast::Item::Trait(i)) if is(i.name(), name) => Some(described(i.syntax(), None)),
            (None, ast::Item::TypeAlias(i)) if is(i.name(), name) => {
                Some(described(i.syntax(), None))
            }
            (None, ast::Item::Const(i)) if is(i.name(), name) => Some(described(i.syntax(), None)),
            (None, ast::Item::Static(i)) if is(i.name(), name) => Some(described(i.syntax(), None)),
            (Some(key), ast::Item::Struct(s)) if is(s.name(), key) => match s.field_list() {
                Some(ast::FieldList::RecordFieldList(fields)) => fields
                    .fields()
                    .find(|f| is(f.name(), name))
                    .map(|f| described(f.syntax(), None)),
                _ => None,
            },
            (Some(key), ast::Item::Enum(e)) if is(e.name(), key) => e
                .variant_list()
                .into_iter()
                .flat_map(|list| list.variants())
                .find(|v| is(v.name(), name))
                .map(|v| described(v.syntax(), None)),
            (Some(key), ast::Item::Impl(i)) if implements_for(i, key) => i
                .assoc_item_list()
                .into_iter()
                .flat_map(|list| list.assoc_items())
                .find_map(|assoc| match assoc {
                    ast::AssocItem::Fn(f) if is(f.name(), name) => {
                        Some(described(f.syntax(), f.body()))
                    }
                    ast::AssocItem::Const(c) if is(c.name(), name) => {
                        Some(described(c.syntax(), None))
                    }
                    _ => None,
                }),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// A definition as documentation: its text without its doc comments and attributes (a
/// function's up to its body, anything else up to [`SHOWN_LINES`] lines), and its doc comment.
fn described(node: &ra_ap_syntax::SyntaxNode, body: Option<ra_ap_syntax::ast::BlockExpr>) -> Doc {
    use ra_ap_syntax::ast::{AstNode, Comment, DocCommentIter};
    use ra_ap_syntax::{SyntaxElement, SyntaxKind};
    let doc: Vec<String> = DocCommentIter::from_syntax_node(node)
        .filter_map(|comment: Comment| {
            let (text, _) = comment.doc_comment()?;
            Some(text.strip_prefix(' ').unwrap_or(text).to_owned())
        })
        .collect();
    // The definition starts at its first child that is neither a comment, an attribute nor
    // whitespace.
    let start = node
        .children_with_tokens()
        .find(|child| match child {
            SyntaxElement::Token(token) => {
                !matches!(token.kind(), SyntaxKind::COMMENT | SyntaxKind::WHITESPACE)
            }
            SyntaxElement::Node(node) => node.kind() != SyntaxKind::ATTR,
        })
        .map_or(node.text_range().start(), |child| {
            child.text_range().start()
        });
    let end = body.map_or(node.text_range().end(), |body| {
        body.syntax().text_range().start()
    });
    let whole = node.text().to_string();
    let from = usize::from(start - node.text_range().start());
    let to = usize::from(end - node.text_range().start());
    let text = whole.get(from..to).unwrap_or(&whole).trim();
    let mut lines: Vec<&str> = text.lines().take(SHOWN_LINES + 1).collect();
    if lines.len() > SHOWN_LINES {
        lines.truncate(SHOWN_LINES);
        lines.push("    …");
    }
    Doc {
        signature: Some(lines.join("\n")),
        text: (!doc.is_empty()).then(|| doc.join("\n")),
    }
}

/// How much of a notebook type's definition its documentation shows.
const SHOWN_LINES: usize = 12;

/// Whether `block` is an `impl` (inherent or of a trait) for the type named `key`.
fn implements_for(block: &ra_ap_syntax::ast::Impl, key: &str) -> bool {
    use ra_ap_syntax::ast;
    let Some(ast::Type::PathType(ty)) = block.self_ty() else {
        return false;
    };
    ty.path()
        .and_then(|p| p.segment())
        .and_then(|s| s.name_ref())
        .is_some_and(|n| n.text() == key)
}

/// The names the cell's text binds with `let` (`let x`, `let mut x`).
pub(super) fn let_names(text: &str) -> impl Iterator<Item = &str> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let after_item = "struct P { x: f64 }\nlet p = P { x: 1.0 };\np.";
        assert_eq!(declared_type(after_item, "p"), Some("P"));
    }

    #[test]
    fn notebook_types_offer_their_fields_methods_and_associated_items() {
        let source = "struct P { x: f64, pub y: f64 }\nstruct Pair(i32, i32);\n\
            enum Shape { Dot, Line }\nimpl P { fn new() -> P { todo!() } fn norm(&self) -> f64 { 0.0 } const ORIGIN: f64 = 0.0; }\n\
            impl Clone for P { fn clone(&self) -> P { todo!() } }\nfn w() { let p = P { x: 1.0, y: 2.0 }; }";
        let names = |items: Vec<Item>| items.into_iter().map(|i| i.text).collect::<Vec<_>>();
        assert_eq!(
            names(defined_members(source, "P", true)),
            ["x", "y", "norm", "clone"]
        );
        assert_eq!(
            names(defined_members(source, "P", false)),
            ["new", "norm", "ORIGIN", "clone"]
        );
        assert_eq!(names(defined_members(source, "Pair", true)), ["0", "1"]);
        assert_eq!(
            names(defined_members(source, "Shape", false)),
            ["Dot", "Line"]
        );
        assert!(defined_members(source, "Q", true).is_empty());
    }

    #[test]
    fn notebook_items_are_documented_from_their_definitions() {
        let source = "/// A point.\n#[derive(Clone)]\nstruct P {\n    /// Across.\n    x: f64,\n}\n\
            impl P {\n    /// Its length.\n    fn norm(&self) -> f64 { self.x.abs() }\n}\n\
            /// Twice.\nfn twice(v: f64) -> f64 {\n    2.0 * v\n}";
        let doc = defined_doc(source, None, "P").unwrap();
        assert_eq!(
            doc.signature.as_deref(),
            Some("struct P {\n    /// Across.\n    x: f64,\n}")
        );
        assert_eq!(doc.text.as_deref(), Some("A point."));
        let doc = defined_doc(source, None, "twice").unwrap();
        assert_eq!(doc.signature.as_deref(), Some("fn twice(v: f64) -> f64"));
        assert_eq!(doc.text.as_deref(), Some("Twice."));
        let doc = defined_doc(source, Some("P"), "x").unwrap();
        assert_eq!(
            (doc.signature.as_deref(), doc.text.as_deref()),
            (Some("x: f64"), Some("Across."))
        );
        let doc = defined_doc(source, Some("P"), "norm").unwrap();
        assert_eq!(doc.signature.as_deref(), Some("fn norm(&self) -> f64"));
        assert_eq!(defined_doc(source, Some("P"), "y"), None);
        assert_eq!(defined_doc(source, None, "Q"), None);
    }
}
