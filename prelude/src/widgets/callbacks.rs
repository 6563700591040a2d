//! The callback thread: where every widget's listeners run (`on_change`, `on_click`,
//! `interact`'s closure), one at a time, in the order their changes arrived, never on the
//! side channel's thread and never inside the cell.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, PoisonError};

/// Work for the callback thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The callback thread's queue, once it is started: one for every copy of the prelude the
/// cells link (it lives in the widgets' registry).
pub(crate) type Queue = Mutex<Option<Sender<Job>>>;

/// Runs `jobs` on the callback thread of `queue`, started at the first job.
pub(crate) fn queue_all(queue: &Queue, jobs: impl IntoIterator<Item = Job>) {
    for job in jobs {
        run(queue, job);
    }
}

/// Runs `job` on the callback thread, started at the first job. One thread for every widget, so
/// callbacks run one at a time, in the order their changes arrived; a callback that panics is
/// reported (the panic hook's stderr text) and the thread goes on with the next.
fn run(queue: &Queue, job: Job) {
    // A poisoned lock only means a panic elsewhere while it was held; the slot is still whole.
    let mut jobs = queue.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(sender) = jobs.as_ref() {
        match sender.send(job) {
            Ok(()) => return,
            Err(returned) => {
                // The thread is gone (it cannot end by itself; a fork's child lacks it): start
                // another below with the job it did not take.
                *jobs = None;
                return start(&mut jobs, returned.0);
            }
        }
    }
    start(&mut jobs, job);
}

fn start(slot: &mut Option<Sender<Job>>, first: Job) {
    let (sender, receiver) = channel::<Job>();
    let _ = sender.send(first);
    let spawned = std::thread::Builder::new()
        .name("tchbook-widgets".into())
        .spawn(move || {
            for job in receiver {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
    if spawned.is_ok() {
        *slot = Some(sender);
    }
}
