//! Panics and interrupts, reported as the kernel reports them: a main-thread panic is the
//! cell's `error` output (placed on the cell's own line), a panic on another thread is stderr
//! text, and an interrupt a cell never answers ends the program after the grace period.

use super::capture::sync;
use super::process::{lock, runner, RUNNER};
use super::record::write_record;
use std::time::{Duration, Instant};
use tchbook_wire::{Message, Panic};

const RED: &str = "\x1b[1;31m";
const BOLD: &str = "\x1b[1m";
const BLUE: &str = "\x1b[1;34m";
const RESET: &str = "\x1b[0m";

/// Reports panics through `tchbook_wire`'s hook: one on the main thread (the cells') is kept
/// for [`record_panic`], which makes it the cell's error once it has unwound; one on another
/// thread is stderr text at once, as the kernel shows a panic in a thread the cell spawned.
pub(super) fn install_panic_hook() {
    tchbook_wire::install_panic_hook(|message| {
        let Message::Panic(panic) = message else {
            return;
        };
        if !panic.ends_cell() {
            eprint!("{}", panic.thread_text());
        } else if let Some(runner) = RUNNER.get() {
            *runner.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(panic.clone());
        }
    });
}

/// SIGINT (Ctrl-C, or a scheduler's signal) sets the prelude's interrupt flag, which its loops
/// check and answer with a `KeyboardInterrupt` panic. A cell that never checks would run on for
/// ever, so, as the kernel does, the flag gets a grace period (`TCHBOOK_INTERRUPT_GRACE`, default
/// 3 s): still pending after it, the cell is recorded as interrupted and the program exits (130).
pub(super) fn watch_interrupts(pending: fn() -> bool) {
    use tchbook_wire::env::{interrupt_grace, DEFAULT_INTERRUPT_GRACE, INTERRUPT_GRACE};
    let value = std::env::var(INTERRUPT_GRACE).ok();
    let grace = interrupt_grace(value.as_deref()).unwrap_or_else(|why| {
        eprintln!("tchbook: {why}");
        DEFAULT_INTERRUPT_GRACE
    });
    let watch = move || {
        let mut since: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if !pending() {
                since = None;
                continue;
            }
            if since.get_or_insert_with(Instant::now).elapsed() < grace {
                continue;
            }
            let evalue = format!(
                "the cell did not stop within the grace period ({:.0?}), so the program ended",
                grace
            );
            let traceback = vec![format!(
                "{RED}KeyboardInterrupt{RESET}{BOLD}: {evalue}{RESET}"
            )];
            lock(runner()).error("KeyboardInterrupt", &evalue, traceback);
            write_record(false);
            std::process::exit(130);
        }
    };
    let _ = std::thread::Builder::new()
        .name("tchbook-export-interrupts".into())
        .spawn(watch);
}

/// Records the main-thread panic that ended the current cell as its `error` output.
pub(super) fn record_panic() {
    let runner = runner();
    sync();
    let Panic {
        message, location, ..
    } = runner
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| Panic {
            message: "the cell panicked".to_owned(),
            ..Panic::default()
        });
    const INTERRUPT: &str = "KeyboardInterrupt";
    let (ename, evalue) = match message.strip_prefix(INTERRUPT) {
        Some(rest) => (INTERRUPT, rest.trim_start_matches(':').trim().to_owned()),
        None => ("panic", message.clone()),
    };
    let shown = if evalue.is_empty() {
        "interrupted"
    } else {
        &evalue
    };
    let mut traceback = vec![format!("{RED}{ename}{RESET}{BOLD}: {shown}{RESET}")];
    if !location.is_empty() {
        let position = runner.state().position;
        let cell = runner.notebook.cells.get(position).map_or("", |c| c.2);
        traceback.push(panic_place(&location, runner.notebook.main_rs, cell));
    }
    lock(runner).error(ename, &evalue, traceback);
}

/// Where a panic happened, as the kernel says it: the cell's own line number and text when the
/// location is a line of the cell's code in `src/main.rs`, else the location itself.
fn panic_place(location: &str, main_rs: &str, cell: &str) -> String {
    let mut parts = location.rsplitn(3, ':');
    let (_column, line, file) = (parts.next(), parts.next(), parts.next());
    let text = line
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|_| file.is_some_and(|f| f.ends_with("src/main.rs")))
        .and_then(|l| main_rs.lines().nth(l.checked_sub(1)?));
    let Some(wanted) = text.map(str::trim) else {
        return format!("  at {location}");
    };
    match cell.lines().position(|l| l.trim() == wanted) {
        Some(n) => format!("  at cell line {}\n{BLUE}   |{RESET} {wanted}", n + 1),
        None => format!("  at {location}\n{BLUE}   |{RESET} {wanted}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_the_cells_code_is_placed_on_the_cells_line() {
        let main_rs =
            "fn cells() {\n    tchbook_runner::begin(0);\nlet x = 1;\nassert!(x > 1);\n}\n";
        let cell = "let x = 1;\nassert!(x > 1);";
        let place = panic_place("src/main.rs:4:1", main_rs, cell);
        assert!(place.starts_with("  at cell line 2\n"), "{place}");
        assert!(place.ends_with("assert!(x > 1);"), "{place}");
        let elsewhere = panic_place("/x/prelude/src/data/loader.rs:9:5", main_rs, cell);
        assert_eq!(elsewhere, "  at /x/prelude/src/data/loader.rs:9:5");
    }
}
