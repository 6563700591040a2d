//! What the runtime sets up in the process: SIGINT sets the interrupt flag that `check` panics
//! on; the allocator's tuning is accepted by glibc.

use crate::{is_child, run_child};
use tchbook_prelude::{interrupt, runtime};

const SIGINT_CHILD: &str = "runtime::process::sigint_child";

#[test]
#[ignore = "runs only as the child process of another test"]
fn sigint_child() {
    if !is_child(SIGINT_CHILD) {
        return;
    }
    runtime::attach();
    // SAFETY: raising a signal this process handles.
    unsafe { libc::raise(libc::SIGINT) };
    let caught = std::panic::catch_unwind(interrupt::check);
    let message = caught
        .unwrap_err()
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    println!("after-interrupt: {message}");
    interrupt::check(); // reported once: no second panic
    println!("still alive");
    std::thread::sleep(std::time::Duration::from_millis(200));
}

#[test]
fn sigint_sets_the_flag_and_check_panics_with_keyboard_interrupt() {
    let out = run_child(SIGINT_CHILD);
    assert!(
        out.contains("after-interrupt: KeyboardInterrupt: interrupted by the user"),
        "{out}"
    );
    assert!(out.contains("still alive"), "{out}");
}

#[test]
fn tune_allocator_is_accepted_by_glibc() {
    assert!(runtime::tune_allocator());
}
