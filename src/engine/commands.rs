//! tchbook's own `:` commands, rewritten into code evcxr runs (`:timeit`), answered as tables
//! (`:help`, `:vars`), or followed by the prelude (`:fmt`, `:types`). Cells are read by
//! `crate::commands`.

use crate::commands::{Cell, Command};

/// evcxr's output format for a cell's final value, as far as the prelude's `PlainDisplay`
/// (std values) must follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PlainFormat {
    /// `:fmt`'s argument.
    pub(super) format: String,
    /// `:types` on.
    types: bool,
}

impl Default for PlainFormat {
    fn default() -> Self {
        PlainFormat {
            format: "{:?}".to_owned(),
            types: false,
        }
    }
}

impl PlainFormat {
    /// The format after a cell's `:fmt` and `:types` commands, read as evcxr reads them.
    pub(super) fn after<'a>(&self, commands: impl IntoIterator<Item = Command<'a>>) -> PlainFormat {
        let mut format = self.clone();
        for command in commands {
            match command {
                Command::Fmt(rest) => {
                    format.format = if rest.is_empty() { "{:?}" } else { rest }.to_owned();
                }
                Command::Types => format.types = !format.types,
                _ => {}
            }
        }
        format
    }

    /// Whether the prelude can show std values this way (`{:?}` and `{:#?}`).
    pub(super) fn followed(&self) -> bool {
        self.format == "{:?}" || self.format == "{:#?}"
    }

    pub(super) fn prelude_call(&self) -> String {
        format!(
            "tchbook_prelude::display::set_plain_format({}, {});",
            self.format == "{:#?}",
            self.types
        )
    }
}

/// tchbook's own `:` commands, handled by rewriting them into code evcxr runs, and the
/// commands evcxr runs itself that the engine follows after the cell.
pub(super) struct Rewritten<'a> {
    pub(super) code: String,
    /// A cell that is only `:help` or `:vars`: its answer becomes a [`CommandTable`].
    pub(super) listing: Option<Listing>,
    /// The cell's commands, read once.
    pub(super) commands: Vec<Command<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listing {
    Help,
    Vars,
}

/// A table for the front end to lay out (`:help`, `:vars`): plain values, rendered by
/// `display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandTable {
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    /// A paragraph shown under the table.
    pub(crate) note: Option<String>,
}

/// The commands tchbook adds to evcxr's, for `:help`.
const OWN_COMMANDS: &[(&str, &str)] = &[(
    ":timeit",
    "Time an expression like IPython's %timeit: `:timeit [-n LOOPS] [-r RUNS] EXPR` \
         (the rest of the cell). Compilation is not timed.",
)];

/// Said under `:help`'s table: what happens to processes a cell starts.
const PROCESSES_NOTE: &str = "Processes a cell starts end with the kernel: at shutdown, restart, \
    or when the evaluation process dies. To keep one running on purpose, start it in a session \
    of its own: `Command::new(\"setsid\").args([\"-f\", \"server\"]).spawn()`, or call \
    `.process_group(0)` (std::os::unix::process::CommandExt) on its Command.";

pub(super) fn rewrite_commands(code: &str) -> Rewritten<'_> {
    let cell = Cell::parse(code);
    if let Some(expression) = cell.timeit {
        return Rewritten {
            code: timeit_code(expression),
            listing: None,
            commands: Vec::new(),
        };
    }
    let listing = match cell.only_command() {
        Some(Command::Help) => Some(Listing::Help),
        Some(Command::Vars) => Some(Listing::Vars),
        _ => None,
    };
    Rewritten {
        code: code.to_owned(),
        listing,
        commands: cell.commands().collect(),
    }
}

impl CommandTable {
    /// `:help`'s rows: evcxr's commands (its text lists `name  description` a line each) and
    /// tchbook's own, by name.
    pub(super) fn help(evcxr_text: &str) -> CommandTable {
        let mut rows: Vec<Vec<String>> = evcxr_text
            .lines()
            .filter_map(|line| line.split_once(char::is_whitespace))
            .map(|(name, description)| vec![name.to_owned(), description.trim().to_owned()])
            .chain(
                OWN_COMMANDS
                    .iter()
                    .map(|(name, description)| vec![(*name).to_owned(), (*description).to_owned()]),
            )
            .collect();
        rows.sort();
        CommandTable {
            header: vec!["Command".into(), "Description".into()],
            rows,
            note: Some(PROCESSES_NOTE.to_owned()),
        }
    }

    /// `:vars`: the notebook's variables and their types, by name.
    pub(super) fn variables<'a>(
        variables: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> CommandTable {
        let mut rows: Vec<Vec<String>> = variables
            .map(|(name, ty)| vec![name.to_owned(), ty.to_owned()])
            .collect();
        rows.sort();
        CommandTable {
            header: vec!["Variable".into(), "Type".into()],
            rows,
            note: None,
        }
    }
}

/// `:timeit [-n N] [-r R] EXPR` as a block: one untimed warm-up run picks the loop count so a
/// run takes about 0.2 s (as %timeit does), then R runs are timed and summarised.
pub(crate) fn timeit_code(args: &str) -> String {
    let mut rest = args.trim();
    let mut loops = "0".to_owned();
    let mut runs = "7".to_owned();
    loop {
        let (flag, target) = if let Some(r) = rest.strip_prefix("-n") {
            (r, &mut loops)
        } else if let Some(r) = rest.strip_prefix("-r") {
            (r, &mut runs)
        } else {
            break;
        };
        let r = flag.trim_start();
        let digits: String = r.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        *target = digits.clone();
        rest = r[digits.len()..].trim_start();
    }
    let expr = rest.trim().trim_end_matches(';');
    format!(
        r#"{{
    fn tchbook_format_seconds(s: f64) -> String {{
        if s >= 1.0 {{ format!("{{:.3}} s", s) }}
        else if s >= 1e-3 {{ format!("{{:.3}} ms", s * 1e3) }}
        else if s >= 1e-6 {{ format!("{{:.3}} µs", s * 1e6) }}
        else {{ format!("{{:.1}} ns", s * 1e9) }}
    }}
    let tchbook_start = std::time::Instant::now();
    std::hint::black_box({{ {expr} }});
    let tchbook_first = tchbook_start.elapsed().as_secs_f64();
    let mut tchbook_loops: u64 = {loops};
    if tchbook_loops == 0 {{
        tchbook_loops = 1;
        while tchbook_first * (tchbook_loops as f64) < 0.2 && tchbook_loops < 1_000_000_000 {{
            tchbook_loops *= 10;
        }}
    }}
    let tchbook_runs: u64 = ({runs} as u64).max(1);
    let mut tchbook_times = Vec::new();
    for _ in 0..tchbook_runs {{
        let start = std::time::Instant::now();
        for _ in 0..tchbook_loops {{
            std::hint::black_box({{ {expr} }});
        }}
        tchbook_times.push(start.elapsed().as_secs_f64() / tchbook_loops as f64);
    }}
    let mean = tchbook_times.iter().sum::<f64>() / tchbook_times.len() as f64;
    let var = tchbook_times.iter().map(|t| (t - mean) * (t - mean)).sum::<f64>()
        / tchbook_times.len() as f64;
    println!(
        "{{}} ± {{}} per loop (mean ± std. dev. of {{}} run{{}}, {{}} loop{{}} each)",
        tchbook_format_seconds(mean),
        tchbook_format_seconds(var.sqrt()),
        tchbook_runs,
        if tchbook_runs == 1 {{ "" }} else {{ "s" }},
        tchbook_loops,
        if tchbook_loops == 1 {{ "" }} else {{ "s" }},
    );
}};"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_commands_are_followed_as_evcxr_reads_them() {
        let cell = Cell::parse(":fmt {:#?}\nlet fmt = 1;\n:types\n:fmtx {}");
        let pretty = PlainFormat::default().after(cell.commands());
        assert_eq!(
            pretty,
            PlainFormat {
                format: "{:#?}".to_owned(),
                types: true,
            }
        );
        assert_eq!(pretty.after(Cell::parse(":fmt").commands()).format, "{:?}");
        assert_eq!(
            pretty.prelude_call(),
            "tchbook_prelude::display::set_plain_format(true, true);"
        );
        assert!(pretty.followed());
        let display = PlainFormat {
            format: "{}".to_owned(),
            types: false,
        };
        assert!(!display.followed());
    }

    #[test]
    fn timeit_reads_loop_and_run_counts() {
        let code = timeit_code(" -n 5 -r 3 x + 1");
        assert!(code.contains("let mut tchbook_loops: u64 = 5;"));
        assert!(code.contains("(3 as u64)"));
        assert!(code.contains("{ x + 1 }"));
    }
}
