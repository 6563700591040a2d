//! The real `tchbook` binary as a kernel process (its own process group, as Jupyter starts
//! kernels), and what tests ask of processes.

use super::{loopback_connection, Client};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The real `tchbook` binary as a kernel process, and a client connected to it.
pub struct Kernel {
    pub child: Child,
    pub dir: PathBuf,
    client: Client,
}

impl std::ops::Deref for Kernel {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Kernel {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_tchbook")
}

impl Kernel {
    pub async fn start() -> Kernel {
        Self::start_with_env(&[]).await
    }

    pub async fn start_with_env(env: &[(&str, &str)]) -> Kernel {
        Self::start_with(env, &[], false).await
    }

    /// A kernel started without these variables of the tests' own environment.
    pub async fn start_without_env(names: &[&str]) -> Kernel {
        Self::start_with(&[], names, false).await
    }

    /// A kernel whose parent is a shell of its own (`child` is that shell), as when a front
    /// end starts it: the test can then kill the parent.
    pub async fn start_under_shell(env: &[(&str, &str)]) -> Kernel {
        Self::start_with(env, &[], true).await
    }

    async fn start_with(env: &[(&str, &str)], remove: &[&str], under_shell: bool) -> Kernel {
        let info = loopback_connection().await;
        let dir = std::env::temp_dir().join(format!(
            "tchbook-test-{}-{}",
            std::process::id(),
            info.shell_port
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let connection_file = dir.join("connection.json");
        std::fs::write(&connection_file, serde_json::to_string(&info).unwrap()).unwrap();
        let log = std::fs::File::create(dir.join("kernel.log")).unwrap();
        let mut command = if under_shell {
            let mut shell = std::process::Command::new("sh");
            shell.args(["-c", "\"$@\" & wait", "sh", binary()]);
            shell
        } else {
            std::process::Command::new(binary())
        };
        command
            .arg("kernel")
            .arg("--connection-file")
            .arg(&connection_file)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        for key in remove {
            command.env_remove(key);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        // Its own process group, as Jupyter starts kernels, so a test can signal the group.
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        let child = command.spawn().expect("starting the tchbook binary");
        let mut client = Client::connect(info).await;
        client.log_file = Some(dir.join("kernel.log"));
        Kernel { child, dir, client }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Children of every thread of `pid` (the evaluation process is spawned by the engine thread).
pub fn children(pid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            found.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    found
}

/// Whether `pid` has exited (a zombie waiting for whoever inherited it counts as gone).
pub fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `limit` until every pid in `pids` is gone; returns those still there.
pub async fn wait_until_gone(pids: &[i32], limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|&p| !is_gone(p)).collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
