//! Panics and interrupts, reported as the kernel reports them: a main-thread panic is the
//! cell's `error` output (placed on the cell's own line), a panic on another thread is stderr
//! text, and an interrupt a cell never answers ends the program after the grace period.

use super::capture::sync;
use super::process::{RUNNER, lock, runner};
use super::record::write_record;
use std::time::{Duration, Instant};
use tchbook_wire::report::{Generated, as_interrupt, grace_report, panic_report};
use tchbook_wire::{Message, Panic};

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
    use tchbook_wire::env::{DEFAULT_INTERRUPT_GRACE, INTERRUPT_GRACE, interrupt_grace};
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
            let then = format!("the program ended (the grace period is {grace:.0?})");
            lock(runner()).error(grace_report(&then));
            write_record(false);
            std::process::exit(130);
        }
    };
    let _ = std::thread::Builder::new()
        .name("tchbook-export-interrupts".into())
        .spawn(watch);
}

/// Records the main-thread panic that ended the current cell as its `error` output, as the
/// kernel reports it (`tchbook_wire::report`): its lines in `src/main.rs` are the cell's.
pub(super) fn record_panic() {
    let runner = runner();
    sync();
    let panic = runner
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| Panic {
            message: "the cell panicked".to_owned(),
            ..Panic::default()
        });
    let position = runner.state().position;
    let cell = runner.notebook.cells.get(position).map_or("", |c| c.2);
    let generated = Generated {
        file: "src/main.rs",
        source: runner.notebook.main_rs,
    };
    let mut report = panic_report(&panic, cell, Some(generated));
    // The interrupt ended what the cell waited on (a wait for a child fails with `ECANCELED`),
    // and the cell's unwrap of that failure panicked: the interrupt it was, as in the kernel.
    if (runner.interrupt_pending)() {
        as_interrupt(&mut report);
    }
    lock(runner).error(report);
}
