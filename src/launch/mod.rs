//! `tchbook launch`: the kernel launcher that Jupyter Enterprise Gateway and
//! gateway_provisioners start on a remote host, in a Docker container or in a Kubernetes pod.
//!
//! The gateways ship launchers for Python, R and Scala (`launch_ipykernel.py` with
//! `server_listener.py`, `launch_IRkernel.R`, the Toree launcher); this is the same contract
//! in the kernel binary, so a tchbook pod needs no Python:
//!
//! 1. [`args`]: take `--kernel-id`, `--port-range`, `--response-address`, `--public-key`
//!    (or, in a pod, `KERNEL_ID`, `PORT_RANGE`, `RESPONSE_ADDRESS`, `PUBLIC_KEY`) and accept
//!    the other arguments the gateways pass.
//! 2. [`ports`]: pick the kernel's five ports and the communication port inside the range.
//! 3. [`response`]: send the connection information (with a CurveZMQ key pair made here when
//!    the gateway's `--transport-encryption` asks for one), plus `pid`, `pgid`, `comm_port` and
//!    `kernel_id`, to the response address, AES- and RSA-encrypted as the gateways decode it.
//!    A key that cannot be read or a response address that does not answer ends the launch
//!    at once with an error naming which, on stderr (the gateway's kernel log).
//! 4. [`listener`]: serve signal and shutdown requests on the communication port.
//! 5. Run the kernel on that connection information, its sockets bound to `--ip`
//!    (`0.0.0.0` as the launchers write it; the gateway connects to the host it launched on).
//!
//! The connection information is sent before the kernel binds, as the Python launcher does:
//! the gateway's ZeroMQ sockets connect lazily and retry. It reaches the kernel through an
//! anonymous memory file, so the signing key is never written to a disk.
//!
//! [`kernelspec`] writes the kernelspecs that make a gateway start this
//! (`tchbook install --remote kubernetes|docker|distributed`).

mod args;
pub mod kernelspec;
mod listener;
mod ports;
mod response;

pub use args::LaunchArgs;

use anyhow::{Context, Result};
use jupyter_protocol::{ConnectionInfo, Transport};
use std::net::IpAddr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

/// A launch whose connection information the gateway has: run the kernel on
/// `connection_file`.
pub struct Launched {
    pub connection_file: PathBuf,
    /// Keeps the memory file (and so `connection_file`) open while the kernel runs.
    _file: OwnedFd,
}

/// Steps 1–4 of the module docs; the caller runs the kernel (step 5).
pub fn start(args: &LaunchArgs) -> Result<Launched> {
    // (`main` has filled in the login environment, before any thread started.)
    let request = args.resolve()?;
    // Everything that can be wrong with the arguments is found before the gateway is told
    // anything, so it never connects to a kernel that is about to exit.
    let public_key = response::parse_public_key(&request.public_key)?;
    let range = ports::PortRange::parse(request.port_range.as_deref())?;
    let ip: IpAddr = request
        .ip
        .parse()
        .with_context(|| format!("--ip {:?} is not an IP address", request.ip))?;
    let ports = ports::select(range, ip)?;
    let [shell_port, iopub_port, stdin_port, hb_port, control_port] = ports.kernel;
    let connection = ConnectionInfo {
        ip: request.ip.clone(),
        transport: Transport::TCP,
        shell_port,
        iopub_port,
        stdin_port,
        control_port,
        hb_port,
        key: uuid::Uuid::new_v4().to_string(),
        signature_scheme: "hmac-sha256".to_owned(),
        kernel_name: None,
    };
    let comm_port = ports.comm.local_addr()?.port();
    let mut info = serde_json::to_value(&connection)?;
    if request.encrypted {
        // The keys go to the gateway with the rest (RSA- and AES-encrypted) and to the kernel
        // through the memory file, never to a disk.
        let keys = zeromq::CurveKeyPair::generate();
        info["curve_publickey"] = keys.public_z85().into();
        info["curve_secretkey"] = zeromq::z85_encode_key(&keys.secret_key()).into();
    }
    let mut reply = info.clone();
    // SAFETY: getpid/getpgid(0) cannot fail for the calling process.
    let (pid, pgid) = unsafe { (libc::getpid(), libc::getpgid(0)) };
    reply["pid"] = pid.into();
    reply["pgid"] = pgid.into();
    reply["comm_port"] = comm_port.into();
    reply["kernel_id"] = request.kernel_id.clone().into();

    // The listener runs before the gateway learns the port, so its first poll finds it.
    listener::spawn(ports.comm).context("starting the gateway listener thread")?;
    let payload = response::encrypt(&reply, &public_key)?;
    response::send(&request.response_address, &payload)?;
    tracing::info!(
        "kernel {}: connection information sent to {}; communication port {comm_port}",
        request.kernel_id,
        request.response_address
    );
    let (connection_file, file) = memory_file(&serde_json::to_vec(&info)?)?;
    Ok(Launched {
        connection_file,
        _file: file,
    })
}

/// Enterprise Gateway starts a kernel on its own host with a bare environment (the `KERNEL_*`
/// variables and whatever its `EG_INHERITED_ENVS` names), where an ssh login or a pod would
/// have set `HOME` and `PATH`; the build cache, rustup and cargo live under `HOME`, and cells
/// need `rustc` and `cc` on `PATH`. What is missing is filled as a login fills it: `HOME` from
/// the password database, `PATH` as the system default with cargo's bin directory first.
/// Runs before any thread starts; `main` runs it first, and [`start`] again (it changes nothing
/// the second time).
///
/// # Safety
/// Writes this process's environment: call it only while the process has one thread
/// (`std::env::set_var`'s rule).
pub unsafe fn fill_login_environment() {
    if std::env::var_os("HOME").is_none() {
        // SAFETY: getpwuid(3) returns null or a pointer to a static entry, copied at once; no
        // other thread exists yet to call it concurrently.
        let home = unsafe {
            let entry = libc::getpwuid(libc::getuid());
            (!entry.is_null() && !(*entry).pw_dir.is_null())
                .then(|| std::ffi::CStr::from_ptr((*entry).pw_dir).to_owned())
        };
        if let Some(home) = home {
            let home: std::ffi::OsString =
                std::os::unix::ffi::OsStringExt::from_vec(home.into_bytes());
            tracing::info!("HOME is not set; using {}", home.to_string_lossy());
            // SAFETY: one thread, as this function's caller promises (# Safety).
            unsafe { std::env::set_var("HOME", home) };
        }
    }
    if std::env::var_os("PATH").is_none() {
        let cargo_bin = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
            .map(|dir| format!("{}:", dir.join("bin").display()))
            .unwrap_or_default();
        let path = format!("{cargo_bin}/usr/local/bin:/usr/bin:/bin");
        tracing::info!("PATH is not set; using {path}");
        // SAFETY: one thread, as this function's caller promises (# Safety).
        unsafe { std::env::set_var("PATH", path) };
    }
}

/// `contents` in an anonymous memory file (close-on-exec), readable at the returned path by
/// this process only.
fn memory_file(contents: &[u8]) -> Result<(PathBuf, OwnedFd)> {
    // SAFETY: a NUL-terminated name; the fd returned is checked and then owned.
    let fd = unsafe { libc::memfd_create(c"tchbook-connection".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create");
    }
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned.try_clone()?);
    std::io::Write::write_all(&mut file, contents)?;
    Ok((PathBuf::from(format!("/proc/self/fd/{fd}")), owned))
}
