//! A panic as the cell's error: its message, and the cell line it happened on or was called
//! from.

use super::{BLUE, Cause, ErrorReport, INTERRUPT, RESET, headline};
use crate::Panic;

/// The source a cell was compiled in: a panic located in `file` (a path ending so) at a line of
/// `source` is a panic in the cell, on the cell's line with the same text. The kernel's is
/// evcxr's generated crate (`src/lib.rs`), an exported program's its `src/main.rs`.
#[derive(Debug, Clone, Copy)]
pub struct Generated<'a> {
    pub file: &'a str,
    pub source: &'a str,
}

/// A panic: the message, where it happened and, when the location is in the cell, that line
/// (numbered as in the cell when the line can be found there).
///
/// A libtorch error (`Torch("...")`, what tch's panicking methods unwrap) shows what PyTorch
/// shows by default: one line of its message, the cell line and the call; the C++ frames
/// libtorch appends, and where in tch's sources the panic happened, only when the process asked
/// for them (`TORCH_SHOW_CPP_STACKTRACES=1`, [`Panic::cpp_frames`]). Out of memory names the
/// size asked for and the memory free. A panic inside a library (tch's `tensor_generated.rs`)
/// is traced back to the cell line that called the library function it happened in. An
/// interrupt never points into the prelude's sources.
pub fn panic_report(panic: &Panic, cell: &str, generated: Option<Generated>) -> ErrorReport {
    let cause = Cause::of(&panic.message);
    let ename = cause.ename();
    let evalue = cause.evalue().to_owned();
    let shown = if evalue.is_empty() {
        "interrupted"
    } else {
        &evalue
    };
    let mut traceback = vec![headline(ename, shown)];
    if !panic.location.is_empty() {
        let in_cell = cell_line(&panic.location, generated).map(|line| {
            // The cell is wrapped in generated code whose lines keep their text (but for the
            // interrupt checks put into its loops), so the cell's own line number is where that
            // text is.
            let wanted = line.trim().to_owned();
            let number = cell.lines().position(|l| l.trim() == wanted);
            (number, wanted)
        });
        match in_cell {
            Some((number, wanted)) => {
                let at = match number {
                    Some(number) => format!("  at cell line {}", number + 1),
                    None => format!("  at {}", panic.location),
                };
                traceback.push(format!("{at}\n{BLUE}   |{RESET} {wanted}"));
            }
            None => {
                let caller = enclosing_function(&panic.location)
                    .and_then(|function| calling_line(cell, &function).map(|l| (function, l)));
                let placed = caller.is_some();
                if let Some((function, (number, text))) = caller {
                    traceback.push(format!(
                        "  at cell line {number}, in `{function}`\n{BLUE}   |{RESET} {text}"
                    ));
                }
                // The prelude's interrupt check lives in the build cache: where it was
                // reached says nothing the user can act on. Nor does the line of tch's
                // generated wrapper that unwrapped libtorch's error, once the call is placed
                // in the cell (PyTorch shows no C++ location either), unless frames are asked.
                let torch = matches!(cause, Cause::Torch { .. } | Cause::OutOfMemory { .. });
                if ename != INTERRUPT && !(torch && placed && !panic.cpp_frames) {
                    traceback.push(format!("  (panicked at {})", panic.location));
                }
            }
        }
    }
    if let Some(details) = cause.details().filter(|_| panic.cpp_frames) {
        traceback.push(format!("libtorch's full report:\n{details}"));
    }
    ErrorReport {
        ename: ename.to_owned(),
        evalue,
        traceback,
    }
}

/// The source line a panic location in the cell's generated crate points at.
fn cell_line(location: &str, generated: Option<Generated>) -> Option<String> {
    let generated = generated?;
    let mut parts = location.rsplitn(3, ':');
    let _column = parts.next()?;
    let line: usize = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    if !file.ends_with(generated.file) {
        return None;
    }
    // A check that follows a statement of the cell's top level is a statement of its own, which
    // evcxr writes on a line of its own: the panic is then the statement's before it.
    let lines: Vec<&str> = generated.source.lines().take(line).collect();
    lines
        .iter()
        .rev()
        .map(|text| text.replace(crate::INTERRUPT_POINT, ""))
        .find(|text| !text.trim().is_empty())
}

/// The name of the function whose body holds `file:line:col` (a library's source on disk).
fn enclosing_function(location: &str) -> Option<String> {
    let mut parts = location.rsplitn(3, ':');
    let _column = parts.next()?;
    let line: usize = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    let text = std::fs::read_to_string(file).ok()?;
    let lines: Vec<&str> = text.lines().take(line).collect();
    lines.iter().rev().find_map(|l| {
        let rest = l.trim_start();
        let rest = rest.strip_prefix("pub ").unwrap_or(rest);
        let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
        let name: String = rest
            .strip_prefix("fn ")?
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    })
}

/// The first cell line calling `function` (`.name(` or `::name(`), 1-based, with its text.
fn calling_line(cell: &str, function: &str) -> Option<(usize, String)> {
    let method = format!(".{function}(");
    let path = format!("::{function}(");
    cell.lines()
        .position(|l| l.contains(&method) || l.contains(&path))
        .map(|index| {
            (
                index + 1,
                cell.lines().nth(index).unwrap_or("").trim().to_owned(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_an_exported_programs_cell_is_placed_on_the_cells_line() {
        let main_rs =
            "fn cells() {\n    tchbook_runner::begin(0);\nlet x = 1;\nassert!(x > 1);\n}\n";
        let panic = Panic {
            message: "assertion failed: x > 1".into(),
            location: "src/main.rs:4:1".into(),
            thread: "main".into(),
            on_main: true,
            cpp_frames: false,
        };
        let generated = Generated {
            file: "src/main.rs",
            source: main_rs,
        };
        let report = panic_report(&panic, "let x = 1;\nassert!(x > 1);", Some(generated));
        assert_eq!(report.ename, "panic");
        assert!(
            report.traceback[1].starts_with("  at cell line 2\n"),
            "{report:?}"
        );
        assert!(
            report.traceback[1].ends_with("assert!(x > 1);"),
            "{report:?}"
        );
    }

    #[test]
    fn keyboard_interrupt_panics_are_named_so() {
        let panic = Panic {
            message: "KeyboardInterrupt: interrupted by the user".into(),
            location: "src/lib.rs:3:5".into(),
            thread: "<unnamed>".into(),
            on_main: true,
            cpp_frames: false,
        };
        let report = panic_report(
            &panic,
            "let x = 1;\nloop_body();",
            Some(Generated {
                file: "src/lib.rs",
                source: "a\nb\n    loop_body();\n",
            }),
        );
        assert_eq!(report.ename, "KeyboardInterrupt");
        assert_eq!(report.evalue, "interrupted by the user");
        assert!(report.traceback[1].contains("at cell line 2"), "{report:?}");
        assert!(report.traceback[1].contains("loop_body();"));
    }

    #[test]
    fn an_interrupt_at_a_loops_check_is_placed_on_the_loops_line_as_typed() {
        let panic = Panic {
            message: "KeyboardInterrupt: interrupted by the user".into(),
            location: "src/lib.rs:2:20".into(),
            thread: "<unnamed>".into(),
            on_main: true,
            cpp_frames: false,
        };
        let generated = format!("a\n    for i in 0..n {{{}\n", crate::INTERRUPT_POINT);
        let report = panic_report(
            &panic,
            "let n = 10;\nfor i in 0..n {\n    work(i);\n}",
            Some(Generated {
                file: "src/lib.rs",
                source: &generated,
            }),
        );
        assert_eq!(report.ename, "KeyboardInterrupt");
        assert_eq!(
            report.traceback[1],
            format!("  at cell line 2\n{BLUE}   |{RESET} for i in 0..n {{")
        );
    }

    #[test]
    fn an_interrupt_at_a_check_on_a_line_of_its_own_is_placed_on_the_statement_before() {
        let panic = Panic {
            message: "KeyboardInterrupt: interrupted by the user".into(),
            location: "src/lib.rs:3:1".into(),
            thread: "<unnamed>".into(),
            on_main: true,
            cpp_frames: false,
        };
        let generated = format!("a\nnap();\n{}\n", crate::INTERRUPT_POINT);
        let report = panic_report(
            &panic,
            "let kept = 1;\nnap();",
            Some(Generated {
                file: "src/lib.rs",
                source: &generated,
            }),
        );
        assert_eq!(
            report.traceback[1],
            format!("  at cell line 2\n{BLUE}   |{RESET} nap();")
        );
    }

    #[test]
    fn an_interrupt_outside_the_cell_does_not_point_into_the_build_cache() {
        let panic = Panic {
            message: "KeyboardInterrupt: interrupted by the user".into(),
            location: "/home/u/.cache/tchbook/build/x/prelude/src/data/loader.rs:200:13".into(),
            thread: "<unnamed>".into(),
            on_main: true,
            cpp_frames: false,
        };
        let report = panic_report(&panic, "for b in &loader {}", None);
        assert_eq!(report.traceback.len(), 1, "{report:?}");
        assert!(!report.traceback[0].contains(".cache"));
    }

    #[test]
    fn cpu_out_of_memory_is_one_short_line_then_the_details() {
        let frames = "Exception raised from allocate at alloc_cpu.cpp:117 (most recent call \
                      first):\nframe #0: c10::Error::Error() + 0x1f";
        let panic = Panic {
            message: format!(
                "called `Result::unwrap()` on an `Err` value: Torch(\"[enforce fail at \
                 alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to \
                 allocate 17592186044416 bytes.\\n{frames}\")"
            ),
            location: "/nonexistent/tensor_generated.rs:10:5".into(),
            thread: "<unnamed>".into(),
            on_main: true,
            cpp_frames: false,
        };
        let report = panic_report(
            &panic,
            "let a = 1;\nlet big = Tensor::zeros([1], opts);",
            None,
        );
        assert_eq!(report.ename, "OutOfMemoryError");
        assert!(
            report.evalue.contains("16.0 TiB on the CPU"),
            "{}",
            report.evalue
        );
        assert!(report.evalue.contains("available"), "{}", report.evalue);
        assert!(report.evalue.len() < 200, "{}", report.evalue);
        assert!(
            !report.traceback.concat().contains("frame #0"),
            "{report:?}"
        );
        let asked = Panic {
            cpp_frames: true,
            ..panic
        };
        let report = panic_report(&asked, "let big = Tensor::zeros([1], opts);", None);
        assert!(report.traceback.last().unwrap().contains("frame #0"));
    }

    #[test]
    fn a_panic_in_a_library_function_points_at_the_cell_line_calling_it() {
        let dir_temp = tempfile::Builder::new()
            .prefix("tchbook-display-")
            .tempdir()
            .unwrap();
        let dir = dir_temp.path().to_path_buf();
        let file = dir.join("tensor_generated.rs");
        std::fs::write(&file, "impl Tensor {\n    pub fn zeros(size: i64) -> Tensor {\n        Self::f_zeros(size).unwrap()\n    }\n}\n").unwrap();
        let panic = Panic {
            message: "called `Result::unwrap()` on an `Err` value: Torch(\"bad size\")".into(),
            location: format!("{}:3:29", file.display()),
            thread: "<unnamed>".into(),
            on_main: true,
            cpp_frames: false,
        };
        let cell = "let a = 1;\nlet t = Tensor::zeros(-1);";
        let report = panic_report(&panic, cell, None);
        let asked = panic_report(
            &Panic {
                cpp_frames: true,
                ..panic
            },
            cell,
            None,
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(report.ename, "TorchError");
        assert_eq!(report.evalue, "bad size");
        assert!(
            report.traceback[1].contains("at cell line 2, in `zeros`"),
            "{report:?}"
        );
        // What PyTorch shows: the message, where in the cell, the call; tch's wrapper line and
        // libtorch's C++ frames only when asked for (TORCH_SHOW_CPP_STACKTRACES=1).
        assert_eq!(report.traceback.len(), 2, "{report:?}");
        assert!(
            asked.traceback.iter().any(|l| l.contains("(panicked at")),
            "{asked:?}"
        );
    }
}
