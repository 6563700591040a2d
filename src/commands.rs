//! The `:` command language of cells (evcxr's commands and tchbook's `:timeit`): which lines are
//! commands and what each asks. The one reader of it: the engine rewrites and follows commands
//! with it, `tchbook export` translates them, and `syntax` takes a command line as complete.
//!
//! A command is a line whose first non-blank character is `:` (but `::`, the start of a Rust
//! path): its name is the first word, its argument the rest of the line, trimmed. `:timeit` at
//! the start of a cell takes the rest of the cell as its expression, as IPython's `%timeit` in a
//! cell of its own does.

/// One command line, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command<'a> {
    /// `:dep NAME = SPEC` or `:dep NAME`: the argument, unparsed (export reads it as TOML).
    Dep(&'a str),
    /// `:fmt FORMAT` (empty: back to `{:?}`).
    Fmt(&'a str),
    /// `:types`: toggles showing a value's type.
    Types,
    /// `:timing`: toggles printing each cell's time.
    Timing,
    /// `:help`.
    Help,
    /// `:vars`.
    Vars,
    /// `:timeit EXPR` on one line (a cell that starts with it is [`Cell::timeit`]).
    Timeit(&'a str),
    /// Any other: evcxr's own (`:clear`, `:restart`, `:opt`, …) or one nobody knows, which evcxr
    /// answers.
    Other { name: &'a str, argument: &'a str },
}

impl Command<'_> {
    /// The command's name as typed, with its colon.
    pub(crate) fn name(&self) -> &str {
        match self {
            Command::Dep(_) => ":dep",
            Command::Fmt(_) => ":fmt",
            Command::Types => ":types",
            Command::Timing => ":timing",
            Command::Help => ":help",
            Command::Vars => ":vars",
            Command::Timeit(_) => ":timeit",
            Command::Other { name, .. } => name,
        }
    }
}

/// A line's command, or `None` for a line of Rust.
pub(crate) fn command(line: &str) -> Option<Command<'_>> {
    let line = line.trim();
    if !line.starts_with(':') || line.starts_with("::") {
        return None;
    }
    let name = line.split_whitespace().next().unwrap_or(line);
    let argument = line[name.len()..].trim();
    Some(match name {
        ":dep" => Command::Dep(argument),
        ":fmt" => Command::Fmt(argument),
        ":types" => Command::Types,
        ":timing" => Command::Timing,
        ":help" => Command::Help,
        ":vars" => Command::Vars,
        ":timeit" => Command::Timeit(argument),
        _ => Command::Other { name, argument },
    })
}

/// One line of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    Rust(&'a str),
    /// A command, with the line it was read from (trimmed).
    Command(Command<'a>, &'a str),
}

/// A cell read once, for everyone who needs its commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell<'a> {
    /// `:timeit`'s expression when the cell starts with it: the rest of the cell, which then
    /// has no other lines.
    pub(crate) timeit: Option<&'a str>,
    pub(crate) lines: Vec<Line<'a>>,
}

impl<'a> Cell<'a> {
    pub(crate) fn parse(source: &'a str) -> Cell<'a> {
        let start = source.trim_start();
        if let Some(Command::Timeit(_)) = start.lines().next().and_then(command) {
            let expression = start[":timeit".len()..].trim();
            return Cell {
                timeit: Some(expression),
                lines: Vec::new(),
            };
        }
        let lines = source
            .lines()
            .map(|line| match command(line) {
                Some(command) => Line::Command(command, line.trim()),
                None => Line::Rust(line),
            })
            .collect();
        Cell {
            timeit: None,
            lines,
        }
    }

    /// The commands, in order.
    pub(crate) fn commands(&self) -> impl Iterator<Item = Command<'a>> + '_ {
        self.lines.iter().filter_map(|line| match line {
            Line::Command(command, _) => Some(*command),
            Line::Rust(_) => None,
        })
    }

    /// The command a cell holds alone (blank lines aside), as `:help` and `:vars` are asked.
    pub(crate) fn only_command(&self) -> Option<Command<'a>> {
        let mut lines = self.lines.iter().filter(|line| match line {
            Line::Rust(text) => !text.trim().is_empty(),
            Line::Command(..) => true,
        });
        match (lines.next(), lines.next()) {
            (Some(Line::Command(command, _)), None) => Some(*command),
            _ => None,
        }
    }

    /// The cell's Rust, without its command lines.
    pub(crate) fn rust(&self) -> String {
        let mut rust = String::new();
        for line in &self.lines {
            if let Line::Rust(text) = line {
                rust.push_str(text);
                rust.push('\n');
            }
        }
        rust
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_read_by_name_and_argument() {
        assert_eq!(command(":fmt {:#?}"), Some(Command::Fmt("{:#?}")));
        assert_eq!(command("  :fmt"), Some(Command::Fmt("")));
        assert_eq!(command(":types"), Some(Command::Types));
        assert_eq!(
            command(":fmtx 1"),
            Some(Command::Other {
                name: ":fmtx",
                argument: "1"
            })
        );
        assert_eq!(
            command(":dep rand = \"0.8\""),
            Some(Command::Dep("rand = \"0.8\""))
        );
        assert_eq!(command("let fmt = 1;"), None);
        // A Rust path is not a command.
        assert_eq!(command("::std::mem::drop(x);"), None);
    }

    #[test]
    fn a_cell_is_read_once_into_its_commands_and_its_rust() {
        let cell = Cell::parse(":dep rand\nlet x = 1;\n  :types\n::std::mem::drop(x);");
        assert_eq!(cell.timeit, None);
        assert_eq!(
            cell.commands().collect::<Vec<_>>(),
            [Command::Dep("rand"), Command::Types]
        );
        assert_eq!(cell.rust(), "let x = 1;\n::std::mem::drop(x);\n");
        assert_eq!(cell.only_command(), None);
        assert_eq!(
            Cell::parse("\n :vars \n").only_command(),
            Some(Command::Vars)
        );
        let timeit = Cell::parse("  :timeit -n 3\n  x + 1");
        assert_eq!(timeit.timeit, Some("-n 3\n  x + 1"));
        assert!(timeit.lines.is_empty());
    }
}
