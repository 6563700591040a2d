//! The statements evcxr writes into a cell for the kernel.
//!
//! Every line a cell's generated code prints for evcxr to read carries the kernel's line key
//! (`tchbook_wire::keyed`), so that text a cell prints is never read as a command; a cell cannot
//! name `tchbook_wire`, so the code reads the key from the environment itself ([`keyed_code`]).

use tchbook_wire::{MARK, PANIC_NOTIFICATION, env::LINE_KEY};

/// Rust code for a `String` holding `line` (Rust code for a `&str`) keyed as
/// `tchbook_wire::keyed` keys it: unchanged where the key's variable is unset or empty.
pub fn keyed_code(line: &str) -> String {
    format!(
        "::std::env::var({LINE_KEY:?}).ok().filter(|k| !k.is_empty()).map_or_else(\
         || ::std::string::String::from({line}), \
         |k| ::std::format!(\"{{}}{{}} {{}}\", {MARK:?}, k, {line}))",
    )
}

/// The statement that tells evcxr a cell panicked (where the cell is not run through the
/// compiled runner, which prints it itself).
pub fn panic_notification_line() -> String {
    format!(
        "    println!(\"{{}}\", {});",
        keyed_code(&format!("{PANIC_NOTIFICATION:?}"))
    )
}

/// The end of a cell not run through the compiled runner: what it printed without a newline is
/// still in its stdout's buffer (the cell's own libstd, not the evaluation process's, which ends
/// the cell); flushed here, it reaches the kernel before the cell's end instead of with the next
/// cell.
pub const FLUSH_STDOUT: &str = "{ use std::io::Write as _; let _ = std::io::stdout().flush(); }";

/// evcxr's definition of `evcxr_send_text_plain` (`evcxrs`: how a final value without an
/// `evcxr_display` sends its text), with the two lines of its block keyed. A definition that does
/// not write them as evcxr 0.22's does (a later evcxr's) gives [`send_text_plain_def`], which
/// does the same with its own code.
pub fn keyed_send_text_plain(evcxrs: &str) -> String {
    const BEGIN: &str = r#"b"EVCXR_BEGIN_CONTENT text/plain\n""#;
    const END: &str = r#"b"\nEVCXR_END_CONTENT\n""#;
    if evcxrs.matches(BEGIN).count() != 1 || evcxrs.matches(END).count() != 1 {
        return send_text_plain_def();
    }
    let begin = keyed_code("\"EVCXR_BEGIN_CONTENT text/plain\"");
    let end = keyed_code("\"EVCXR_END_CONTENT\"");
    evcxrs
        .replace(
            BEGIN,
            &format!("::std::format!(\"{{}}\\n\", {begin}).as_bytes()"),
        )
        .replace(
            END,
            &format!("::std::format!(\"\\n{{}}\\n\", {end}).as_bytes()"),
        )
}

/// evcxr's `evcxr_send_text_plain` with its two block lines keyed, written here.
pub fn send_text_plain_def() -> String {
    format!(
        r#"fn evcxr_send_text_plain(text: &str) {{
            use std::io::Write;
            let block = format!("{{}}\n{{}}\n{{}}\n", {}, text, {});
            let mut output = std::io::stdout().lock();
            if let Err(error) = output.write_all(block.as_bytes()).and_then(|_| output.flush()) {{
                eprintln!("Failed to send content to parent: {{:?}}", error);
                std::process::exit(1);
            }}
        }}"#,
        keyed_code("\"EVCXR_BEGIN_CONTENT text/plain\""),
        keyed_code("\"EVCXR_END_CONTENT\""),
    )
}

/// The code before and after a cell's statements that runs them through the compiled runner
/// `function` ([`crate::Hooks::cell_runner`]). Without a variable store the runner's answer is
/// dropped; with one, `after` opens the branch taken on a panic, which the caller fills with
/// [`restore_statement`]s and closes with `}`.
pub fn run_through(function: &str, with_store: bool) -> (String, &'static str) {
    if with_store {
        (
            format!("if {function}(::std::boxed::Box::new(||{{"),
            "})) {",
        )
    } else {
        (format!("{function}(::std::boxed::Box::new(||{{"), "}));")
    }
}

/// The body of a cell's `evcxr_internal_runtime` module: the store compiled once in `compiled`
/// ([`compiled_store_module`]) where there is one, else the store's code itself
/// (`store.rs`: evcxr's, with the kernel's additions).
pub fn store_module(compiled: Option<&str>) -> String {
    compiled.map_or_else(|| STORE.to_owned(), compiled_store_module)
}

/// The variable store written into a cell without the prelude (`store.rs`).
const STORE: &str = include_str!("store.rs");

/// The body of a cell's `evcxr_internal_runtime` module where the store is compiled once in
/// `module` ([`crate::Hooks::compiled_store`]): its names, and the cell's own
/// `tchbook_variables` (the evaluation process looks it up in each cell's library; a cell
/// without a store defines none, so the last one found stays the store's).
pub fn compiled_store_module(module: &str) -> String {
    format!(
        "pub use {module}::*;\n\
         #[allow(dead_code)] #[unsafe(no_mangle)]\n\
         pub extern \"C\" fn tchbook_variables(\n  \
         store: *const VariableStore, visit: Visit, context: *mut ::std::ffi::c_void) {{\n  \
         unsafe {{ walk_variables(store, visit, context) }}\n\
         }}"
    )
}

/// Puts back, in a panicking cell, the old value of `name` (a variable the cell declared again
/// without otherwise naming it, so the cell's function still holds the old value).
pub fn restore_statement(name: &str, type_name: &str) -> String {
    format!("evcxr_variable_store.put_variable::<{type_name}>(stringify!({name}), {name});")
}

/// Drops `name`'s value from the store (its type was defined again: the drop code is the old
/// type's, in the cell that made it) and says so, as evcxr's store does when it finds a type
/// changed.
pub fn forget_statement(name: &str) -> String {
    format!(
        "evcxr_variable_store.forget_variable(stringify!({name})); \
         eprintln!(\"The type of the variable {name} was redefined, so was lost.\");"
    )
}

/// The code a hover at the end of `code` (the cell's text up to the cursor) analyses, and the
/// hover's offset in it. A method called as `None.ok_or_else` shows nothing unless the code
/// ends with `(`, which is then closed.
pub fn hover_code(code: &str) -> (String, usize) {
    if code == "let" {
        (String::from("let _ = 1;"), 0)
    } else if code.ends_with('(') {
        (format!("{code});"), code.len() - 1)
    } else {
        (format!("{code};"), code.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_code_reads_the_wire_key_and_mark() {
        let code = keyed_code("\"EVCXR_END_CONTENT\"");
        assert!(code.contains(&format!("::std::env::var({LINE_KEY:?})")));
        assert!(code.contains("'\\u{1e}'"), "{code}");
        assert!(code.contains("String::from(\"EVCXR_END_CONTENT\")"));
    }

    #[test]
    fn protocol_lines_name_the_wire_constants() {
        assert!(panic_notification_line().contains("\"EVCXR_PANIC_NOTIFICATION\""));
        assert!(panic_notification_line().starts_with("    println!("));
    }

    #[test]
    fn a_cell_without_the_prelude_gets_the_whole_store() {
        assert_eq!(store_module(None), STORE);
        assert!(STORE.contains("pub extern \"C\" fn tchbook_variables("));
        assert_eq!(
            store_module(Some("::p::runtime::variables")),
            compiled_store_module("::p::runtime::variables")
        );
    }

    #[test]
    fn send_text_plain_keys_both_block_lines() {
        let def = send_text_plain_def();
        assert!(def.starts_with("fn evcxr_send_text_plain(text: &str) {"));
        assert_eq!(def.matches(LINE_KEY).count(), 2);
        assert!(def.contains("\"EVCXR_BEGIN_CONTENT text/plain\""));
        assert!(def.contains("\"EVCXR_END_CONTENT\""));
    }

    /// evcxr 0.22's `SEND_TEXT_PLAIN_DEF`, token for token.
    const EVCXRS_SEND_TEXT_PLAIN: &str = stringify!(
        fn evcxr_send_text_plain(text: &str) {
            use std::io::Write;
            use std::io::{self};
            fn try_send_text(text: &str) -> io::Result<()> {
                let stdout = io::stdout();
                let mut output = stdout.lock();
                output.write_all(b"EVCXR_BEGIN_CONTENT text/plain\n")?;
                output.write_all(text.as_bytes())?;
                output.write_all(b"\nEVCXR_END_CONTENT\n")?;
                Ok(())
            }
            if let Err(error) = try_send_text(text) {
                eprintln!("Failed to send content to parent: {:?}", error);
                std::process::exit(1);
            }
        }
    );

    #[test]
    fn evcxrs_send_text_plain_gets_both_block_lines_keyed() {
        let keyed = keyed_send_text_plain(EVCXRS_SEND_TEXT_PLAIN);
        assert!(!keyed.contains("b\"EVCXR_"));
        assert_eq!(keyed.matches(LINE_KEY).count(), 2);
        let begin = keyed_code("\"EVCXR_BEGIN_CONTENT text/plain\"");
        let end = keyed_code("\"EVCXR_END_CONTENT\"");
        assert!(keyed.contains(&format!(
            "write_all(::std::format!(\"{{}}\\n\", {begin}).as_bytes())?"
        )));
        assert!(keyed.contains(&format!(
            "write_all(::std::format!(\"\\n{{}}\\n\", {end}).as_bytes())?"
        )));
        assert!(keyed.contains("write_all(text.as_bytes())?"));
        // A definition written otherwise gets the project's own, keyed as well.
        assert_eq!(
            keyed_send_text_plain("fn evcxr_send_text_plain(text: &str) {}"),
            send_text_plain_def()
        );
    }

    #[test]
    fn the_runner_call_branches_only_with_a_store() {
        assert_eq!(
            run_through("::p::run_cell", true),
            (
                "if ::p::run_cell(::std::boxed::Box::new(||{".to_owned(),
                "})) {"
            )
        );
        assert_eq!(
            run_through("::p::run_cell", false),
            (
                "::p::run_cell(::std::boxed::Box::new(||{".to_owned(),
                "}));"
            )
        );
    }

    #[test]
    fn the_compiled_store_module_reexports_and_walks() {
        let module = compiled_store_module("::p::runtime::variables");
        let lines: Vec<&str> = module.lines().collect();
        assert_eq!(lines[0], "pub use ::p::runtime::variables::*;");
        assert_eq!(lines.len(), 6);
        assert!(module.contains("walk_variables(store, visit, context)"));
    }

    #[test]
    fn restore_and_forget_name_the_variable() {
        assert_eq!(
            restore_statement("x", "Vec<i32>"),
            "evcxr_variable_store.put_variable::<Vec<i32>>(stringify!(x), x);"
        );
        let forget = forget_statement("net");
        assert!(forget.starts_with("evcxr_variable_store.forget_variable(stringify!(net));"));
        assert!(forget.contains("The type of the variable net was redefined, so was lost."));
    }

    #[test]
    fn hover_code_closes_the_statement_at_the_cursor() {
        assert_eq!(hover_code("let"), ("let _ = 1;".to_owned(), 0));
        assert_eq!(
            hover_code("None.ok_or_else("),
            ("None.ok_or_else();".to_owned(), 15)
        );
        assert_eq!(hover_code("x.len"), ("x.len;".to_owned(), 5));
    }
}
