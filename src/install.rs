//! Installing the kernelspec, the up-front build of tch and the prelude, and `tchbook doctor`.

use crate::cellbuild::cache::{self, BuildCache};
use crate::cellbuild::env;
use crate::cellbuild::libtorch::{Libtorch, detect_libtorch};
use crate::completion::index_path;
use crate::engine::{Engine, EngineOptions};
use anyhow::{Context, Result, bail};
use jupyter_protocol::JupyterKernelspec;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const KERNEL_NAME: &str = "tchbook";
const LOGO_32: &[u8] = include_bytes!("../kernelspec/logo-32x32.png");
const LOGO_64: &[u8] = include_bytes!("../kernelspec/logo-64x64.png");

/// Where a kernelspec goes, as `jupyter kernelspec install` names it.
#[derive(Debug, Clone)]
pub enum Location {
    User,
    SysPrefix,
    Prefix(PathBuf),
}

fn data_dir(location: &Location) -> Result<PathBuf> {
    Ok(match location {
        Location::User => match std::env::var_os("JUPYTER_DATA_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => {
                let home = std::env::var_os("HOME").context("HOME is not set")?;
                PathBuf::from(home).join(".local/share/jupyter")
            }
        },
        Location::SysPrefix => {
            let output = crate::cellbuild::cache::tool("python3")
                .args(["-c", "import sys; print(sys.prefix)"])
                .output()
                .context("--sys-prefix needs python3 on PATH")?;
            let prefix = String::from_utf8(output.stdout)?.trim().to_owned();
            anyhow::ensure!(!prefix.is_empty(), "python3 did not report sys.prefix");
            PathBuf::from(prefix).join("share/jupyter")
        }
        Location::Prefix(dir) => dir.join("share/jupyter"),
    })
}

pub(crate) fn kernelspec_dir(location: &Location) -> Result<PathBuf> {
    Ok(data_dir(location)?.join("kernels").join(KERNEL_NAME))
}

/// The kernel.json for this binary; `env` carries LIBTORCH when it was found.
pub(crate) fn kernelspec(executable: &str, libtorch: Option<&Libtorch>) -> JupyterKernelspec {
    let env = libtorch
        .map(|libtorch| ("LIBTORCH".to_owned(), libtorch.dir.display().to_string()))
        .into_iter()
        .collect();
    JupyterKernelspec {
        argv: [
            executable,
            "kernel",
            "--connection-file",
            "{connection_file}",
        ]
        .map(str::to_owned)
        .into(),
        display_name: "Rust (tchbook)".to_owned(),
        language: "rust".to_owned(),
        metadata: Some(HashMap::from([
            // The bug icon, for JupyterLab's Variables panel (`debug_request`; no breakpoints).
            ("debugger".to_owned(), Value::Bool(true)),
            // CurveZMQ: a kernel manager with `transport_encryption` "auto" or "required"
            // writes a key pair into the connection file, and every socket binds encrypted.
            (
                "supported_encryption".to_owned(),
                Value::from(vec![Value::from("curve")]),
            ),
        ])),
        // Interrupts arrive as interrupt_request on control; SIGINT works too (see
        // DEVELOPERS.md), but a message also works when the kernel runs elsewhere.
        interrupt_mode: Some("message".to_owned()),
        // Never null: jupyter_client refuses a spec whose `env` or `metadata` is not an object.
        env: Some(env),
    }
}

/// Writes `spec` as `dir/kernel.json`, with the logos beside it.
pub(crate) fn write_kernelspec(dir: &Path, spec: &JupyterKernelspec) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join("kernel.json"),
        serde_json::to_string_pretty(spec)? + "\n",
    )?;
    std::fs::write(dir.join("logo-32x32.png"), LOGO_32)?;
    std::fs::write(dir.join("logo-64x64.png"), LOGO_64)?;
    Ok(())
}

pub fn install(location: &Location, prebuild: bool) -> Result<()> {
    let dir = kernelspec_dir(location)?;
    let executable = std::env::current_exe()?.canonicalize()?;
    let libtorch = detect_libtorch();
    let spec = kernelspec(&executable.display().to_string(), libtorch.as_ref().ok());
    write_kernelspec(&dir, &spec)?;
    println!("Installed the tchbook kernelspec in {}", dir.display());
    match &libtorch {
        Ok(found) => println!(
            "libtorch: {} (torch {})",
            found.dir.display(),
            found.version.as_deref().unwrap_or("version unknown")
        ),
        Err(why) => {
            eprintln!("warning: {why}");
            return Ok(());
        }
    }
    if prebuild {
        prebuild_prelude(libtorch.as_ref().unwrap())?;
    }
    Ok(())
}

pub fn uninstall(location: &Location) -> Result<()> {
    let dir = kernelspec_dir(location)?;
    if !dir.exists() {
        bail!("no tchbook kernelspec at {}", dir.display());
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    println!("Removed {}", dir.display());
    Ok(())
}

/// Builds tch and the prelude into the cache's template now, with cargo's progress on stderr,
/// so the first notebook cell does not wait ~2 minutes, and the completion index. Must run
/// before any thread starts (it sets `EVCXR_TMPDIR`).
fn prebuild_prelude(libtorch: &Libtorch) -> Result<()> {
    cache::configured_root().map_err(|why| {
        anyhow::anyhow!(
            "no place for the build cache: {why}. Set HOME, or TCHBOOK_CACHE_DIR to a directory \
             of yours (and give kernels the same), or install with --no-build"
        )
    })?;
    let cache = BuildCache::new(libtorch.version.as_deref());
    let prelude = cache.prepare()?;
    let _lock = cache.lock_template()?;
    let template = cache.template_dir();
    let damage = cache::verify(&template, cache::Check::Contents);
    if !damage.is_empty() {
        println!(
            "The build template {} is damaged; building these again:\n{}",
            template.display(),
            cache::describe(&damage)
        );
        cache::remove_damaged(&template, &damage)?;
    }
    if cache::is_ready(&template, &prelude.1) {
        println!(
            "tch and the prelude are already built ({}).",
            template.display()
        );
        index_completions(&cache);
        return Ok(());
    }
    println!(
        "Building tch and the tchbook prelude into {} (only once; about 2 minutes)...",
        template.display()
    );
    std::fs::create_dir_all(&template)?;
    // SAFETY: the install command runs on main's thread alone until the engine below starts.
    unsafe { crate::cellbuild::setup::set_for_build(Some(libtorch), &template) };
    let started = std::time::Instant::now();
    let engine = Engine::spawn(EngineOptions {
        build_dir: template.clone(),
        cache: None,
        prelude: Ok(prelude),
        libtorch_lib: Some(libtorch.lib_dir()),
        interrupt_grace: Duration::from_secs(3),
        cell_opt_level: env::cell_opt_level(),
        debugger: Arc::default(),
    });
    let built = Arc::new(AtomicBool::new(false));
    // The index is built beside the build: rust-analyzer needs the template's manifest and lock
    // file, not its outputs. On two cores that saves little (the build keeps 1.8 of them busy
    // on average; bench/NOTES.md), but with more the index is done when the build is. A failed
    // build is reported without waiting for the index (the analyzer processes end with this
    // one).
    let indexer = {
        let (template, out, built) = (template.clone(), index_path(&cache.dir), built.clone());
        std::thread::spawn(move || index_beside_build(&template, &out, &built))
    };
    let startup = engine.build_only();
    built.store(true, Ordering::Release);
    match startup {
        Some(startup) => {
            if let Some(warning) = startup.warning {
                bail!("the build failed:\n{warning}");
            }
        }
        None => bail!("the build engine stopped"),
    }
    println!("Built in {:.0?}.", started.elapsed());
    match indexer.join() {
        Ok(Some(Ok(took))) => println!("Indexed in {took:.0?}, beside the build."),
        // No index could be started beside the build, or it failed there (one cause is named
        // in the analyzer's error: `cargo metadata` run while cargo rewrites the lock file):
        // now that the build is done, the same as for a template built before.
        Ok(Some(Err(error))) => {
            println!("The index beside the build failed ({error:#}); indexing again.");
            index_completions(&cache);
        }
        Ok(None) | Err(_) => index_completions(&cache),
    }
    Ok(())
}

/// Builds the completion index while the template is built, once the build has written the
/// prelude into the template's manifest and lock file; `None` where the build ended first, or
/// the index was there already.
fn index_beside_build(
    template: &Path,
    out: &Path,
    built: &AtomicBool,
) -> Option<Result<Duration, anyhow::Error>> {
    if out.exists() {
        return None;
    }
    let names_prelude = |name: &str| {
        std::fs::read_to_string(template.join(name))
            .is_ok_and(|text| text.contains(PRELUDE_PACKAGE))
    };
    // evcxr's first build is of a cell without the prelude; the prelude's `:dep` rewrites the
    // manifest, and cargo writes the lock file once it has resolved it. The lock is read twice
    // a moment apart so that a file cargo is still writing is not copied half-written. Cargo
    // may still be downloading and unpacking what the lock names then: so the index also waits
    // until cargo has prepared the prelude's build, which it does once every source is in
    // place. Started at the lock alone, the first analyzer answered without the prelude on each
    // of four first installs with a new cargo home; since this wait, on none of two
    // (bench/NOTES.md, "The index beside the build").
    let mut last_lock = None;
    loop {
        if built.load(Ordering::Acquire) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
        if !names_prelude("Cargo.toml") || !names_prelude("Cargo.lock") {
            continue;
        }
        let lock = std::fs::read(template.join("Cargo.lock")).ok();
        if lock.is_some()
            && lock == last_lock
            && prepared(&template.join("target"), PRELUDE_PACKAGE)
        {
            break;
        }
        last_lock = lock;
    }
    println!(
        "Indexing completions and documentation for every kernel's first Tab, beside the build..."
    );
    let started = std::time::Instant::now();
    // Should an analyzer still answer its first question without the prelude (before the wait
    // above, its `cargo metadata` had succeeded, and the same manifest and lock file loaded
    // whole seconds later), that answer ends the attempt at once (`build_index`), and a new
    // analyzer is asked while the build goes on.
    const ATTEMPTS: usize = 3;
    for attempt in 1.. {
        match build_completion_index(template, out) {
            Ok(()) => break,
            Err(error) if attempt < ATTEMPTS && !built.load(Ordering::Acquire) => {
                println!("The index beside the build failed ({error:#}); asking again.");
                std::thread::sleep(Duration::from_secs(5));
            }
            Err(error) => return Some(Err(error)),
        }
    }
    Some(Ok(started.elapsed()))
}

/// The prelude's package name, as cargo names its units.
const PRELUDE_PACKAGE: &str = "tchbook-prelude";

/// Whether cargo has prepared a unit of `package` in the target directory `target`: a folder
/// named after it in one of its `.fingerprint` folders (the host's, for build scripts, or a
/// target's), which cargo makes for every unit of a build before it compiles any, once their
/// sources are downloaded and unpacked.
fn prepared(target: &Path, package: &str) -> bool {
    let prefix = format!("{package}-");
    let holds = |dir: PathBuf| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        })
    };
    let Ok(entries) = std::fs::read_dir(target) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let profile = entry.path();
        holds(profile.join(".fingerprint"))
            || std::fs::read_dir(&profile).is_ok_and(|inner| {
                inner
                    .flatten()
                    .any(|e| holds(e.path().join(".fingerprint")))
            })
    })
}

/// The completion index a fresh kernel answers its first Tab and its documentation from
/// (`completion/index/`), unless the cache has it. Not fatal: without it, completion waits for
/// rust-analyzer once.
fn index_completions(cache: &BuildCache) {
    let out = index_path(&cache.dir);
    if out.exists() {
        return;
    }
    println!(
        "Indexing completions and documentation for every kernel's first Tab (once; a few minutes)..."
    );
    let started = std::time::Instant::now();
    match build_completion_index(&cache.template_dir(), &out) {
        Ok(()) => println!("Indexed in {:.0?}.", started.elapsed()),
        Err(error) => println!(
            "warning: the completion index could not be built ({error:#}); a kernel's first \
             completion will wait for rust-analyzer instead."
        ),
    }
}

fn build_completion_index(template: &Path, out: &Path) -> Result<()> {
    // Two analyzers where there are two cores: each loads std, tch and the prelude (~1 GiB),
    // and then the questions go to whichever is free, which halves the time on a machine left
    // to them. More would mostly wait on the first question, which is all loading.
    let analyzers = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    crate::completion::build_index(
        template,
        out,
        crate::engine::PRELUDE_IMPORT,
        false,
        analyzers,
    )
}

/// `tchbook doctor`: what the kernel would use (rustc, libtorch, kernelspec), and the build
/// cache checked file by file. Damage is repaired: a damaged slot is removed (the next kernel
/// copies it again from the template), a damaged template loses the damaged files and is
/// built again at once. Must run before any thread starts (a rebuild sets the environment).
pub fn doctor(rustc_banner: &str) -> Result<()> {
    println!("tchbook {}", crate::VERSION);
    println!("{rustc_banner}");
    let spec = kernelspec_dir(&Location::User)?;
    println!(
        "kernelspec: {} ({})",
        spec.display(),
        if spec.exists() {
            "installed"
        } else {
            "not installed"
        }
    );
    let libtorch = match detect_libtorch() {
        Ok(libtorch) => libtorch,
        Err(why) => {
            println!("{why}");
            return Ok(());
        }
    };
    println!(
        "libtorch: {} (torch {})",
        libtorch.dir.display(),
        libtorch.version.as_deref().unwrap_or("version unknown")
    );
    if let Err(why) = cache::configured_root() {
        bail!(
            "no place for the build cache: {why}. Set HOME, or TCHBOOK_CACHE_DIR to a directory of yours"
        );
    }
    let cache = BuildCache::new(libtorch.version.as_deref());
    let free = cache::free_space(&cache.dir)
        .map(|bytes| format!("{} MiB free", bytes >> 20))
        .unwrap_or_else(|| "free space unknown".to_owned());
    println!("build cache: {} ({free})", cache.dir.display());
    let (_, stamp) = match cache.prepare() {
        Ok(prelude) => prelude,
        Err(error) => bail!("{error:#}"),
    };
    let rebuild = doctor_template(&cache, &stamp)?;
    doctor_slots(&cache)?;
    for other in cache.other_builds() {
        println!(
            "  {}: a build for another kernel or torch version (delete it if unused)",
            other.display()
        );
    }
    if rebuild {
        prebuild_prelude(&libtorch)?;
    }
    Ok(())
}

/// `doctor`'s check of the template; whether it must be built (again).
fn doctor_template(cache: &BuildCache, stamp: &str) -> Result<bool> {
    let _lock = cache.lock_template()?;
    let template = cache.template_dir();
    let damage = cache::verify(&template, cache::Check::Contents);
    if !damage.is_empty() {
        println!("  template: damaged\n{}", cache::describe(&damage));
        cache::remove_damaged(&template, &damage)?;
        println!("  removed the damaged files; building them again");
        Ok(true)
    } else if cache::is_ready(&template, stamp) {
        println!("  template: built, verified");
        Ok(false)
    } else {
        println!("  template: not built for this prelude yet; building it");
        Ok(true)
    }
}

/// `doctor`'s check of the slots no running kernel holds: a damaged one is removed.
fn doctor_slots(cache: &BuildCache) -> Result<()> {
    for (slot, lock) in cache.slots()? {
        let name = slot
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if lock.is_none() {
            println!("  slot {name}: in use by a running kernel (checked when it next starts)");
            continue;
        }
        let damage = cache::verify(&slot, cache::Check::Contents);
        if damage.is_empty() {
            println!("  slot {name}: verified");
        } else {
            println!("  slot {name}: damaged\n{}", cache::describe(&damage));
            std::fs::remove_dir_all(&slot)
                .with_context(|| format!("removing {}", slot.display()))?;
            println!("  removed it; the next kernel copies it again from the template");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{PRELUDE_PACKAGE, prepared};
    use std::path::Path;

    #[test]
    fn the_prelude_counts_as_prepared_once_cargo_made_a_unit_of_it_for_the_host_or_a_target() {
        let make = |root: &Path, unit: &str| std::fs::create_dir_all(root.join(unit)).unwrap();
        let target = tempfile::tempdir().unwrap();
        let target = target.path();
        // The first build, of a cell without the prelude.
        make(target, "x86_64-unknown-linux-gnu/debug/.fingerprint/ctx-1");
        make(target, "debug/.fingerprint/serde_derive-2");
        make(target, "tchbook-replay");
        assert!(!prepared(target, PRELUDE_PACKAGE));
        assert!(!prepared(&target.join("not-built-yet"), PRELUDE_PACKAGE));
        make(
            target,
            "x86_64-unknown-linux-gnu/debug/.fingerprint/tchbook-prelude-3",
        );
        assert!(prepared(target, PRELUDE_PACKAGE));
        let host_only = tempfile::tempdir().unwrap();
        make(host_only.path(), "debug/.fingerprint/tchbook-prelude-4");
        assert!(prepared(host_only.path(), PRELUDE_PACKAGE));
    }
}
