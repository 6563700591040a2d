//! `tchbook install --remote kubernetes|docker|distributed`: kernelspecs for a gateway.
//!
//! Each spec names its provisioner twice, so one spec serves both gateway generations:
//! `metadata.kernel_provisioner` for gateway_provisioners (jupyter_client ≥ 7: Jupyter
//! Server, Kernel Gateway, Enterprise Gateway's provisioner-based releases) and
//! `metadata.process_proxy` for Enterprise Gateway 3.x; each ignores the other's key.
//!
//! - `distributed`: the gateway runs `tchbook launch` itself, on a host of its
//!   `remote_hosts` (over ssh, or directly when the host is the gateway's own).
//! - `kubernetes`, `docker`: the gateway runs the container launcher that gateway_provisioners
//!   ships (`launch_kubernetes.py` with its `kernel-pod.yaml.j2`, `launch_docker.py`), copied
//!   into the spec's `scripts/` as `jupyter-k8s-spec install` does; it starts the image, whose
//!   entry point runs `tchbook launch` from the `KERNEL_ID`, `RESPONSE_ADDRESS`, `PUBLIC_KEY`
//!   and `PORT_RANGE` it is given. The spec's `KERNEL_*` variables become pod settings:
//!   `KERNEL_GPUS` the `nvidia.com/gpu` request, `KERNEL_UID`/`KERNEL_GID` the user (the
//!   image's 1000:100).
//!
//! Interrupts are `interrupt_mode: signal`: the gateway sends SIGINT over the launcher's
//! communication port, which works wherever the kernel runs. The launch timeout (600 s, both
//! as `launch_timeout` and `KERNEL_LAUNCH_TIMEOUT`) covers pulling a multi-gigabyte CUDA
//! image and, on a host without the image's prebuilt cache, the first build of tch and the
//! prelude (about 2 minutes on two cores).

use crate::cellbuild::libtorch::detect_libtorch;
use crate::install::{self, Location};
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use jupyter_protocol::JupyterKernelspec;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Seconds a gateway waits for the connection information; see the module docs.
const DEFAULT_LAUNCH_TIMEOUT: u32 = 600;

/// Where the gateway starts the kernel.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remote {
    /// A pod per kernel (gateway_provisioners' kubernetes-provisioner).
    Kubernetes,
    /// A container per kernel (docker-provisioner).
    Docker,
    /// `tchbook launch` on one of the gateway's hosts (distributed-provisioner).
    Distributed,
}

/// The options of `tchbook install --remote`.
#[derive(Args, Debug, Clone)]
pub struct RemoteArgs {
    /// Write a kernelspec for a gateway that starts the kernel elsewhere.
    #[arg(long, value_enum, value_name = "WHERE")]
    pub remote: Option<Remote>,
    /// The kernel image (with --remote kubernetes or docker), as the cluster pulls it.
    #[arg(long, value_name = "IMAGE", requires = "remote")]
    pub(crate) image: Option<String>,
    /// GPUs a kernel pod requests as `nvidia.com/gpu` (--remote kubernetes); 0 for none.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "remote")]
    pub(crate) gpus: u32,
    /// Seconds the gateway waits for a kernel to start.
    #[arg(long, default_value_t = DEFAULT_LAUNCH_TIMEOUT, value_name = "SECONDS", requires = "remote")]
    launch_timeout: u32,
    /// Hosts for --remote distributed, comma-separated (default: the gateway's own list).
    #[arg(long, value_name = "HOST,..", requires = "remote")]
    remote_hosts: Option<String>,
}

impl Remote {
    /// The kernelspec's directory name.
    pub(crate) fn kernel_name(self) -> &'static str {
        match self {
            Remote::Kubernetes => "tchbook_kubernetes",
            Remote::Docker => "tchbook_docker",
            Remote::Distributed => "tchbook_distributed",
        }
    }

    fn display_name(self) -> &'static str {
        match self {
            Remote::Kubernetes => "Rust (tchbook) on Kubernetes",
            Remote::Docker => "Rust (tchbook) in Docker",
            Remote::Distributed => "Rust (tchbook) on remote hosts",
        }
    }

    /// `(gateway_provisioners' provisioner, Enterprise Gateway 3.x's process proxy class)`.
    fn provisioner(self) -> (&'static str, String) {
        let (name, class) = match self {
            Remote::Kubernetes => ("kubernetes-provisioner", "k8s.KubernetesProcessProxy"),
            Remote::Docker => ("docker-provisioner", "docker_swarm.DockerProcessProxy"),
            Remote::Distributed => (
                "distributed-provisioner",
                "distributed.DistributedProcessProxy",
            ),
        };
        (
            name,
            format!("enterprise_gateway.services.processproxies.{class}"),
        )
    }

    /// The files of gateway_provisioners' `kernel-launchers/` a container spec runs.
    fn launcher_scripts(self) -> &'static [&'static str] {
        match self {
            Remote::Kubernetes => &[
                "kubernetes/scripts/launch_kubernetes.py",
                "kubernetes/scripts/kernel-pod.yaml.j2",
            ],
            Remote::Docker => &["docker/scripts/launch_docker.py"],
            Remote::Distributed => &[],
        }
    }
}

/// The gateway's fill-in arguments every launcher takes.
const LAUNCH_ARGS: [&str; 10] = [
    "--kernel-id",
    "{kernel_id}",
    "--port-range",
    "{port_range}",
    "--response-address",
    "{response_address}",
    "--public-key",
    "{public_key}",
    "--transport-encryption",
    "{transport_encryption}",
];

/// The kernel.json for `remote`; `spec_dir` is where it will live (container specs run a
/// script from there), `executable` the tchbook binary a distributed host runs.
fn remote_kernelspec(
    args: &RemoteArgs,
    remote: Remote,
    spec_dir: &Path,
    executable: &str,
) -> Result<JupyterKernelspec> {
    let (provisioner, process_proxy) = remote.provisioner();
    let mut provisioner_config = json!({ "launch_timeout": args.launch_timeout });
    let mut proxy_config = json!({});
    let mut env = HashMap::from([(
        "KERNEL_LAUNCH_TIMEOUT".to_owned(),
        args.launch_timeout.to_string(),
    )]);
    let argv: Vec<String> = match remote {
        Remote::Distributed => {
            if let Some(hosts) = &args.remote_hosts {
                let list: Vec<&str> = hosts.split(',').map(str::trim).collect();
                provisioner_config["remote_hosts"] = json!(list);
                proxy_config["remote_hosts"] = json!(list.join(","));
            }
            // The hosts run this binary at this path; what it needs from this machine too.
            if let Ok(libtorch) = detect_libtorch() {
                env.insert("LIBTORCH".to_owned(), libtorch.dir.display().to_string());
            }
            [executable, "launch"]
                .into_iter()
                .chain(LAUNCH_ARGS)
                .map(str::to_owned)
                .collect()
        }
        Remote::Kubernetes | Remote::Docker => {
            let Some(image) = &args.image else {
                bail!(
                    "--remote {} needs --image: the tchbook kernel image your cluster pulls (built \
                     from this repository's Dockerfile, see the README's \"Remote GPU kernels\")",
                    remote.to_possible_value().expect("named").get_name()
                );
            };
            provisioner_config["image_name"] = json!(image);
            proxy_config["image_name"] = json!(image);
            env.insert("KERNEL_UID".to_owned(), "1000".to_owned());
            env.insert("KERNEL_GID".to_owned(), "100".to_owned());
            if remote == Remote::Kubernetes && args.gpus > 0 {
                env.insert("KERNEL_GPUS".to_owned(), args.gpus.to_string());
            }
            let script = spec_dir.join("scripts").join(
                Path::new(remote.launcher_scripts()[0])
                    .file_name()
                    .expect("a file"),
            );
            ["python".to_owned(), script.display().to_string()]
                .into_iter()
                .chain(LAUNCH_ARGS.map(str::to_owned))
                .collect()
        }
    };
    let metadata = HashMap::from([
        ("debugger".to_owned(), Value::Bool(true)),
        // gateway_provisioners (0.5) passes its `transport_encryption` policy to the launcher
        // through `{transport_encryption}`; the launcher returns the keys it made.
        ("supported_encryption".to_owned(), json!(["curve"])),
        (
            "kernel_provisioner".to_owned(),
            json!({ "provisioner_name": provisioner, "config": provisioner_config }),
        ),
        (
            "process_proxy".to_owned(),
            json!({ "class_name": process_proxy, "config": proxy_config }),
        ),
    ]);
    Ok(JupyterKernelspec {
        argv,
        display_name: remote.display_name().to_owned(),
        language: "rust".to_owned(),
        metadata: Some(metadata),
        interrupt_mode: Some("signal".to_owned()),
        env: Some(env),
    })
}

/// Writes the spec for `args.remote` under `location`; returns its directory.
pub fn install(location: &Location, args: &RemoteArgs) -> Result<PathBuf> {
    let remote = args.remote.context("install --remote needs a place")?;
    let dir = install::kernelspec_dir(location)?.with_file_name(remote.kernel_name());
    let executable = std::env::current_exe()?.canonicalize()?;
    let spec = remote_kernelspec(args, remote, &dir, &executable.display().to_string())?;
    let scripts = remote.launcher_scripts();
    if !scripts.is_empty() {
        let launchers = gateway_launchers()?;
        let to_dir = dir.join("scripts");
        std::fs::create_dir_all(&to_dir)
            .with_context(|| format!("creating {}", to_dir.display()))?;
        for script in scripts {
            let from = launchers.join(script);
            let to = to_dir.join(Path::new(script).file_name().expect("a file"));
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
    }
    install::write_kernelspec(&dir, &spec)?;
    println!(
        "Installed the {} kernelspec in {}",
        remote.kernel_name(),
        dir.display()
    );
    Ok(dir)
}

/// gateway_provisioners' `kernel-launchers/` directory, from the Python on PATH (the one the
/// gateway runs), else tchbook's venv.
fn gateway_launchers() -> Result<PathBuf> {
    let venv = std::env::var_os(crate::cellbuild::env::VENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::cellbuild::cache::cache_root().join("venv"));
    let pythons = [
        PathBuf::from("python3"),
        PathBuf::from("python"),
        venv.join("bin/python"),
    ];
    for python in &pythons {
        let output = crate::cellbuild::cache::tool(python)
            .args(["-c", "import importlib.util as u; s = u.find_spec('gateway_provisioners'); print(s.submodule_search_locations[0] if s else '')"])
            .output();
        let Ok(output) = output else { continue };
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if !dir.as_os_str().is_empty() && dir.join("kernel-launchers").is_dir() {
            return Ok(dir.join("kernel-launchers"));
        }
    }
    bail!(
        "gateway_provisioners is not installed for python3: a Kubernetes or Docker kernelspec \
         runs its container launcher on the gateway. Install it where the gateway runs \
         (`pip install 'gateway_provisioners[k8s]==0.5.0'`, or `[docker]`) and run this again"
    )
}
