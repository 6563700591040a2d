use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tchbook::Role;
use tchbook::install::{self, Location};

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
        #[command(flatten)]
        remote: tchbook::launch::kernelspec::RemoteArgs,
    },
    /// Start the kernel for Enterprise Gateway or gateway_provisioners (their kernelspec runs
    /// this): send the connection information to the gateway, serve its signal requests.
    Launch(tchbook::launch::LaunchArgs),
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
        #[arg(long, value_name = "FILE", conflicts_with_all = ["out_dir", "prelude", "force"])]
        merge: Option<PathBuf>,
        /// With --merge: also write, under each cell tagged `beside`, the text that cell printed
        /// in the run recorded in FILE (a second run of the same export, e.g. with CUDA hidden).
        #[arg(long, value_name = "FILE", requires = "merge")]
        beside: Option<PathBuf>,
        /// Write into the project's directory even if it holds something other than an
        /// earlier export (its Cargo.toml and src/main.rs are overwritten).
        #[arg(long)]
        force: bool,
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

/// Every role of this binary allocates through mimalloc, and so does every library it loads: with
/// mimalloc's `override` feature malloc, free and the rest are defined in this executable, which
/// exports them, so libtorch in the evaluation process (where a cell's tensors live) allocates
/// through mimalloc too, not through glibc's malloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // evcxr, cargo and rustc run this binary too (the evaluation process, evcxr's cargo, its
    // rustc wrapper, a cell's linker): which role this process plays is decided first.
    if let Some(code) = Role::of_this_process().run() {
        return ExitCode::from(u8::try_from(code).unwrap_or(101));
    }
    // Before any thread starts, and before this process starts any other: nothing it starts
    // may load libraries from the folder it runs in.
    // SAFETY: this process has one thread until `run` below (logging starts none).
    unsafe { tchbook::cellbuild::drop_relative_library_path() };
    init_logging();
    let Some(command) = Cli::parse().into_command() else {
        eprintln!("tchbook: give a command (install, uninstall, kernel) or --connection-file");
        return ExitCode::from(2);
    };
    let kernel = matches!(command, Command::Kernel { .. } | Command::Launch(_));
    if matches!(command, Command::Launch(_)) {
        // A gateway's bare environment has no HOME: the build cache's place comes from it.
        // SAFETY: still one thread (see above).
        unsafe { tchbook::launch::fill_login_environment() };
    }
    if kernel {
        // Before any thread starts: without a place for the build cache the kernel builds in a
        // private directory of its own (`TCHBOOK_CACHE_DIR` then names it for its children).
        // SAFETY: still one thread (see above).
        if let Err(error) = unsafe { tchbook::cellbuild::use_private_root() } {
            eprintln!("tchbook: {error:#}");
            return ExitCode::FAILURE;
        }
    }
    if kernel || matches!(command, Command::Install { .. } | Command::Doctor) {
        // Before any thread starts: it sets environment variables evcxr reads.
        // SAFETY: still one thread (see above).
        unsafe {
            tchbook::cellbuild::pin_toolchain();
            tchbook::cellbuild::set_for_cargo_front();
        }
    }
    let result = run(command);
    if kernel {
        tchbook::cellbuild::remove_private_root();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tchbook: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The log goes to stderr, which Jupyter front ends and nbconvert leave on the terminal they were
/// started from (ipykernel writes nothing there): warnings and errors only, unless `TCHBOOK_LOG`
/// asks for more in `EnvFilter` syntax (`info`, `tchbook=debug`). Colours only on a terminal, so
/// a log file or a captured pipe holds no escape codes.
fn init_logging() {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env(tchbook_wire::env::LOG)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
}

impl Cli {
    /// The command to run: `--connection-file` alone (what older kernelspecs pass) is `kernel`.
    fn into_command(self) -> Option<Command> {
        match (self.command, self.connection_file) {
            (Some(command), _) => Some(command),
            (None, Some(connection_file)) => Some(Command::Kernel { connection_file }),
            (None, None) => None,
        }
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Kernel { connection_file } => tchbook::kernel::run(&connection_file, true),
        // The gateway, not a parent process, owns a launched kernel's life (over ssh its
        // parent is a shell that exits at once).
        Command::Launch(args) => tchbook::launch::start(&args)
            .and_then(|launched| tchbook::kernel::run(&launched.connection_file, false)),
        Command::Install {
            location,
            remote:
                remote @ tchbook::launch::kernelspec::RemoteArgs {
                    remote: Some(_), ..
                },
            ..
        } => tchbook::launch::kernelspec::install(&location.location(), &remote).map(drop),
        Command::Install {
            location, no_build, ..
        } => install::install(&location.location(), !no_build),
        Command::Uninstall { location } => install::uninstall(&location.location()),
        Command::Download { dataset, root } => tchbook::download::run(&dataset, &root),
        Command::Export {
            notebook,
            merge: Some(record),
            beside,
            ..
        } => tchbook::export::merge(&record, &notebook, beside.as_deref()),
        Command::Export {
            notebook,
            out_dir,
            prelude,
            merge: None,
            force,
            ..
        } => tchbook::export::export(&tchbook::export::ExportOptions {
            notebook,
            out_dir,
            prelude,
            force,
        })
        .map(|dir| println!("{}", dir.display())),
        Command::Doctor => install::doctor(&tchbook::kernel::rustc_version().banner),
        Command::Analyzer { dir } => tchbook::completion::server::serve(&dir),
    }
}
