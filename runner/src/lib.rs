//! The headless runner of an exported notebook: `tchbook export` writes this crate, unchanged,
//! into every exported project as `tchbook-runner/` (the kernel embeds it, build.rs), and the
//! project's generated `src/main.rs` calls [`run`]. It depends on std, libc, serde_json and
//! `tchbook_wire` (the prelude's messages, read as the kernel reads them; the error reports and
//! the record, made as the kernel makes them) only; the prelude is reached through the `attach`
//! function the generated `main` passes in.
//!
//! The exported program runs the cells in order in one process, as "run all" does in the kernel,
//! and its output goes through the same prelude code as in the kernel: [`run`] points fds 1 and 2
//! at pipes of its own and then calls the prelude's `runtime::attach()`, which installs the
//! SIGINT flag, limits CPU tensors to memory and swap, loads CUDA where a driver is and starts its
//! stdout/stderr pump. From then on every display, update, clear and partial line reaches this
//! runner as the kernel would see it (DEVELOPERS.md, "The live display line protocol"), a cell's
//! final value arrives as evcxr's `EVCXR_BEGIN_CONTENT` blocks, and the runner turns them into
//! - text on the real stdout/stderr (a batch job's log): streams as printed, each display's
//!   `text/plain` when it appears and, for displays updated in place (progress bars, loss plots,
//!   run tables), again at most every `UPDATE_PRINT_INTERVAL` and once more when the cell ends;
//! - with `--record FILE`, each cell's outputs as nbformat outputs (`stream`, `display_data`,
//!   `execute_result`, `error`), updates and clears applied as nbclient applies them, rewritten
//!   after every cell so a killed job keeps what it did. `tchbook export --merge FILE NB.ipynb`
//!   writes them into the notebook.
//!
//! Cell ends are found in-band: the runner writes a sync line to stderr and waits until its
//! reader sees it, then one to stdout, so everything a cell printed (including a partial line the
//! pump flushed to stdout on behalf of stderr) is in before the cell's outputs are closed.
//!
//! Errors are the kernel's (`tchbook_wire::report`): a panic on the main thread ends the cell
//! with an `error` output (`panic`, `TorchError`, `OutOfMemoryError`, or `KeyboardInterrupt` for
//! the prelude's interrupt panic) and stops the run, as "run all" stops, unless the cell is
//! tagged `raises-exception`; a panic on another thread is stderr
//! text; an error returned by `?` is printed to stderr as evcxr prints it, and stops the run
//! (later cells may need what that cell did not define).
//!
//! The files, by job:
//! - `process.rs`: the process-wide runner state the cells, the reader threads and the panic
//!   hook share;
//! - `capture.rs`: fds 1 and 2 on pipes, the reader threads, the sync at a cell's end;
//! - `reader.rs`: the lines read from the pipes (display protocol, content blocks, sync lines);
//! - `outputs.rs`: a cell's outputs as nbformat outputs, and the text printed for them;
//! - `cells.rs`: what the generated cells call (`begin`, `end`, `:timing`, `:fmt`, `:types`);
//! - `failure.rs`: panics and interrupts as the kernel reports them;
//! - `record.rs`: the `--record` file (`tchbook_wire::record`'s types).

mod capture;
mod cells;
mod failure;
mod outputs;
mod process;
mod reader;
mod record;

// What the generated cells call.
pub use cells::{allow_error, begin, end, set_format, toggle_timing, toggle_types};

use process::{RUNNER, Runner, lock, runner};
use std::io::Write;
use std::process::ExitCode;
use tchbook_wire::StreamName;

/// The exported program allocates as its notebook did in the kernel: through mimalloc, which
/// (its `override` feature) takes the place of glibc's malloc for libtorch too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The notebook a program was exported from.
pub struct Notebook {
    /// The file name, for messages and the record.
    pub name: &'static str,
    /// The version of tchbook that exported it.
    pub exported_by: &'static str,
    /// The git commit of the repository it was exported from, if it was in one.
    pub commit: Option<&'static str>,
    /// Per code cell, in order: its index among the notebook's cells, a hash of its source
    /// (`--merge` refuses a record whose cells have changed since) and the source itself.
    pub cells: &'static [(usize, &'static str, &'static str)],
    /// The generated `src/main.rs`: a panic's location is a line there, shown as the cell's line.
    pub main_rs: &'static str,
}

/// What `?` returns in a cell: like evcxr, any error that displays converts, and its message is
/// printed to stderr where it happens.
pub struct CellError;

impl<T: std::fmt::Display> From<T> for CellError {
    fn from(error: T) -> Self {
        eprintln!("{error}");
        CellError
    }
}

/// Runs the notebook: parses the arguments, captures output, calls `attach` (the prelude's
/// `runtime::attach`), then `cells`, and records and prints what they show.
pub fn run(
    notebook: &'static Notebook,
    attach: fn(),
    interrupt_pending: fn() -> bool,
    cells: fn() -> Result<(), CellError>,
) -> ExitCode {
    let record_path = match parse_args(notebook) {
        Ok(record) => record,
        Err(code) => return code,
    };
    let ran = record::this_run(notebook);
    if RUNNER
        .set(Runner::new(notebook, record_path, ran, interrupt_pending))
        .is_err()
    {
        eprintln!("tchbook_runner::run was called twice");
        return ExitCode::FAILURE;
    }
    // This run's line key: the prelude keys its protocol lines with it, and the reader takes
    // no other line for protocol, so whatever a cell prints stays text (`tchbook_wire::key`).
    // SAFETY: the generated `main` calls `run` first, and this process starts its first other
    // thread below (`capture_output`), so no thread reads the environment meanwhile.
    unsafe { std::env::set_var(tchbook_wire::env::LINE_KEY, capture::new_line_key()) };
    capture::capture_output();
    // The blocking calls an interrupt ends (a sleep, a read of a pipe, a wait for a child): the
    // prelude's `attach` registers its flag with them (this program's build script exports the
    // registration's name), as in the kernel's evaluation process.
    tchbook_waits::keep();
    attach();
    failure::install_panic_hook();
    failure::watch_interrupts(interrupt_pending);
    let outcome = std::panic::catch_unwind(cells);
    let runner = runner();
    let code = match outcome {
        Ok(Ok(())) => 0,
        Ok(Err(CellError)) => {
            capture::sync();
            let at = lock(runner).current().map_or(0, |c| c.execution_count);
            let message = format!(
                "tchbook: the run stopped in In [{at}]: an error returned by `?` (printed above)\n"
            );
            lock(runner).print(StreamName::Stderr, &message);
            1
        }
        Err(_) => {
            failure::record_panic();
            1
        }
    };
    let written = record::write_record(code == 0);
    let _ = std::io::stdout().flush();
    // The pump threads never end; leave without waiting for them.
    std::process::exit(if written { code } else { 1 });
}

/// The `--record` file asked for, or the exit code for `--help` and bad arguments.
fn parse_args(notebook: &Notebook) -> Result<Option<std::path::PathBuf>, ExitCode> {
    let mut record = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--record" => match args.next() {
                Some(path) => record = Some(std::path::PathBuf::from(path)),
                None => {
                    eprintln!("--record needs a file name\n\n{}", usage(notebook));
                    return Err(ExitCode::from(2));
                }
            },
            "-h" | "--help" => {
                println!("{}", usage(notebook));
                return Err(ExitCode::SUCCESS);
            }
            other => {
                eprintln!("unknown argument {other}\n\n{}", usage(notebook));
                return Err(ExitCode::from(2));
            }
        }
    }
    Ok(record)
}

fn usage(notebook: &Notebook) -> String {
    format!(
        "{name}, exported by {by}: runs the notebook's cells in order, headless.\n\n\
         usage: {program} [--record FILE]\n\n\
         --record FILE  also write every cell's outputs as Jupyter outputs to FILE (JSON);\n\
         \x20              `tchbook export --merge FILE {name}` puts them into the notebook\n\n\
         Needs libtorch's lib/ on LD_LIBRARY_PATH. Exits 0 when every cell ran, 1 when one\n\
         failed (its error is printed and recorded).",
        name = notebook.name,
        by = notebook.exported_by,
        program = std::env::args()
            .next()
            .unwrap_or_else(|| "notebook".to_owned()),
    )
}
