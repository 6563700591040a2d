//! Interrupt points in a cell's own code, so that the stop button ends a plain `loop`, `while`
//! or `for` of the cell (or of a function or closure an earlier cell defined), or a
//! `std::thread::sleep` in it, with `KeyboardInterrupt` and every variable kept, as the
//! prelude's own loops already end.
//!
//! A SIGINT only sets a flag (`tchbook_prelude::interrupt`): Rust cannot unwind out of a signal
//! handler, so the cell must look at the flag itself. The kernel therefore puts
//! [`tchbook_wire::INTERRUPT_POINT`] (an inlined load of the flag and a branch, a panic only when
//! it is set) right after the `{` of every loop body and after the `;` of every statement in the
//! cell's code before evcxr sees it. After a statement, it ends the cell once a wait the
//! interrupt cut short has returned (a sleep: `crate::sleep`). Items keep their checks when later
//! cells call them, since they are compiled from this text.
//!
//! A check goes on the line of the `{` or `;` it follows, so every line keeps its number: a
//! panic at the check (`#[track_caller]`) is reported on that line, and
//! [`Inserted::user_column`] takes a compiler error's columns back to what the user typed. Code
//! whose checks would not compile is left without them: const contexts (a `const fn`, a `const`
//! or `static` initializer, an array length, an enum discriminant, a const generic argument),
//! and text rust-analyzer's parser cannot read (evcxr then reports the syntax error on the
//! user's own text). No check follows a statement that never ends (`return`, `break`,
//! `panic!`, an endless `loop`). Code inside macro invocations is a token tree to the parser and
//! gets no check; the prelude's loops, tch's and other crates' code are compiled elsewhere and
//! check where they do (the DataLoader, progress bars).

use ra_ap_syntax::ast::{self, HasLoopBody};
use ra_ap_syntax::{AstNode, Edition, SourceFile, SyntaxNode, SyntaxToken};
use tchbook_wire::INTERRUPT_POINT;

/// What a cell is wrapped in to parse it as a function body, as evcxr reads a cell.
const PREFIX: &str = "fn tchbook_cell() {\n";

/// A cell's code with its interrupt points, and where they went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inserted {
    pub(crate) code: String,
    /// Each check's place in the user's text: 1-based line, and the 1-based column (in
    /// characters) of the character it was put before.
    points: Vec<(usize, usize)>,
}

impl Inserted {
    /// Whether any check was inserted.
    pub(crate) fn any(&self) -> bool {
        !self.points.is_empty()
    }

    /// A column of `line` in the code with checks, as a column of the user's own text: the
    /// checks before it on that line taken away. A column inside a check is the column the
    /// check stands at.
    pub(crate) fn user_column(&self, line: usize, column: usize) -> usize {
        self.locate(line, column).unwrap_or_else(|at| at)
    }

    /// Whether a span (1-based line and column in the code with checks) lies in a check.
    pub(crate) fn in_a_point(&self, line: usize, column: usize) -> bool {
        self.locate(line, column).is_err()
    }

    /// The user's column for a column of the code with checks, or `Err` with the column of the
    /// check it lies in.
    fn locate(&self, line: usize, column: usize) -> Result<usize, usize> {
        let width = INTERRUPT_POINT.chars().count();
        let mut shift = 0;
        for &(_, at) in self.points.iter().filter(|(l, _)| *l == line) {
            let start = at + shift;
            if column < start {
                break;
            }
            if column < start + width {
                return Err(at);
            }
            shift += width;
        }
        Ok(column - shift)
    }
}

/// `code` with an interrupt check after the `{` of each loop body it can take one in. Lines
/// that are `:` commands are left as they are (blanked for the parse, which would not read
/// them).
pub(crate) fn insert(code: &str) -> Inserted {
    let unchanged = || Inserted {
        code: code.to_owned(),
        points: Vec::new(),
    };
    if crate::syntax::too_deeply_nested(code).is_some() {
        return unchanged();
    }
    let rust = blank_commands(code);
    let wrapped = format!("{PREFIX}{rust}\n}}");
    let parsed = SourceFile::parse(&wrapped, Edition::Edition2024);
    if !parsed.errors().is_empty() {
        return unchanged();
    }
    // One walk: the `{` of each loop body and the `;` of each statement a check may follow.
    let mut offsets: Vec<usize> = parsed
        .tree()
        .syntax()
        .descendants()
        .filter_map(|node| {
            let token = match ast::Stmt::cast(node.clone()) {
                Some(statement) if ends_a_loop_body(&statement) => return None,
                Some(statement) => statement_end(statement)?,
                None => loop_body(node.clone())?.stmt_list()?.l_curly_token()?,
            };
            (!in_const_context(&node)).then_some(token)
        })
        .map(|token| usize::from(token.text_range().end()) - PREFIX.len())
        .collect();
    if offsets.is_empty() {
        return unchanged();
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut out = String::with_capacity(code.len() + offsets.len() * INTERRUPT_POINT.len());
    let mut points = Vec::with_capacity(offsets.len());
    let mut from = 0;
    for offset in offsets {
        out.push_str(&code[from..offset]);
        let before = &code[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        points.push((line, code[line_start..offset].chars().count() + 1));
        out.push_str(INTERRUPT_POINT);
        from = offset;
    }
    out.push_str(&code[from..]);
    Inserted { code: out, points }
}

/// The `;` that ends a statement a check can follow: a `let`, or an expression statement that
/// returns (a check after `return`, `break`, `panic!` or an endless `loop` would never run, and
/// rustc would warn that it cannot).
fn statement_end(statement: ast::Stmt) -> Option<SyntaxToken> {
    match statement {
        ast::Stmt::LetStmt(l) => l.semicolon_token(),
        ast::Stmt::ExprStmt(e) => {
            let diverges = match e.expr()? {
                ast::Expr::ReturnExpr(_)
                | ast::Expr::BreakExpr(_)
                | ast::Expr::ContinueExpr(_)
                | ast::Expr::BecomeExpr(_)
                | ast::Expr::LoopExpr(_) => true,
                ast::Expr::MacroExpr(m) => m
                    .macro_call()
                    .and_then(|call| call.path())
                    .and_then(|path| path.segment())
                    .is_some_and(|name| {
                        matches!(
                            name.to_string().as_str(),
                            "panic" | "unreachable" | "todo" | "unimplemented" | "bail"
                        )
                    }),
                _ => false,
            };
            if diverges { None } else { e.semicolon_token() }
        }
        ast::Stmt::Item(_) => None,
    }
}

/// Whether `statement` is the last of a loop body that has no tail expression: the loop's own
/// check comes next, and a second check per round cost a tight integer loop 15 % at opt-level 0
/// (`bench/interrupt_checks.py`).
fn ends_a_loop_body(statement: &ast::Stmt) -> bool {
    let Some(list) = statement.syntax().parent().and_then(ast::StmtList::cast) else {
        return false;
    };
    let in_a_loop = list
        .syntax()
        .parent()
        .and_then(|block| block.parent())
        .and_then(loop_body)
        .is_some_and(|body| body.stmt_list().as_ref() == Some(&list));
    in_a_loop && list.tail_expr().is_none() && list.statements().last().as_ref() == Some(statement)
}

/// The body of a `loop`, `while` or `for`.
fn loop_body(node: SyntaxNode) -> Option<ast::BlockExpr> {
    if let Some(l) = ast::LoopExpr::cast(node.clone()) {
        return l.loop_body();
    }
    if let Some(w) = ast::WhileExpr::cast(node.clone()) {
        return w.loop_body();
    }
    ast::ForExpr::cast(node)?.loop_body()
}

/// Whether code at `node` is evaluated at compile time, where a call to the (non-`const`)
/// check does not compile.
fn in_const_context(node: &SyntaxNode) -> bool {
    let mut child = node.clone();
    for ancestor in node.ancestors().skip(1) {
        let constant = if let Some(function) = ast::Fn::cast(ancestor.clone()) {
            function.const_token().is_some()
        } else if let Some(block) = ast::BlockExpr::cast(ancestor.clone()) {
            block.const_token().is_some()
        } else if let Some(array) = ast::ArrayExpr::cast(ancestor.clone()) {
            // `[value; length]`: the length is the expression after the `;`.
            array
                .semicolon_token()
                .is_some_and(|semicolon| child.text_range().start() >= semicolon.text_range().end())
        } else {
            ast::Const::can_cast(ancestor.kind())
                || ast::Static::can_cast(ancestor.kind())
                || ast::ConstArg::can_cast(ancestor.kind())
                || ast::ConstParam::can_cast(ancestor.kind())
                || ast::Variant::can_cast(ancestor.kind())
        };
        if constant {
            return true;
        }
        child = ancestor;
    }
    false
}

/// `code` with each `:` command line turned into spaces, so that offsets stay the same.
fn blank_commands(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    for line in code.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        if crate::commands::command(text).is_some() {
            out.push_str(&" ".repeat(text.len()));
            out.push_str(&line[text.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_points(code: &str) -> String {
        insert(code).code.replace(INTERRUPT_POINT, "<check>")
    }

    #[test]
    fn every_loop_body_and_statement_of_the_cell_and_its_items_gets_a_check_on_its_line() {
        let code = "let mut n = 0;\nloop { n += 1; if n > 3 { break; } }\nwhile n > 0 {\n    n -= 1;\n}\n\
                    for i in 0..3 { n += i; }\nfn f() { 'a: for _ in 0..2 { let g = || { loop { break } }; g(); } }";
        assert_eq!(
            with_points(code),
            "let mut n = 0;<check>\nloop {<check> n += 1;<check> if n > 3 { break; } }\nwhile n > 0 {<check>\n    n -= 1;\n}\n\
             for i in 0..3 {<check> n += i; }\nfn f() { 'a: for _ in 0..2 {<check> let g = || { loop {<check> break } };<check> g(); } }"
        );
    }

    #[test]
    fn no_check_follows_a_statement_that_never_ends() {
        let code = "fn f(x: u8) -> u8 { if x == 0 { return 1; } if x == 1 { panic!(\"one\"); } \
                    loop { break; } x }\nstd::thread::sleep(std::time::Duration::from_secs(1));";
        assert_eq!(
            with_points(code),
            "fn f(x: u8) -> u8 { if x == 0 { return 1; } if x == 1 { panic!(\"one\"); } \
             loop {<check> break; } x }\nstd::thread::sleep(std::time::Duration::from_secs(1));<check>"
        );
    }

    #[test]
    fn const_contexts_macros_and_unreadable_cells_are_left_alone() {
        for code in [
            "const fn c() -> u32 { let mut i = 0; while i < 3 { i += 1; } i }",
            "const N: usize = { let mut i = 0; loop { i += 1; if i == 4 { break i; } } };",
            "static S: u8 = { let mut i = 0; while i < 2 { i += 1; } i };",
            "enum E { A = { let mut i = 0; while i < 2 { i += 1; } i } }",
            "println!(\"{}\", { let mut s = 0; for i in 0..3 { s += i; } s })",
            "for i in 0..3 { ",
            "let s = \"for i in x { }\" // loop { }",
        ] {
            assert_eq!(insert(code).code, code, "{code}");
            assert!(!insert(code).any());
        }
        // Only the statement around them runs when the program does.
        assert_eq!(
            with_points("let a = [0u8; { let mut i = 0; while i < 2 { i += 1; } i }];"),
            "let a = [0u8; { let mut i = 0; while i < 2 { i += 1; } i }];<check>"
        );
        assert_eq!(
            with_points("let x = const { let mut i = 0; while i < 2 { i += 1; } i };"),
            "let x = const { let mut i = 0; while i < 2 { i += 1; } i };<check>"
        );
        assert_eq!(
            with_points("let a = [{ let mut i = 0; while i < 2 { i += 1; } i }; 3];"),
            "let a = [{ let mut i = 0;<check> while i < 2 {<check> i += 1; } i }; 3];<check>"
        );
    }

    #[test]
    fn command_lines_are_kept_and_do_not_stop_the_rest_being_read() {
        let code = ":dep regex = \"1\"\n:timing\nfor i in 0..3 { println!(\"{i}\"); }";
        assert_eq!(
            with_points(code),
            ":dep regex = \"1\"\n:timing\nfor i in 0..3 {<check> println!(\"{i}\"); }"
        );
    }

    #[test]
    fn columns_after_checks_are_the_users_own() {
        let code = "let v = vec![1]\n;for a in 0..2 { for b in 0..2 { v.nope(a, b) } }";
        let inserted = insert(code);
        let width = INTERRUPT_POINT.chars().count();
        let line = inserted.code.lines().nth(1).unwrap();
        let nope = line.find("nope").unwrap() + 1;
        // The `let`'s check and the two loops' stand before it on that line.
        assert_eq!(
            nope,
            code.lines().nth(1).unwrap().find("nope").unwrap() + 1 + 3 * width
        );
        assert_eq!(inserted.user_column(2, nope), nope - 3 * width);
        // Before the first check, on other lines, and inside a check.
        assert_eq!(inserted.user_column(1, 9), 9);
        assert_eq!(inserted.user_column(2, 2), 2);
        assert!(inserted.in_a_point(2, 2));
        assert!(!inserted.in_a_point(2, 1));
        assert!(!inserted.in_a_point(2, nope));
    }

    #[test]
    fn text_with_multibyte_characters_keeps_its_columns_in_characters() {
        let code = "let é = \"ü\"; for _ in 0..1 { é.len(); é.len(); }";
        let inserted = insert(code);
        let curly = code.chars().position(|c| c == '{').unwrap() + 2;
        let semicolons: Vec<usize> = code
            .char_indices()
            .filter(|(_, c)| *c == ';')
            .map(|(at, _)| code[..at].chars().count() + 2)
            .collect();
        assert_eq!(
            inserted.points,
            vec![(1, semicolons[0]), (1, curly), (1, semicolons[1])]
        );
    }
}
