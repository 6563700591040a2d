use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use jupyter_protocol::ConnectionInfo;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tchbook::build::cache::BuildCache;
use tchbook::build::libtorch::detect_libtorch;
use tchbook::build::{env, Role};
use tchbook::completion::Completer;
use tchbook::dispatch::{self, Facts, Shared, Shell};
use tchbook::engine::{Engine, EngineOptions, PRELUDE_IMPORT};
use tchbook::install::{self, Location};
use tchbook::transport;

/// tchbook: a Jupyter kernel for tensor notebooks in Rust.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Run the kernel on this connection file (what Jupyter passes).
    #[arg(long, global = false)]
    connection_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the kernel (Jupyter starts it this way, through kernel.json).
    Kernel {
        #[arg(long)]
        connection_file: PathBuf,
    },
    /// Install the kernelspec and build tch and the prelude up front.
    Install {
        #[command(flatten)]
        location: LocationArgs,
        /// Only write the kernelspec; build on first kernel start instead.
        #[arg(long)]
        no_build: bool,
    },
    /// Download a real data set (cifar10, mnist, fashion-mnist) where the prelude's loaders look
    /// for it: ROOT/cifar-10-batches-bin, ROOT/MNIST/raw, ROOT/FashionMNIST/raw.
    Download {
        /// cifar10, mnist or fashion-mnist.
        dataset: String,
        /// The directory a notebook passes as `root` (`Mnist::new("data", ...)`).
        #[arg(long, value_name = "DIR", default_value = "data")]
        root: PathBuf,
    },
    /// Remove the kernelspec.
    Uninstall {
        #[command(flatten)]
        location: LocationArgs,
    },
    /// Print what the kernel would use (libtorch, rustc, kernelspec), check the build cache
    /// file by file and repair what is damaged.
    Doctor,
    /// rust-analyzer in a process of its own, for a kernel's completion and hover (the kernel
    /// starts it; requests on stdin, replies on stdout, one JSON line each).
    #[command(hide = true)]
    Analyzer {
        /// Its root: holds the analysed crate's Cargo.toml; it writes src/lib.rs there.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Turn a notebook into a Cargo project whose one binary runs it headless (`--record FILE`
    /// records its outputs), or, with --merge, write such a record back into the notebook.
    Export {
        /// The notebook (.ipynb).
        notebook: PathBuf,
        /// The project's directory (default: the notebook's name without .ipynb, beside it).
        #[arg(short = 'o', long = "out", value_name = "DIR")]
        out_dir: Option<PathBuf>,
        /// Depend on this prelude crate by path instead of copying the kernel's embedded one
        /// into the project (a copy builds wherever the project directory goes).
        #[arg(long, value_name = "DIR")]
        prelude: Option<PathBuf>,
        /// Write the outputs recorded in FILE (by the exported binary's --record) into the
        /// notebook instead of exporting it.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["out_dir", "prelude"])]
        merge: Option<PathBuf>,
    },
}

#[derive(Args)]
#[group(multiple = false)]
struct LocationArgs {
    /// Install for the current user (the default; honours JUPYTER_DATA_DIR).
    #[arg(long)]
    user: bool,
    /// Install into the prefix of the Python on PATH (e.g. a venv).
    #[arg(long)]
    sys_prefix: bool,
    /// Install into DIR/share/jupyter.
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
}

impl LocationArgs {
    fn location(&self) -> Location {
        match (&self.prefix, self.sys_prefix) {
            (Some(dir), _) => Location::Prefix(dir.clone()),
            (None, true) => Location::SysPrefix,
            _ => Location::User,
        }
    }
}

fn main() -> ExitCode {
    // evcxr, cargo and rustc run this binary too (the evaluation process, evcxr's cargo, its
    // rustc wrapper, a cell's linker): which role this process plays is decided first.
    if let Some(code) = Role::of_this_process().run() {
        return ExitCode::from(u8::try_from(code).unwrap_or(101));
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env(tchbook_wire::env::LOG)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,tchbook=info")),
        )
        .init();
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Some(Command::Kernel { .. } | Command::Install { .. } | Command::Doctor) | None
    ) {
        // Before any thread starts: it sets environment variables evcxr reads.
        env::set_for_cargo_front();
    }
    let result = match (cli.command, cli.connection_file) {
        (Some(Command::Kernel { connection_file }), _) | (None, Some(connection_file)) => {
            run_kernel(&connection_file)
        }
        (Some(Command::Install { location, no_build }), _) => {
            install::install(&location.location(), !no_build)
        }
        (Some(Command::Uninstall { location }), _) => install::uninstall(&location.location()),
        (Some(Command::Download { dataset, root }), _) => tchbook::download::run(&dataset, &root),
        (
            Some(Command::Export {
                notebook,
                out_dir,
                prelude,
                merge,
            }),
            _,
        ) => match merge {
            Some(record) => tchbook::export::merge(&record, &notebook),
            None => tchbook::export::export(&tchbook::export::ExportOptions {
                notebook,
                out_dir,
                prelude,
            })
            .map(|dir| println!("{}", dir.display())),
        },
        (Some(Command::Doctor), _) => install::doctor(&rustc_version().1),
        (Some(Command::Analyzer { dir }), _) => tchbook::completion::server::serve(&dir),
        (None, None) => {
            eprintln!("tchbook: give a command (install, uninstall, kernel) or --connection-file");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tchbook: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `("1.95.0", "rustc 1.95.0 (59807616e 2026-04-14)")`.
fn rustc_version() -> (String, String) {
    let banner = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "rustc not found on PATH".to_owned());
    let version = banner
        .split_whitespace()
        .nth(1)
        .unwrap_or("unknown")
        .to_owned();
    (version, banner)
}

fn run_kernel(connection_file: &PathBuf) -> Result<()> {
    let text = std::fs::read_to_string(connection_file)
        .with_context(|| format!("reading the connection file {}", connection_file.display()))?;
    let connection: ConnectionInfo = serde_json::from_str(&text)
        .with_context(|| format!("parsing the connection file {}", connection_file.display()))?;

    // Everything that writes the environment happens here, before any thread starts.
    let libtorch = detect_libtorch();
    let cache = BuildCache::new(libtorch.as_ref().ok().and_then(|l| l.version.as_deref()));
    let prelude = match &libtorch {
        Ok(_) => cache.prepare().map_err(|e| format!("{e:#}")),
        Err(why) => Err(why.clone()),
    };
    // A cache that cannot be written (read-only, full) must not stop the kernel: it starts
    // in a scratch directory and the first cell says what is wrong.
    let build = cache.build_dir();
    let usable_cache = build.problem.is_none();
    let prelude = match &build.problem {
        Some(why) => Err(why.clone()),
        None => prelude,
    };
    env::set_for_build(libtorch.as_ref().ok(), &build.dir);
    let (rustc_version, rustc_banner) = rustc_version();
    let facts = Facts {
        rustc_version,
        rustc_banner,
        torch: libtorch.as_ref().ok().and_then(|l| l.version.clone()),
        libtorch_dir: libtorch.as_ref().ok().map(|l| l.dir.display().to_string()),
        cuda_devices: None,
    };
    let grace = std::env::var(tchbook_wire::env::INTERRUPT_GRACE)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(3), Duration::from_secs_f64);
    let build_dir = build.dir.clone();
    let cache_dir = usable_cache.then(|| cache.dir.clone());
    let options = EngineOptions {
        build_dir: build.dir.clone(),
        cache: usable_cache.then_some(cache),
        prelude: prelude.map_err(|why| why.to_string()),
        libtorch_lib: libtorch.as_ref().ok().map(|l| l.lib_dir()),
        interrupt_grace: grace,
        cell_opt_level: env::cell_opt_level(),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let session = uuid_like();
        let sockets = transport::bind(&connection, &session).await?;
        let completer = Completer::new(&build_dir, cache_dir.as_deref(), PRELUDE_IMPORT);
        let engine = Engine::spawn(options);
        let interrupter = engine.interrupter.clone();
        tchbook::engine::exit_with_parent(interrupter.clone());
        let (shutdown_tx, mut shutdown_rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Shared {
            iopub: sockets.iopub.clone(),
            facts: Arc::new(Mutex::new(facts)),
            shutdown: shutdown_tx,
        };
        tokio::spawn(dispatch::run_control(
            sockets.control,
            shared.clone(),
            interrupter.clone(),
        ));
        tokio::spawn(Shell::new(shared, sockets.shell, sockets.stdin, engine, completer).run());

        use tokio::signal::unix::{signal, SignalKind};
        // interrupt_mode "signal": Jupyter sends SIGINT to the kernel's process group. The
        // evaluation process has a group of its own, so only we get it, and forward it.
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        loop {
            tokio::select! {
                _ = sigint.recv() => {
                    tracing::info!("SIGINT: interrupting the running cell");
                    interrupter.interrupt();
                }
                _ = sigterm.recv() => {
                    interrupter.kill();
                    break;
                }
                restart = shutdown_rx.recv() => {
                    tracing::info!("shutdown requested (restart: {})", restart.unwrap_or(false));
                    interrupter.kill();
                    // Let the writer tasks send the shutdown reply before the process ends.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    break;
                }
            }
        }
        anyhow::Ok(())
    })?;
    drop(build);
    // Exit without running destructors: evcxr's would wait for the (killed) child.
    std::process::exit(0)
}

/// A random session id (the kernel's own; clients identify themselves in their headers).
fn uuid_like() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut file) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = file.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
