//! What the text before the cursor asks to complete, read without a parser (the cell is often
//! half typed): a member after `name.`, an item after `path::`, or a name.

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

pub(super) fn is_ident_char(c: char) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
