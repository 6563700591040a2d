//! The kernel's wiring: a connection's sockets ([`crate::transport`]) and the shell and control
//! loops ([`crate::dispatch`]) on an engine, until a `shutdown_request`.
//!
//! [`serve`] takes any [`Evaluator`], so the protocol tests run the whole kernel in their own
//! process on a fake engine; [`run`] is the `tchbook kernel` process around it, on the real
//! engine set up from this machine (`setup`).

use crate::completion::Completer;
use crate::dispatch::{self, Facts, PanelsState, Shared, Shell};
use crate::engine::{Engine, Evaluator, Interrupts};
use crate::transport;
use anyhow::Result;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};

mod setup;

pub(crate) use crate::transport::{KernelConnection, read_connection_file};

pub use setup::rustc_version;

/// Binds `connection`'s sockets and serves Jupyter with `engine` until a client asks for a
/// shutdown (on control or shell). The evaluation process is gone by then; the sockets' tasks
/// live on until the runtime ends. Returns whether the client asked for a restart.
pub async fn serve<E: Evaluator>(
    connection: &KernelConnection,
    engine: E,
    completer: Completer,
    facts: Facts,
) -> Result<bool> {
    let sockets = transport::bind(connection, &session_id()).await?;
    let interrupter = engine.interrupter();
    let (shutdown_tx, mut shutdown_rx) = tokio::sync::mpsc::unbounded_channel();
    let shared = Shared {
        iopub: sockets.iopub.clone(),
        facts: Arc::new(Mutex::new(facts)),
        shutdown: shutdown_tx,
        panels: Arc::new(PanelsState::new(engine.debugger())),
        side_channel: crate::side_channel::SideChannel::new(engine.side_channel()),
    };
    tokio::spawn(dispatch::run_control(
        sockets.control,
        shared.clone(),
        interrupter.clone(),
    ));
    tokio::spawn(Shell::new(shared, sockets.shell, sockets.stdin, engine, completer).run());
    let restart = shutdown_rx.recv().await.unwrap_or(false);
    tracing::info!("shutdown requested (restart: {restart})");
    interrupter.kill();
    // Let the writer tasks send the shutdown reply before the kernel ends.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(restart)
}

/// A random session id (the kernel's own; clients identify themselves in their headers), as
/// ipykernel makes it: a version-4 UUID's 32 hex digits.
fn session_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Runs the `tchbook kernel` process on the connection file Jupyter wrote, with the real
/// engine, until a shutdown_request or SIGTERM; then exits the process. With `watch_parent`
/// the kernel also ends when the process that started it dies.
pub fn run(connection_file: &Path, watch_parent: bool) -> Result<()> {
    let connection = read_connection_file(connection_file)?;
    // Before the set-up, which may build the cache for minutes: a refused connection file says
    // so at once.
    transport::check_signing(&connection.info)?;
    // Everything that writes the environment happens here, before any thread starts.
    // SAFETY: `main` calls `run` as the kernel process's whole work, with no thread started.
    let setup = unsafe { setup::setup() };
    let engine = Engine::spawn(setup.options);
    serve_process(
        &connection,
        engine,
        setup.completer,
        setup.facts,
        watch_parent,
    )?;
    drop(setup.build);
    crate::cellbuild::cache::remove_private_root();
    // Exit without running destructors: evcxr's would wait for the (killed) child.
    std::process::exit(0)
}

/// [`serve`] in the kernel process's own runtime, with SIGINT forwarded to the running cell
/// and SIGTERM ending the kernel.
fn serve_process(
    connection: &KernelConnection,
    engine: Engine,
    completer: Completer,
    facts: Facts,
    watch_parent: bool,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let interrupter = engine.interrupter();
        if watch_parent {
            crate::engine::exit_with_parent(interrupter.clone());
        }
        // interrupt_mode "signal": Jupyter sends SIGINT to the kernel's process group. The
        // evaluation process has a group of its own, so only we get it, and forward it.
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        let served = serve(connection, engine, completer, facts);
        tokio::pin!(served);
        loop {
            tokio::select! {
                _ = sigint.recv() => {
                    tracing::info!("SIGINT: interrupting the running cell");
                    interrupter.interrupt();
                }
                _ = sigterm.recv() => {
                    interrupter.kill();
                    return Ok(());
                }
                served = &mut served => return served.map(drop),
            }
        }
    })
}
