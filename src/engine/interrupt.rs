//! Interrupts, and the evaluation process's process group.

use super::Interrupts;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tchbook_wire::side_channel::{Answer, Request};

/// Interrupts the running cell: SIGINT to the evaluation process first (the prelude turns it
/// into a `KeyboardInterrupt` panic at the next check, keeping every variable), SIGKILL after
/// the grace period if the cell is still the one that was interrupted.
#[derive(Clone)]
pub(crate) struct Interrupter {
    inner: Arc<InterruptState>,
}

struct InterruptState {
    child: Mutex<Option<Arc<Mutex<Child>>>>,
    /// Number of the running cell, 0 while idle.
    running: AtomicU64,
    /// Whether the running cell was sent SIGINT / SIGKILL.
    interrupted: AtomicBool,
    killed: AtomicBool,
    /// Whether the running cell's library is built and about to be loaded (before that, the
    /// evaluation process is idle and the kernel builds), and whether an interrupt waits for it.
    stage: Mutex<Stage>,
    grace: Duration,
}

#[derive(Default, Clone, Copy)]
struct Stage {
    loaded: bool,
    pending: bool,
}

impl Interrupter {
    pub(super) fn new(grace: Duration) -> Self {
        Interrupter {
            inner: Arc::new(InterruptState {
                child: Mutex::new(None),
                running: AtomicU64::new(0),
                interrupted: AtomicBool::new(false),
                killed: AtomicBool::new(false),
                stage: Mutex::new(Stage::default()),
                grace,
            }),
        }
    }

    /// Interrupts the running cell, if any. Returns whether a cell was running. A cell still
    /// being built is interrupted when its library is about to load ([`Self::loading`]): until
    /// then the evaluation process, which holds the variables, has nothing to stop, and the grace
    /// period counts from there (a build that takes longer than the grace period must not cost
    /// the notebook); a cell whose build fails is not run at all.
    pub(crate) fn interrupt(&self) -> bool {
        let cell = self.inner.running.load(Ordering::SeqCst);
        if cell == 0 {
            return false;
        }
        self.inner.interrupted.store(true, Ordering::SeqCst);
        {
            let mut stage = self.inner.stage.lock().unwrap_or_else(|e| e.into_inner());
            if !stage.loaded {
                stage.pending = true;
                return true;
            }
        }
        self.stop(cell);
        true
    }

    /// The running cell's library is built and about to load: an interrupt sent during the
    /// build reaches it now, so that it stops at its first check.
    pub(super) fn loading(&self) {
        let cell = self.inner.running.load(Ordering::SeqCst);
        let pending = {
            let mut stage = self.inner.stage.lock().unwrap_or_else(|e| e.into_inner());
            stage.loaded = true;
            std::mem::take(&mut stage.pending)
        };
        if pending && cell != 0 {
            self.stop(cell);
        }
    }

    /// SIGINT to the evaluation process, and SIGKILL after the grace period if `cell` still runs.
    fn stop(&self, cell: u64) {
        self.signal_unreaped(libc::SIGINT, Target::Process);
        let inner = Arc::clone(&self.inner);
        let this = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(inner.grace);
            if inner.running.load(Ordering::SeqCst) == cell && !cell_has_ended() {
                tracing::warn!("cell {cell} ignored the interrupt; killing the evaluation process");
                inner.killed.store(true, Ordering::SeqCst);
                this.kill();
            }
        });
    }

    /// Whether the running cell has been interrupted (a cell waiting for input stops waiting).
    pub(crate) fn was_interrupted(&self) -> bool {
        self.inner.running.load(Ordering::SeqCst) != 0
            && self.inner.interrupted.load(Ordering::SeqCst)
    }

    /// Kills the evaluation process and every process a cell started (kernel shutdown).
    pub(crate) fn kill(&self) {
        self.signal_unreaped(libc::SIGKILL, Target::Group);
    }

    /// The evaluation process whose cells this interrupts (a new one after each restart).
    pub(super) fn attach(&self, child: Arc<Mutex<Child>>) {
        *self.inner.child.lock().unwrap() = Some(child);
    }

    /// Sends `signal` to the evaluation process (or its group), but only while that process
    /// has not been waited for: once reaped, its pid is free and may already name another
    /// process (or group). evcxr waits for the process only through the `Child` under this
    /// lock (its restart, its termination error, its drop), so holding the lock while looking
    /// and signalling leaves no moment for the pid to be reaped and reused in between. The
    /// look (`waitid` with `WNOWAIT`) reaps nothing: an exited process not yet waited for
    /// keeps its pid, and its group id, reserved, and its group may still hold processes a cell
    /// started. Returns whether the signal was sent.
    fn signal_unreaped(&self, signal: i32, target: Target) -> bool {
        let Some(child) = self.inner.child.lock().unwrap().clone() else {
            return false;
        };
        let child = child.lock().unwrap();
        let pid = child.id() as libc::pid_t;
        if reaped(pid) {
            tracing::debug!("the evaluation process {pid} was reaped; no signal {signal}");
            return false;
        }
        match target {
            // SAFETY: kill(2) on our unreaped child, whose pid cannot be reused while we hold
            // the lock through which alone it is waited for.
            Target::Process => unsafe { libc::kill(pid, signal) },
            // SAFETY: killpg(2) on the group our unreaped child leads (spawned with
            // `process_group(0)`); the group id is reserved while the leader is unreaped.
            Target::Group => unsafe { libc::killpg(pid, signal) },
        };
        true
    }

    pub(super) fn begin(&self, cell: u64) {
        self.inner.interrupted.store(false, Ordering::SeqCst);
        self.inner.killed.store(false, Ordering::SeqCst);
        *self.inner.stage.lock().unwrap_or_else(|e| e.into_inner()) = Stage::default();
        self.inner.running.store(cell, Ordering::SeqCst);
    }

    pub(super) fn end(&self) -> bool {
        self.inner.running.store(0, Ordering::SeqCst);
        self.inner.interrupted.load(Ordering::SeqCst) || self.inner.killed.load(Ordering::SeqCst)
    }
}

/// Whether the evaluation process says no cell runs there any more, asked on its side channel
/// (a Variables request is answered `busy` while a cell runs): the cell stopped, and the kernel
/// is still busy after it (naming its variables' types, say), which is no reason to lose them.
/// No answer within a second counts as running.
fn cell_has_ended() -> bool {
    use std::io::{BufRead, Write};
    let Some(path) = std::env::var_os(tchbook_wire::env::SIDE_CHANNEL) else {
        return false;
    };
    let Ok(stream) = tchbook_wire::side_channel::connect(&path) else {
        return false;
    };
    let patience = Some(Duration::from_secs(1));
    let _ = stream.set_read_timeout(patience);
    let _ = stream.set_write_timeout(patience);
    let Ok(mut request) = serde_json::to_string(&Request::Variables) else {
        return false;
    };
    request.push('\n');
    let mut answer = String::new();
    if (&stream).write_all(request.as_bytes()).is_err()
        || std::io::BufReader::new(&stream)
            .read_line(&mut answer)
            .is_err()
    {
        return false;
    }
    serde_json::from_str::<Answer>(answer.trim()).is_ok_and(|answer| answer != Answer::Busy)
}

/// Who a signal goes to: the evaluation process, or its whole process group.
enum Target {
    Process,
    Group,
}

/// Whether our child `pid` has been waited for (it is then no child of ours any more). Looks
/// without reaping.
fn reaped(pid: libc::pid_t) -> bool {
    // SAFETY: siginfo_t is a plain C struct, for which all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: waitid(2) with a valid out-pointer; with WNOWAIT it leaves the child's state as
    // it is, and with WNOHANG it does not block. ECHILD: no such child, i.e. reaped.
    unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) != 0 }
}

impl Interrupts for Interrupter {
    fn interrupt(&self) -> bool {
        Interrupter::interrupt(self)
    }

    fn interrupt_again(&self) {
        let loaded = self.inner.stage.lock().is_ok_and(|stage| stage.loaded);
        if self.was_interrupted() && loaded {
            self.signal_unreaped(libc::SIGINT, Target::Process);
        }
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
pub(crate) fn exit_with_parent(interrupter: Interrupter) {
    // SAFETY: getppid(2) cannot fail.
    let parent = unsafe { libc::getppid() };
    if parent <= 1 {
        // Started by init (a container's entry point, `nohup ... &` after the shell left):
        // there is no parent whose death could be told apart.
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("tchbook-parent".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                // SAFETY: as above.
                if unsafe { libc::getppid() } != parent {
                    tracing::warn!("the kernel's parent (pid {parent}) died; exiting");
                    interrupter.kill();
                    std::process::exit(1);
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!("cannot watch the kernel's parent: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// A process in a group of its own that starts a `sleep` in that group, and the sleep's pid.
    fn leader_with_member(script: &str) -> (Child, libc::pid_t) {
        let mut leader = Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(leader.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        (leader, line.trim().parse().unwrap())
    }

    fn alive(pid: libc::pid_t) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    }

    fn gone_within(pid: libc::pid_t, limit: Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        while alive(pid) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    #[test]
    fn an_unreaped_evaluation_process_and_its_group_are_killed() {
        let (leader, member) = leader_with_member("sleep 30 & echo $!; wait");
        let child = Arc::new(Mutex::new(leader));
        let interrupter = Interrupter::new(Duration::from_secs(60));
        interrupter.attach(Arc::clone(&child));
        interrupter.kill();
        assert!(
            gone_within(member, Duration::from_secs(10)),
            "the group's sleep lives"
        );
        let status = child.lock().unwrap().wait().unwrap();
        assert!(!status.success());
    }

    #[test]
    fn a_reaped_evaluation_process_is_not_signalled() {
        // The leader exits and is waited for; the sleep it started keeps the group's id alive,
        // so a signal to that id would still land somewhere, which is what must not happen
        // once the pid has been given back.
        let (mut leader, member) = leader_with_member("sleep 30 & echo $!");
        leader.wait().unwrap();
        let interrupter = Interrupter::new(Duration::from_secs(60));
        interrupter.attach(Arc::new(Mutex::new(leader)));
        interrupter.begin(1);
        assert!(interrupter.interrupt(), "a cell is running");
        interrupter.kill();
        std::thread::sleep(Duration::from_millis(300));
        let survived = alive(member);
        // SAFETY: kill(2) on the sleep this test started.
        unsafe { libc::kill(member, libc::SIGKILL) };
        assert!(survived, "the reaped leader's group was signalled");
    }
}
