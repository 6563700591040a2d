//! Starting the engine: the build directory seeded (and repaired) from the build cache
//! (`cellbuild::seed`), the evaluation process (`cellbuild::process`) with evcxr's context on it, and
//! the start-up cell that loads the prelude and the panic hook.

use super::diagnostics::describe_evcxr_error;
use super::evaluate::{State, release_freed_memory};
use super::pump::PumpMessage;
use super::{EngineOptions, Interrupter, PRELUDE_IMPORT, Startup};
use crate::cellbuild::{process, seed};
use crossbeam_channel::Sender;
use evcxr::{CommandContext, EvalContext};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    // The cache seeds and keeps build directories only where there is a prelude to build.
    let cache = options.cache.as_ref().filter(|_| options.prelude.is_ok());
    let mut seeded = seed::prepare(cache, &options.build_dir, stamp)?;
    // A kernel that ended with the debugger on left its cell's name for the builds.
    let _ = crate::cellbuild::cargo_front::set_debug_source(&options.build_dir, None);
    let mut repairs: Vec<String> = crate::cellbuild::cache::private_root_note()
        .into_iter()
        .chain(std::mem::take(&mut seeded.repairs))
        .collect();
    let mut state = spawn_evaluation_process(options, pump, interrupter)?;
    let mut startup = Startup {
        warning: None,
        cuda_devices: None,
        elapsed: Duration::ZERO,
    };
    match &options.prelude {
        Ok((dir, _)) => {
            load_prelude(&mut state, &mut startup, dir, seeded.ready);
            if !state.prelude_loaded && cache.is_some() {
                // The sizes looked right at the start; the contents may not be (a file
                // overwritten at its full size). Read them, and if that was it, rebuild what
                // is damaged and load again in a fresh evaluation process (a library that
                // failed to load may have ended the old one).
                let what = format!(
                    "This kernel's build directory {}",
                    options.build_dir.display()
                );
                let how = "Those files were built again, and the prelude loaded.";
                let check = seed::Check::Contents;
                if let Some(repair) = seed::repair(&options.build_dir, check, &what, how)? {
                    repairs.push(repair);
                    state = spawn_evaluation_process(options, pump, interrupter)?;
                    startup.warning = None;
                    load_prelude(&mut state, &mut startup, dir, false);
                }
            }
            if state.prelude_loaded {
                // The warm-up is one replayed build (`Seeded::finish` says why).
                seeded.finish(cache, &options.build_dir, stamp, || {
                    let _ = state.context.execute("()");
                })?;
            }
        }
        Err(why) => {
            startup.warning = Some(why.clone());
            // Without the prelude's sources there is no wire crate to take the hook from.
            tracing::warn!("no prelude, no panic hook: panics show as evcxr shows them");
        }
    }
    release_freed_memory();
    if !repairs.is_empty() {
        repairs.extend(startup.warning.take());
        startup.warning = Some(repairs.join("\n"));
    }
    Ok((state, startup))
}

/// Starts the evaluation process (this binary, re-executed by evcxr) and evcxr's context.
fn spawn_evaluation_process(
    options: &EngineOptions,
    pump: &Sender<PumpMessage>,
    interrupter: &Interrupter,
) -> anyhow::Result<State> {
    let command = process::evaluation_process(options.libtorch_lib.as_deref())?;
    let begun = Instant::now();
    let (eval_context, outputs) =
        EvalContext::with_subprocess_command(command).map_err(|e| anyhow::anyhow!("{e}"))?;
    tracing::debug!("evcxr's context took {:.0?}", begun.elapsed());
    let _ = pump.send(PumpMessage::Attach(outputs));
    let mut context = CommandContext::with_eval_context(eval_context);
    interrupter.attach(context.process_handle());
    let pid = context.process_handle().lock().unwrap().id();
    options.debugger.evaluation_started(pid);
    context
        .set_opt_level(&options.cell_opt_level)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(State::new(
        context,
        pump.clone(),
        interrupter.clone(),
        options.build_dir.clone(),
        std::sync::Arc::clone(&options.debugger),
    ))
}

/// The start-up cell: the prelude as a dependency, its names in scope, its runtime (which
/// installs the panic hook). On failure the kernel still runs plain Rust with the wire crate's
/// panic hook, and the first cell says why.
fn load_prelude(state: &mut State, startup: &mut Startup, dir: &Path, seeded: bool) {
    if seeded {
        // Everything is in the local registry cache already; skip the index.
        let _ = state.context.execute(":offline 1");
    }
    let loaded = state.context.execute(&format!(
        ":dep tchbook_prelude = {{ path = {:?}, package = \"tchbook-prelude\" }}\n\
         {PRELUDE_IMPORT}\n\
         tchbook_prelude::runtime::attach();\n\
         tch::Cuda::device_count()",
        dir.display().to_string()
    ));
    if seeded {
        let _ = state.context.execute(":offline 0");
    }
    match loaded {
        Ok(outputs) => {
            // Cells call the prelude's compiled code instead of compiling their own copy
            // (vendor/README.md, changes 13, 14, 17): each cell's code runs through
            // `run_cell`; the variables go into the prelude's store (no cell has stored one
            // yet: the start-up cell has none); a final value's display is marked by
            // `VALUE_MARK`.
            let hook = tchbook_cellcode::Hook::new;
            state.context.set_hooks(tchbook_cellcode::Hooks {
                cell_runner: Some(hook(
                    "tchbook_prelude",
                    "::tchbook_prelude::runtime::run_cell",
                )),
                compiled_store: Some(hook(
                    "tchbook_prelude",
                    "::tchbook_prelude::runtime::variables",
                )),
                value_marks: Some(hook("tchbook_prelude", super::VALUE_MARK)),
            });
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
            state.install_panic_hook(&wire_dir(dir));
        }
    }
}

/// The wire crate's sources: inside the prelude's copy (build.rs embeds it there), or beside a
/// prelude checkout (`TCHBOOK_PRELUDE_DIR`), as the prelude's own manifest finds it.
fn wire_dir(prelude: &Path) -> PathBuf {
    let inside = prelude.join("wire");
    if inside.join("Cargo.toml").is_file() {
        inside
    } else {
        prelude.join("..").join("wire")
    }
}
