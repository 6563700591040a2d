//! Interrupts, and the evaluation process's process group.

use super::Interrupts;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Interrupts the running cell: SIGINT to the evaluation process first (the prelude turns it
/// into a `KeyboardInterrupt` panic at the next check, keeping every variable), SIGKILL after
/// the grace period if the cell is still the one that was interrupted.
#[derive(Clone)]
pub struct Interrupter {
    inner: Arc<InterruptState>,
}

struct InterruptState {
    child: Mutex<Option<Arc<Mutex<Child>>>>,
    /// Number of the running cell, 0 while idle.
    running: AtomicU64,
    /// Whether the running cell was sent SIGINT / SIGKILL.
    interrupted: AtomicBool,
    killed: AtomicBool,
    grace: Duration,
}

impl Interrupter {
    pub(super) fn new(grace: Duration) -> Self {
        Interrupter {
            inner: Arc::new(InterruptState {
                child: Mutex::new(None),
                running: AtomicU64::new(0),
                interrupted: AtomicBool::new(false),
                killed: AtomicBool::new(false),
                grace,
            }),
        }
    }

    /// Interrupts the running cell, if any. Returns whether a cell was running.
    pub fn interrupt(&self) -> bool {
        let cell = self.inner.running.load(Ordering::SeqCst);
        if cell == 0 {
            return false;
        }
        self.inner.interrupted.store(true, Ordering::SeqCst);
        self.signal(libc::SIGINT);
        let inner = Arc::clone(&self.inner);
        let this = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(inner.grace);
            if inner.running.load(Ordering::SeqCst) == cell {
                tracing::warn!("cell {cell} ignored the interrupt; killing the evaluation process");
                inner.killed.store(true, Ordering::SeqCst);
                this.kill();
            }
        });
        true
    }

    /// Whether the running cell has been interrupted (a cell waiting for input stops waiting).
    pub fn was_interrupted(&self) -> bool {
        self.inner.running.load(Ordering::SeqCst) != 0
            && self.inner.interrupted.load(Ordering::SeqCst)
    }

    /// Kills the evaluation process and every process a cell started (kernel shutdown).
    pub fn kill(&self) {
        if let Some(pid) = self.child_pid() {
            kill_process_group(pid);
        }
    }

    /// The evaluation process whose cells this interrupts (a new one after each restart).
    pub(super) fn attach(&self, child: Arc<Mutex<Child>>) {
        *self.inner.child.lock().unwrap() = Some(child);
    }

    fn signal(&self, signal: i32) {
        if let Some(pid) = self.child_pid() {
            // SAFETY: kill(2) with a pid we spawned; at worst the process is already gone.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
    }

    fn child_pid(&self) -> Option<u32> {
        let child = self.inner.child.lock().unwrap().clone()?;
        let pid = child.lock().unwrap().id();
        Some(pid)
    }

    pub(super) fn begin(&self, cell: u64) {
        self.inner.interrupted.store(false, Ordering::SeqCst);
        self.inner.killed.store(false, Ordering::SeqCst);
        self.inner.running.store(cell, Ordering::SeqCst);
    }

    pub(super) fn end(&self) -> bool {
        self.inner.running.store(0, Ordering::SeqCst);
        self.inner.interrupted.load(Ordering::SeqCst) || self.inner.killed.load(Ordering::SeqCst)
    }
}

impl Interrupts for Interrupter {
    fn interrupt(&self) -> bool {
        Interrupter::interrupt(self)
    }

    fn was_interrupted(&self) -> bool {
        Interrupter::was_interrupted(self)
    }

    fn kill(&self) {
        Interrupter::kill(self)
    }
}

/// Ends the evaluation process started as `pid` and every process still in its process group:
/// the processes its cells started (`Command::new(..).spawn()`, `sh -c '... &'`) inherit the
/// group, and nothing else would end them when the evaluation process goes (shutdown, a
/// restart, a crash). A process a cell put in a group or session of its own (`setsid`,
/// `process_group(0)`) is left alone, which is how a user keeps one on purpose (`:help`).
pub(crate) fn kill_process_group(pid: u32) {
    // SAFETY: killpg(2) on the group the evaluation process leads (it was spawned with
    // `process_group(0)`). A group id is not reused while any member lives, and once all are
    // gone this fails with ESRCH.
    unsafe { libc::killpg(pid as libc::pid_t, libc::SIGKILL) };
}

/// Exits the kernel, after ending the evaluation process's group, when the process that
/// started the kernel dies (as ipykernel does): a front end that is SIGKILLed must not leave a
/// kernel holding a notebook's tensors under PID 1. The parent is polled, as ipykernel polls:
/// `PR_SET_PDEATHSIG` would fire when the *thread* that started the kernel exits, and a front
/// end may start kernels from a thread that ends long before the kernel should.
pub fn exit_with_parent(interrupter: Interrupter) {
    // SAFETY: getppid(2) cannot fail.
    let parent = unsafe { libc::getppid() };
    if parent <= 1 {
        // Started by init (a container's entry point, `nohup ... &` after the shell left):
        // there is no parent whose death could be told apart.
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("tchbook-parent".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: as above.
            if unsafe { libc::getppid() } != parent {
                tracing::warn!("the kernel's parent (pid {parent}) died; exiting");
                interrupter.kill();
                std::process::exit(1);
            }
        });
    if let Err(error) = spawned {
        tracing::error!("cannot watch the kernel's parent: {error}");
    }
}
