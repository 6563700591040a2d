//! Starting the engine: the build directory seeded (and repaired) from the build cache, the
//! evaluation process, and the start-up cell that loads the prelude and the panic hook.

use super::diagnostics::describe_evcxr_error;
use super::evaluate::{release_freed_memory, State};
use super::pump::PumpMessage;
use super::{EngineOptions, Interrupter, Startup, PRELUDE_IMPORT};
use crate::cache::{self, BuildCache};
use crossbeam_channel::Sender;
use evcxr::{CommandContext, EvalContext};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Installed in the evaluation process (in the cells' world: cells link their own libstd, so a
/// hook set from the kernel binary would never see their panics). It reports a panic as one
/// `TCHBOOK_PANIC` line, which `display` reads; it replaces the default hook, whose output
/// (with `RUST_BACKTRACE=1`, which evcxr sets) would bury the message in a backtrace.
pub(super) const PANIC_HOOK: &str = r#"{
    // The cells' libstd never saw the runtime's main thread start, so it has no name there;
    // its id, taken now (start-up runs on that thread), tells a cell's own panic from a
    // panic in a thread the cell spawned.
    let main_thread = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        fn escape(text: &str) -> String {
            let mut out = String::new();
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out
        }
        let payload = info.payload();
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            text.to_string()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "Box<dyn Any>".to_string()
        };
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let current = std::thread::current();
        let thread = current.name().unwrap_or("<unnamed>");
        println!(
            "TCHBOOK_PANIC {{\"message\":\"{}\",\"location\":\"{}\",\"thread\":\"{}\",\"main\":{}}}",
            escape(&message),
            escape(&location),
            escape(thread),
            current.id() == main_thread
        );
    }));
};"#;

pub(super) fn start(
    options: &EngineOptions,
    pump: &Sender<PumpMessage>,
    interrupter: &Interrupter,
) -> anyhow::Result<(State, Startup)> {
    let stamp = options
        .prelude
        .as_ref()
        .map(|(_, stamp)| stamp.as_str())
        .unwrap_or("");
    // Repairs made on the way, told with the first cell.
    let mut repairs = Vec::new();
    // Holding the template lock while the first full build runs makes kernels started at the
    // same time wait for it instead of each compiling tch.
    let template_lock = match (&options.cache, options.prelude.is_ok()) {
        (Some(cache), true) => seed_build_dir(cache, &options.build_dir, stamp, &mut repairs)?,
        _ => None,
    };
    let seeded = cache::is_ready(&options.build_dir, stamp);
    let mut state = spawn_evaluation_process(options, pump, interrupter)?;
    let mut startup = Startup {
        warning: None,
        usable: true,
        cuda_devices: None,
        elapsed: Duration::ZERO,
    };
    match &options.prelude {
        Ok((dir, _)) => {
            load_prelude(&mut state, &mut startup, dir, seeded);
            if state.prelude_loaded {
                cache::mark_ready(&options.build_dir, stamp)
                    .map_err(|error| anyhow::anyhow!(cache::explain(&error)))?;
                if let (Some(cache), Some(_lock)) = (&options.cache, &template_lock) {
                    keep_as_template(&mut state, cache, &options.build_dir);
                }
            }
        }
        Err(why) => {
            startup.warning = Some(why.clone());
            state.install_panic_hook();
        }
    }
    drop(template_lock);
    release_freed_memory();
    if !repairs.is_empty() {
        repairs.extend(startup.warning.take());
        startup.warning = Some(repairs.join("\n"));
    }
    Ok((state, startup))
}

/// Makes `build_dir` ready for `stamp` from the cache's template, repairing damage on the way
/// (each repair is added to `repairs`). Returns the template lock when this kernel must make
/// the first full build and keep it as the template.
fn seed_build_dir(
    cache: &BuildCache,
    build_dir: &Path,
    stamp: &str,
    repairs: &mut Vec<String>,
) -> anyhow::Result<Option<File>> {
    let explained = |error: anyhow::Error| anyhow::anyhow!(cache::explain(&error));
    if cache::is_ready(build_dir, stamp) {
        if let Some(damage) = repair(build_dir).map_err(explained)? {
            repairs.push(format!(
                "This kernel's build directory {} was damaged:\n{damage}\nIt was set up again.",
                build_dir.display(),
            ));
        }
    }
    if cache::is_ready(build_dir, stamp) {
        return Ok(None);
    }
    let lock = cache.lock_template().map_err(explained)?;
    let template = cache.template_dir();
    if let Some(damage) = repair(&template).map_err(explained)? {
        repairs.push(format!(
            "The build cache's template {} was damaged:\n{damage}\nThose files were built \
             again (once, by this kernel's start).",
            template.display(),
        ));
    }
    if cache::is_ready(&template, stamp) {
        if !cache::has_manifest(&template) {
            // Made before sizes were recorded, and whole (`verify` looked at every
            // library): record them now.
            cache::write_manifest(&template).map_err(explained)?;
        }
        tracing::info!("seeding {} from the template", build_dir.display());
        cache::copy_build_dir(&template, build_dir).map_err(explained)?;
        return Ok(None);
    }
    if template.join("target").is_dir() {
        // What the template has (tch, an older prelude) need not be built again: cargo
        // rebuilds only what is missing or out of date.
        cache::copy_build_dir(&template, build_dir).map_err(explained)?;
    }
    Ok(Some(lock))
}

/// Removes the damaged files of a build directory; returns what was wrong, if anything.
fn repair(dir: &Path) -> anyhow::Result<Option<String>> {
    let damage = cache::verify(dir);
    if damage.is_empty() {
        return Ok(None);
    }
    let described = cache::describe(&damage);
    tracing::warn!("{} is damaged:\n{described}", dir.display());
    cache::remove_damaged(dir, &damage)?;
    Ok(Some(described))
}

/// Starts the evaluation process (this binary, re-executed by evcxr) and evcxr's context.
fn spawn_evaluation_process(
    options: &EngineOptions,
    pump: &Sender<PumpMessage>,
    interrupter: &Interrupter,
) -> anyhow::Result<State> {
    let mut command = std::process::Command::new(std::env::current_exe()?);
    // Its own process group: the SIGINT Jupyter sends to the kernel's group must not reach
    // the evaluation process; the kernel decides what an interrupt does.
    command.process_group(0);
    // Cells link libstd dynamically. Their RUNPATH points at the toolchain relative to
    // target/<triple>/debug/deps, but evcxr loads them from one directory up, where that
    // relative path is one level short whenever the build directory and the toolchain share
    // a parent (both under $HOME: ~/.cache/tchbook and ~/.rustup). Say where libstd is.
    let mut library_path = std::ffi::OsString::new();
    for dir in options
        .libtorch_lib
        .iter()
        .cloned()
        .chain(rustc_target_libdir())
    {
        library_path.push(dir);
        library_path.push(":");
    }
    if let Some(existing) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path.push(existing);
    }
    command.env("LD_LIBRARY_PATH", library_path);
    // SAFETY: prctl is async-signal-safe. The evaluation process dies with the kernel even
    // when the kernel is SIGKILLed, instead of living on with a notebook's tensors. SIGTERM,
    // not SIGKILL: the prelude's handler (`runtime::attach`) then ends the processes its cells
    // started too (its process group). The engine thread, which spawns every evaluation
    // process, lives as long as the kernel, so the signal never comes early.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let begun = Instant::now();
    let (eval_context, outputs) =
        EvalContext::with_subprocess_command(command).map_err(|e| anyhow::anyhow!("{e}"))?;
    tracing::debug!("evcxr's context took {:.0?}", begun.elapsed());
    let _ = pump.send(PumpMessage::Attach(outputs));
    let mut context = CommandContext::with_eval_context(eval_context);
    interrupter.attach(context.process_handle());
    context
        .set_opt_level(&options.cell_opt_level)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(State::new(
        context,
        pump.clone(),
        interrupter.clone(),
        options.build_dir.clone(),
    ))
}

/// The start-up cell: the prelude as a dependency, its names in scope, the panic hook, the
/// prelude's runtime. On failure the kernel still runs plain Rust, and the first cell says why.
fn load_prelude(state: &mut State, startup: &mut Startup, dir: &Path, seeded: bool) {
    if seeded {
        // Everything is in the local registry cache already; skip the index.
        let _ = state.context.execute(":offline 1");
    }
    let loaded = state.context.execute(&format!(
        ":dep tchbook_prelude = {{ path = {:?}, package = \"tchbook-prelude\" }}\n\
         {PRELUDE_IMPORT}\n\
         {PANIC_HOOK}\n\
         tchbook_prelude::runtime::attach();\n\
         tch::Cuda::device_count()",
        dir.display().to_string()
    ));
    if seeded {
        let _ = state.context.execute(":offline 0");
    }
    match loaded {
        Ok(outputs) => {
            tracing::debug!(
                "the start-up cell took {}",
                outputs
                    .phases
                    .iter()
                    .map(|p| format!("{} {:.0?}", p.name, p.duration))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            state.prelude_loaded = true;
            startup.cuda_devices = outputs
                .get("text/plain")
                .and_then(|text| text.trim().parse().ok());
        }
        Err(error) => {
            let message = describe_evcxr_error(&error);
            tracing::error!("loading the prelude failed: {message}");
            startup.warning = Some(format!(
                "The tchbook prelude could not be loaded, so `Tensor`, `Device`, `nn` \
                 and the prelude's helpers are not in scope:\n{message}"
            ));
            state.install_panic_hook();
        }
    }
}

/// The first full build, kept for every later kernel. The real cargo built it; one replayed
/// build first leaves the incremental cache as replays, with their link plan, want it
/// (cargo_front/link.rs), or each kernel's first cell would pay for the switch.
fn keep_as_template(state: &mut State, cache: &BuildCache, build_dir: &Path) {
    let _ = state.context.execute("()");
    let template = cache.template_dir();
    if let Err(error) = cache::copy_build_dir(build_dir, &template) {
        tracing::warn!("could not keep the build as the template: {error:#}");
    }
}

/// The toolchain's library directory (where `libstd-*.so` lives).
fn rustc_target_libdir() -> Option<PathBuf> {
    let output = std::process::Command::new("rustc")
        .args(["--print", "target-libdir"])
        .output()
        .ok()?;
    let dir = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}
