//! Which variables a cell names, and which it only declares again.
//!
//! evcxr loads every stored variable into each cell and stores it back after, so every cell
//! instantiated the store's generic code, the variable's drop and its unwinding for the type of
//! every variable in the notebook (one `Tensor` cost a trivial cell ~11 ms of rustc; a tutorial
//! notebook holds dozens of variables). A cell can use a variable only by writing its name: in
//! code, or in a string a format macro reads (`"{loss}"`), so every identifier-like word of the
//! text counts, those in strings and comments too. A variable no word names stays in the store,
//! untouched.

use ra_ap_syntax::{SyntaxKind, SyntaxNode, ast};
use std::collections::HashMap;

/// The words of a cell's text ([`names_in`]).
pub type Names = std::collections::HashSet<String>;

/// Every identifier-like word of `text`.
pub fn names_in(text: &str) -> Names {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
        .map(str::to_owned)
        .collect()
}

/// Whether `name` appears in `nodes` other than as the name a pattern binds (a use, a field, a
/// path, or anything inside a macro call, where tokens are not parsed). A cell that declares a
/// variable again and names it nowhere else cannot have moved the old value, so a panic can put
/// it back.
pub fn names_other_than_binding(nodes: &[SyntaxNode], name: &str) -> bool {
    nodes.iter().any(|node| {
        node.descendants_with_tokens()
            .filter_map(|element| element.into_token())
            .any(|token| {
                token.kind() == SyntaxKind::IDENT
                    && token.text() == name
                    && token.parent().map(|parent| parent.kind()) != Some(SyntaxKind::NAME)
            })
    })
}

/// Whether `item` defines a type a variable can hold (or a trait a `dyn` value can be). Every
/// cell's crate has the same name and metadata, so such a type defined again keeps its
/// `TypeId`: the store's check cannot see that a stored value was made with other fields, and
/// reading it as the new type reads the old bytes as new fields (garbage, or a crash of the
/// evaluation process and every variable with it).
pub fn defines_a_type(item: &ast::Item) -> bool {
    matches!(
        item,
        ast::Item::Struct(_)
            | ast::Item::Enum(_)
            | ast::Item::Union(_)
            | ast::Item::TypeAlias(_)
            | ast::Item::Trait(_)
    )
}

/// The types among `old` (each type a cell defines again, with its definition before the cell)
/// whose definition is other than before, or gone, once the cell is applied (`now`, the
/// definition a type has then).
pub fn changed_definitions(
    old: &HashMap<String, String>,
    now: impl Fn(&str) -> Option<String>,
) -> Names {
    let changed = old
        .iter()
        .filter(|(name, old)| now(name).as_ref() != Some(*old));
    changed.map(|(name, _)| name.clone()).collect()
}

/// The stored variables, given as `(name, type name)`, whose type names one of `changed` (the
/// types a cell defines again differently): they are lost, sorted by name.
pub fn of_changed_types<'a>(
    stored: impl IntoIterator<Item = (&'a str, &'a str)>,
    changed: &Names,
) -> Vec<String> {
    let mut lost: Vec<String> = stored
        .into_iter()
        .filter(|(_, type_name)| {
            names_in(type_name)
                .iter()
                .any(|word| changed.contains(word))
        })
        .map(|(name, _)| name.to_owned())
        .collect();
    lost.sort();
    lost
}

#[cfg(test)]
mod tests {
    use super::*;
    use ra_ap_syntax::{AstNode, Edition, SourceFile, ast::HasModuleItem};

    fn statements(code: &str) -> Vec<SyntaxNode> {
        let file = SourceFile::parse(&format!("fn f() {{ {code} }}"), Edition::Edition2024);
        let body = file
            .tree()
            .syntax()
            .descendants()
            .find_map(ast::StmtList::cast);
        body.unwrap().syntax().children().collect()
    }

    #[test]
    fn names_are_the_words_of_code_strings_and_comments() {
        let names = names_in("let y = x + 1; // uses z\nprintln!(\"{loss:.2}\"); 3d _w r#raw");
        for word in [
            "let", "y", "x", "uses", "z", "println", "loss", "_w", "r", "raw",
        ] {
            assert!(names.contains(word), "{word} missing from {names:?}");
        }
        assert!(!names.contains("3d") && !names.contains("2") && !names.contains("d"));
    }

    #[test]
    fn a_declaration_alone_is_not_a_use() {
        assert!(!names_other_than_binding(
            &statements("let mut x = 5;"),
            "x"
        ));
        assert!(names_other_than_binding(&statements("let x = x + 1;"), "x"));
        assert!(names_other_than_binding(
            &statements("let y = 1; dbg!(x);"),
            "x"
        ));
        assert!(names_other_than_binding(&statements("let y = s.x;"), "x"));
    }

    #[test]
    fn a_definition_changed_or_gone_is_a_changed_type() {
        let old: HashMap<String, String> = [
            ("Net", "struct Net;"),
            ("Same", "struct Same;"),
            ("Gone", "type Gone = i32;"),
        ]
        .map(|(name, code)| (name.to_owned(), code.to_owned()))
        .into();
        let now = |name: &str| match name {
            "Net" => Some("struct Net { width: i32 }".to_owned()),
            "Same" => Some("struct Same;".to_owned()),
            _ => None,
        };
        let changed = changed_definitions(&old, now);
        assert_eq!(changed, Names::from(["Net".to_owned(), "Gone".to_owned()]));
    }

    #[test]
    fn types_a_variable_can_hold_are_found() {
        let file = SourceFile::parse(
            "struct A; enum B {} union C { x: u8 } type D = A; trait E {} fn f() {} const G: u8 = 1;",
            Edition::Edition2024,
        );
        let found: Vec<bool> = file
            .tree()
            .items()
            .map(|item| defines_a_type(&item))
            .collect();
        assert_eq!(found, [true, true, true, true, true, false, false]);
    }

    #[test]
    fn variables_whose_type_names_a_changed_type_are_lost() {
        let changed: Names = ["Net".to_owned()].into();
        let stored = [
            ("b", "Vec<Net>"),
            ("a", "Net"),
            ("c", "Network"),
            ("d", "i32"),
        ];
        assert_eq!(of_changed_types(stored, &changed), ["a", "b"]);
    }
}
