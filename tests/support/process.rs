//! The real `tchbook` binary as a kernel process (its own process group, as Jupyter starts
//! kernels), and what tests ask of processes.

use super::{Client, loopback_connection};
use jupyter_protocol::ConnectionInfo;
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
        Self::start_with(env, &[], false, None).await
    }

    /// A kernel started in `folder`, as Jupyter starts one in its notebook's folder.
    pub async fn start_in(folder: &std::path::Path, env: &[(&str, &str)]) -> Kernel {
        Self::start_with(env, &[], false, Some(folder)).await
    }

    /// A kernel started without these variables of the tests' own environment.
    pub async fn start_without_env(names: &[&str]) -> Kernel {
        Self::start_with(&[], names, false, None).await
    }

    /// A kernel whose parent is a shell of its own (`child` is that shell), as when a front
    /// end starts it: the test can then kill the parent.
    pub async fn start_under_shell(env: &[(&str, &str)]) -> Kernel {
        Self::start_with(env, &[], true, None).await
    }

    async fn start_with(
        env: &[(&str, &str)],
        remove: &[&str],
        under_shell: bool,
        folder: Option<&std::path::Path>,
    ) -> Kernel {
        Self::start_on(
            loopback_connection().await,
            env,
            remove,
            under_shell,
            folder,
        )
        .await
    }

    /// A kernel on the connection `info` (its address and key), as Jupyter would start it
    /// with that connection file (in `folder`, if given), with `env` set and the variables
    /// named in `remove` taken out of the tests' own environment.
    pub async fn start_on(
        info: ConnectionInfo,
        env: &[(&str, &str)],
        remove: &[&str],
        under_shell: bool,
        folder: Option<&std::path::Path>,
    ) -> Kernel {
        let (dir, connection_file) = connection_file(&info);
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
        if let Some(folder) = folder {
            command.current_dir(folder);
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

/// A directory of its own for a kernel on `info`, and the connection file in it.
fn connection_file(info: &ConnectionInfo) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "tchbook-test-{}-{}",
        std::process::id(),
        info.shell_port
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let connection_file = dir.join("connection.json");
    std::fs::write(&connection_file, serde_json::to_string(info).unwrap()).unwrap();
    (dir, connection_file)
}

/// Starts the kernel on the connection `info` and expects it to refuse: it must exit with a
/// failure before `limit`. Returns what it wrote to stderr.
pub async fn refused_start(info: &ConnectionInfo, env: &[(&str, &str)], limit: Duration) -> String {
    let (dir, connection_file) = connection_file(info);
    let stderr_file = dir.join("stderr");
    let mut child = std::process::Command::new(binary())
        .arg("kernel")
        .arg("--connection-file")
        .arg(&connection_file)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .expect("starting the tchbook binary");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stderr = std::fs::read_to_string(&stderr_file).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    match status {
        Some(status) => assert!(
            !status.success(),
            "the kernel exited with {status}: {stderr}"
        ),
        None => panic!("the kernel started (still running after {limit:?}): {stderr}"),
    }
    stderr
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
