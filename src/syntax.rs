//! Reading cell text without compiling it: `is_complete`, and Jupyter's cursor offsets (code
//! points) against Rust's (bytes).

use ra_ap_syntax::{Edition, SourceFile};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Completeness {
    Complete,
    /// More input is needed; the indent suggested for the next line.
    Incomplete(String),
    Invalid,
}

/// Whether `code` is ready to run, as a console decides after each Enter.
///
/// Unclosed delimiters, strings or block comments mean incomplete (a console then asks for
/// another line); a stray closing delimiter or a syntax error inside the code means invalid.
/// The parse is rust-analyzer's, on the code as the body of a function, which is how evcxr
/// treats a cell (statements and items mixed).
pub(crate) fn is_complete(code: &str) -> Completeness {
    // evcxr's `:` commands (`:dep`, `:vars`) are complete lines of their own; what follows
    // `:timeit`'s line is the rest of its expression.
    let cell = crate::commands::Cell::parse(code);
    let rust = match cell.timeit {
        Some(_) => code
            .trim_start()
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n"),
        None => cell.rust(),
    };
    if rust.trim().is_empty() {
        return Completeness::Complete;
    }
    if too_deeply_nested(&rust).is_some() {
        return Completeness::Invalid;
    }
    match delimiters(&rust) {
        Delimiters::Unclosed(depth) => return Completeness::Incomplete("    ".repeat(depth)),
        Delimiters::Mismatched => return Completeness::Invalid,
        Delimiters::Balanced => {}
    }
    let prefix = "fn tchbook_cell() {\n";
    let wrapped = format!("{prefix}{rust}\n}}");
    let end = (prefix.len() + rust.trim_end().len()) as u32;
    let errors = SourceFile::parse(&wrapped, Edition::Edition2024).errors();
    if errors.is_empty() {
        return Completeness::Complete;
    }
    if errors.iter().any(|e| u32::from(e.range().start()) < end) {
        return Completeness::Invalid;
    }
    // Errors only after the last token: `1 +` wants more, `let x = 5` (no `;`) is as complete
    // as it will get and evcxr reports what is wrong with it.
    let last = rust.trim_end();
    let wants_more = last.ends_with([
        '+', '-', '*', '/', '%', '=', ',', '.', '&', '|', '<', '>', '^',
    ]) || last
        .split_whitespace()
        .last()
        .is_some_and(|w| matches!(w, "let" | "in" | "as" | "where" | "else"));
    if wants_more {
        Completeness::Incomplete(String::new())
    } else {
        Completeness::Complete
    }
}

enum Delimiters {
    Balanced,
    Unclosed(usize),
    Mismatched,
}

/// The deepest nesting of brackets the kernel's own parsing is given: rust-analyzer's parser
/// (cell splitting, completion, hover, `is_complete`) recurses once per level, and a few
/// thousand levels overflowed the stack of the thread parsing, which ended the kernel with every
/// variable. Real code stays far below this; rustc, which builds cells in a process of its own,
/// has its own limits and messages.
pub(crate) const MAX_NESTING: usize = 256;

/// Why `code` is not parsed: more than [`MAX_NESTING`] levels of brackets. Counted with the
/// lexer, which does not recurse, so any text can be asked about.
pub(crate) fn too_deeply_nested(code: &str) -> Option<String> {
    use ra_ap_rustc_lexer::{FrontmatterAllowed, TokenKind, tokenize};
    let (mut depth, mut deepest) = (0usize, 0usize);
    for token in tokenize(code, FrontmatterAllowed::No) {
        match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            TokenKind::CloseParen | TokenKind::CloseBracket | TokenKind::CloseBrace => {
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
    }
    (deepest > MAX_NESTING).then(|| {
        format!(
            "the cell nests brackets {deepest} levels deep; tchbook reads at most {MAX_NESTING} \
             levels. Split the expression into named parts (let bindings, functions)."
        )
    })
}

/// The brackets outside strings and comments, by rustc's own lexer (rust-analyzer's copy of it,
/// already built for the parse below): an unterminated string or block comment is unclosed too.
fn delimiters(code: &str) -> Delimiters {
    use ra_ap_rustc_lexer::{FrontmatterAllowed, LiteralKind, TokenKind, tokenize};
    let mut open = Vec::new();
    for token in tokenize(code, FrontmatterAllowed::No) {
        let unterminated = match token.kind {
            TokenKind::BlockComment { terminated, .. } => !terminated,
            TokenKind::Literal { kind, .. } => match kind {
                LiteralKind::Str { terminated }
                | LiteralKind::ByteStr { terminated }
                | LiteralKind::CStr { terminated } => !terminated,
                // `None`: no closing quote with as many `#` (or a malformed opening).
                LiteralKind::RawStr { n_hashes }
                | LiteralKind::RawByteStr { n_hashes }
                | LiteralKind::RawCStr { n_hashes } => n_hashes.is_none(),
                _ => false,
            },
            _ => false,
        };
        if unterminated {
            return Delimiters::Unclosed(open.len());
        }
        let closes = match token.kind {
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => {
                open.push(token.kind);
                continue;
            }
            TokenKind::CloseParen => TokenKind::OpenParen,
            TokenKind::CloseBracket => TokenKind::OpenBracket,
            TokenKind::CloseBrace => TokenKind::OpenBrace,
            _ => continue,
        };
        if open.pop() != Some(closes) {
            return Delimiters::Mismatched;
        }
    }
    if open.is_empty() {
        Delimiters::Balanced
    } else {
        Delimiters::Unclosed(open.len())
    }
}

/// `?name` or `name?` as a whole cell asks for the documentation of `name` (IPython's pager),
/// where `name` is a path like `Vec::push` or `model.forward`.
pub(crate) fn help_target(code: &str) -> Option<&str> {
    let code = code.trim();
    let name = code
        .strip_prefix('?')
        .or_else(|| code.strip_suffix('?'))?
        .trim();
    let is_path = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '.')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    is_path.then_some(name)
}

/// Jupyter counts cursor positions in Unicode code points; Rust strings index bytes.
pub(crate) fn code_point_to_byte(text: &str, code_points: usize) -> usize {
    text.char_indices()
        .nth(code_points)
        .map_or(text.len(), |(byte, _)| byte)
}

pub(crate) fn byte_to_code_point(text: &str, byte: usize) -> usize {
    let byte = byte.min(text.len());
    text.char_indices().take_while(|(b, _)| *b < byte).count()
}

/// The byte offset just past the identifier the cursor is in or right after (hover wants the
/// whole name).
pub(crate) fn end_of_identifier(text: &str, byte: usize) -> usize {
    let mut end = byte.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    for c in text[end..].chars() {
        if c.is_alphanumeric() || c == '_' {
            end += c.len_utf8();
        } else {
            break;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_past_the_limit_is_named_with_its_depth() {
        assert!(too_deeply_nested("vec![(1, 2)]").is_none());
        let deep = format!("{}1{}", "(".repeat(3000), ")".repeat(3000));
        assert!(too_deeply_nested(&deep).unwrap().contains("3000 levels"));
    }

    #[test]
    fn open_function_is_incomplete() {
        assert_eq!(
            is_complete("fn f() {"),
            Completeness::Incomplete("    ".into())
        );
    }

    #[test]
    fn statement_is_complete() {
        assert_eq!(is_complete("let x = 5;"), Completeness::Complete);
        assert_eq!(is_complete("let x = 5"), Completeness::Complete);
        assert_eq!(is_complete(":dep rand\nlet x = 5;"), Completeness::Complete);
        assert_eq!(
            is_complete("fn f<'a>(x: &'a str) -> char { 'x' }"),
            Completeness::Complete
        );
    }

    #[test]
    fn broken_statement_is_invalid() {
        assert_eq!(is_complete("let = ;"), Completeness::Invalid);
        assert_eq!(is_complete("let x = 5; }"), Completeness::Invalid);
    }

    #[test]
    fn open_strings_and_comments_are_incomplete() {
        assert!(matches!(
            is_complete("let s = \"abc"),
            Completeness::Incomplete(_)
        ));
        assert!(matches!(
            is_complete("let s = r#\"a\"b"),
            Completeness::Incomplete(_)
        ));
        assert!(matches!(
            is_complete("/* note"),
            Completeness::Incomplete(_)
        ));
        assert!(matches!(
            is_complete("let x = 1 +"),
            Completeness::Incomplete(_)
        ));
        assert_eq!(is_complete("let s = \"{\";"), Completeness::Complete);
        assert_eq!(
            is_complete("let s = r#\"}\"#; /* ( */ let c = '{'; // ["),
            Completeness::Complete
        );
        assert!(matches!(
            is_complete("let s = br\"abc"),
            Completeness::Incomplete(_)
        ));
        assert_eq!(
            is_complete("/* a /* nested */ comment */ let x = (1, [2]);"),
            Completeness::Complete
        );
        assert!(matches!(
            is_complete("/* a /* nested */ comment"),
            Completeness::Incomplete(_)
        ));
    }

    #[test]
    fn a_bracket_closed_by_another_kind_is_invalid() {
        assert_eq!(is_complete("let v = vec![1, 2);"), Completeness::Invalid);
        assert_eq!(
            is_complete("fn f() {\n    let v = [(1, 2];"),
            Completeness::Invalid
        );
    }

    #[test]
    fn question_marks_around_a_path_ask_for_help() {
        assert_eq!(help_target("?Vec::push"), Some("Vec::push"));
        assert_eq!(help_target("model.forward?"), Some("model.forward"));
        assert_eq!(help_target("x?;"), None);
        assert_eq!(help_target("let y = x?"), None);
    }

    #[test]
    fn offsets_convert_between_code_points_and_bytes() {
        let text = "let é = \"日本\"; é.";
        assert_eq!(code_point_to_byte(text, 5), 6);
        assert_eq!(byte_to_code_point(text, 6), 5);
        assert_eq!(code_point_to_byte(text, 100), text.len());
        let n = text.chars().count();
        assert_eq!(byte_to_code_point(text, text.len()), n);
    }
}
