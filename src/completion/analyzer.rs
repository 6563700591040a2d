//! The kernel's side of the analyzer process ([`super::server`]): starts it when first needed,
//! feeds it one request at a time from a thread of its own, and contains whatever rust-analyzer
//! does. A panic ends the process (its last reply says so); a request that runs past
//! [`Limits::hang`] or a process above [`Limits::memory`] is killed. Each of those is logged and
//! answered with a failure, and the next request starts a new process. A process that has had
//! no request for [`Limits::idle`] is ended too: the index answers most requests, and the ~1 GiB
//! rust-analyzer holds once warm is more than a notebook server shared by many users can keep
//! for each kernel. The notebook's variables live in the evaluation process and are never
//! touched.

use super::messages::{Reply, Request};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// When the kernel gives up on the analyzer process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Longest time one request may take. The first one analyses std and tch (about 10 s on
    /// two busy cores); anything far beyond is a hang.
    pub(crate) hang: Duration,
    /// Largest resident memory, in bytes. A warm analyzer of the prelude holds about 1 GiB.
    pub(crate) memory: u64,
    /// How long a started process may wait for its next request before it is ended.
    pub(crate) idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hang: Duration::from_secs(90),
            memory: 6 << 30,
            idle: Duration::from_secs(60),
        }
    }
}

/// What the analyzer process needs: the binary to run, the crate whose manifest it analyses
/// (the kernel's build directory) and a directory of its own.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub(crate) exe: PathBuf,
    pub(crate) build_dir: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) limits: Limits,
}

type Answer = Result<Reply, String>;

struct Job {
    request: Request,
    reply: oneshot::Sender<Answer>,
}

/// A handle on the analyzer process's thread.
#[derive(Clone)]
pub(crate) struct Analyzer {
    jobs: crossbeam_channel::Sender<Job>,
    /// Whether the running process has answered a request (rust-analyzer is loaded and warm).
    warm: Arc<AtomicBool>,
}

impl Analyzer {
    pub(crate) fn spawn(setup: Setup) -> Analyzer {
        let (jobs, queue) = crossbeam_channel::unbounded();
        let warm = Arc::new(AtomicBool::new(false));
        let thread_warm = warm.clone();
        std::thread::Builder::new()
            .name("tchbook-analyzer".into())
            .spawn(move || serve_jobs(&setup, &queue, &thread_warm))
            .expect("spawning the analyzer thread");
        Analyzer { jobs, warm }
    }

    pub(crate) fn is_warm(&self) -> bool {
        self.warm.load(Ordering::Acquire)
    }

    /// Queues `request`; the answer arrives on the receiver. A caller that stops waiting drops
    /// the receiver, and a request not started by then is skipped.
    pub(crate) fn ask(&self, request: Request) -> oneshot::Receiver<Answer> {
        let (reply, answer) = oneshot::channel();
        let _ = self.jobs.send(Job { request, reply });
        answer
    }
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: crossbeam_channel::Receiver<String>,
}

fn serve_jobs(setup: &Setup, queue: &crossbeam_channel::Receiver<Job>, warm: &AtomicBool) {
    let mut running: Option<Running> = None;
    loop {
        let next = match running {
            Some(_) => queue.recv_timeout(setup.limits.idle),
            None => queue
                .recv()
                .map_err(|_| crossbeam_channel::RecvTimeoutError::Disconnected),
        };
        let job = match next {
            Ok(job) => job,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                if let Some(mut process) = running.take() {
                    tracing::info!(
                        "ending the analyzer process {}: idle for {:?}",
                        process.child.id(),
                        setup.limits.idle
                    );
                    let _ = process.child.kill();
                    let _ = process.child.wait();
                }
                warm.store(false, Ordering::Release);
                continue;
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
        };
        if job.reply.is_closed() {
            continue;
        }
        if let Some(process) = &mut running
            && let Ok(Some(status)) = process.child.try_wait()
        {
            tracing::warn!("the analyzer process ended ({status}); starting a new one");
            running = None;
            warm.store(false, Ordering::Release);
        }
        let answer = match &mut running {
            Some(process) => exchange(process, &job.request, setup.limits),
            None => match start(setup) {
                Ok(process) => exchange(running.insert(process), &job.request, setup.limits),
                Err(error) => Err(error),
            },
        };
        match &answer {
            Ok(Reply::Failed { message }) => tracing::warn!("rust-analyzer: {message}"),
            Ok(_) => warm.store(true, Ordering::Release),
            Err(error) => {
                tracing::warn!("the analyzer process: {error}");
                if let Some(mut process) = running.take() {
                    let _ = process.child.kill();
                    let _ = process.child.wait();
                }
                warm.store(false, Ordering::Release);
            }
        }
        let _ = job.reply.send(answer);
    }
    if let Some(mut process) = running {
        let _ = process.child.kill();
        let _ = process.child.wait();
    }
}

/// The analyzer's copy of the build directory's manifest and lock file, refreshed when a `:dep`
/// changed them. rust-analyzer writes `src/lib.rs` under its root, so the root must not be the
/// build directory itself, where cells are written.
fn sync_manifest(setup: &Setup) -> std::io::Result<()> {
    std::fs::create_dir_all(setup.dir.join("src"))?;
    for name in ["Cargo.toml", "Cargo.lock"] {
        let from = setup.build_dir.join(name);
        let Ok(wanted) = std::fs::read(&from) else {
            continue;
        };
        let to = setup.dir.join(name);
        if std::fs::read(&to).ok().as_deref() != Some(&wanted[..]) {
            std::fs::write(&to, &wanted)?;
        }
    }
    Ok(())
}

fn start(setup: &Setup) -> Result<Running, String> {
    sync_manifest(setup).map_err(|e| format!("preparing {}: {e}", setup.dir.display()))?;
    let mut command = Command::new(&setup.exe);
    command
        .arg("analyzer")
        .arg("--dir")
        .arg(&setup.dir)
        // Its own directory, not the notebook's: rust-analyzer runs cargo and rustc (through
        // rustup, which obeys a folder's rust-toolchain.toml) where it starts.
        .current_dir(&setup.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: prctl is async-signal-safe. The process dies with the kernel (this thread lives
    // as long as the kernel does, and PDEATHSIG follows the spawning thread).
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("starting {}: {e}", setup.exe.display()))?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (line_tx, lines) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("tchbook-analyzer-out".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line_tx.send(line).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| format!("spawning a reader thread: {e}"))?;
    tracing::info!("started the analyzer process {}", child.id());
    Ok(Running {
        child,
        stdin,
        lines,
    })
}

fn exchange(process: &mut Running, request: &Request, limits: Limits) -> Answer {
    let line = serde_json::to_string(request).map_err(|e| e.to_string())?;
    writeln!(process.stdin, "{line}")
        .and_then(|()| process.stdin.flush())
        .map_err(|e| format!("writing to the analyzer process: {e}"))?;
    let started = Instant::now();
    loop {
        match process.lines.recv_timeout(Duration::from_millis(250)) {
            Ok(line) => {
                return serde_json::from_str(&line)
                    .map_err(|e| format!("unreadable reply from the analyzer process: {e}"));
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                let status = process.child.wait().map(|s| s.to_string());
                return Err(format!(
                    "the analyzer process ended without a reply ({})",
                    status.unwrap_or_else(|e| e.to_string())
                ));
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                if started.elapsed() > limits.hang {
                    return Err(format!(
                        "rust-analyzer did not answer within {:?}; killed",
                        limits.hang
                    ));
                }
                if let Some(rss) = resident_bytes(process.child.id())
                    && rss > limits.memory
                {
                    return Err(format!(
                        "rust-analyzer grew to {} MiB (limit {} MiB); killed",
                        rss >> 20,
                        limits.memory >> 20
                    ));
                }
            }
        }
    }
}

/// A process's resident memory, from `/proc/PID/status`.
fn resident_bytes(pid: u32) -> Option<u64> {
    let status =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
