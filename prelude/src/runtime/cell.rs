//! The function every cell's code runs through.

use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs a cell's code: catches its panic, then prints the (keyed) line that tells the kernel it
/// panicked, flushes stdout and returns whether it did. The kernel's generated code for each
/// cell calls it (`run_cell(Box::new(|| { ... }))`) instead of carrying that work itself:
/// compiled here once, it is no longer instantiated, optimized and linked again in every cell,
/// which was about half of a trivial cell's compile time. The flush sends what the cell printed
/// without a newline before the cell ends, so it shows in this cell rather than the next.
///
/// ```
/// use tchbook_prelude::runtime::run_cell;
///
/// assert!(!run_cell(Box::new(|| println!("fine"))));
/// assert!(run_cell(Box::new(|| panic!("a failing cell"))));
/// ```
pub fn run_cell(cell: Box<dyn FnOnce() + '_>) -> bool {
    super::signals::adopt_this_thread();
    super::pump::cell_begins();
    // Unwind safety is the cell's variables' business: evcxr puts back or reports what a panic
    // left behind, as it does around its own `catch_unwind`.
    let panicked = catch_unwind(AssertUnwindSafe(cell)).is_err();
    // An interrupt belongs to the cell it was sent for: one this cell never reached a check for
    // (a wait that failed and was unwrapped, a cell that ended meanwhile) must not stop the
    // next cell at its first loop.
    super::state::shared()
        .interrupted
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let mut stdout = std::io::stdout().lock();
    if panicked {
        let _ = writeln!(
            stdout,
            "{}",
            tchbook_wire::keyed(tchbook_wire::PANIC_NOTIFICATION)
        );
    }
    let _ = stdout.flush();
    panicked
}
