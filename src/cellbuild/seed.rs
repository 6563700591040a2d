//! A kernel's build directory at start-up: checked, repaired, and seeded from the cache's
//! template, so that only the very first kernel ever compiles tch; and that first kernel's
//! build kept as the template for every later one.

use super::cache::{self, BuildCache};
use anyhow::Result;
pub(crate) use cache::Check;
use std::fs::File;
use std::path::Path;

/// A build directory made ready for the start-up cell by [`prepare`].
#[must_use = "finish() keeps the first full build as the template"]
pub(crate) struct Seeded {
    /// Held while this kernel makes the first full build, so that kernels started at the same
    /// time wait for it instead of each compiling tch.
    template_lock: Option<File>,
    /// Whether the directory already holds the built prelude (its start-up build needs no
    /// registry index then).
    pub(crate) ready: bool,
    /// Repairs made on the way, told with the first cell.
    pub(crate) repairs: Vec<String>,
}

/// Checks `build_dir` (and the template) file by file, removes what is damaged, and seeds the
/// directory from `cache`'s template when it is not ready for the prelude with `stamp`. Without
/// a cache (none usable, or no prelude to build) the directory is taken as it is.
pub(crate) fn prepare(cache: Option<&BuildCache>, build_dir: &Path, stamp: &str) -> Result<Seeded> {
    let mut seeded = Seeded {
        template_lock: None,
        ready: false,
        repairs: Vec::new(),
    };
    if let Some(cache) = cache {
        let explained = |error: anyhow::Error| anyhow::anyhow!(cache::explain(&error));
        if cache::is_ready(build_dir, stamp) {
            let what = format!("This kernel's build directory {}", build_dir.display());
            let how = "It was set up again.";
            seeded
                .repairs
                .extend(repair(build_dir, cache::Check::Sizes, &what, how).map_err(explained)?);
        }
        if !cache::is_ready(build_dir, stamp) {
            seeded.template_lock = seed(cache, build_dir, stamp, &mut seeded.repairs)?;
        }
    }
    seeded.ready = cache::is_ready(build_dir, stamp);
    Ok(seeded)
}

/// Seeds `build_dir` from the template (repaired first); returns the template's lock when the
/// template is not built yet and this kernel is to build it.
fn seed(
    cache: &BuildCache,
    build_dir: &Path,
    stamp: &str,
    repairs: &mut Vec<String>,
) -> Result<Option<File>> {
    let explained = |error: anyhow::Error| anyhow::anyhow!(cache::explain(&error));
    let lock = cache.lock_template().map_err(explained)?;
    let template = cache.template_dir();
    let what = format!("The build cache's template {}", template.display());
    let how = "Those files were built again (once, by this kernel's start).";
    // Every new slot is a copy of the template: read it whole first, so a file corrupted at its
    // full size is rebuilt once here rather than copied into every slot.
    repairs.extend(repair(&template, cache::Check::Contents, &what, how).map_err(explained)?);
    if cache::is_ready(&template, stamp) {
        if !cache::has_manifest(&template) {
            // Made before sizes were recorded, and whole (`verify` looked at every library):
            // record them now.
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

/// Removes the damaged files of `dir`; the sentence for the user when there were any.
pub(crate) fn repair(
    dir: &Path,
    check: cache::Check,
    what: &str,
    how: &str,
) -> Result<Option<String>> {
    let damage = cache::verify(dir, check);
    if damage.is_empty() {
        return Ok(None);
    }
    let listed = cache::describe(&damage);
    tracing::warn!("{} is damaged:\n{listed}", dir.display());
    cache::remove_damaged(dir, &damage)?;
    Ok(Some(format!("{what} was damaged:\n{listed}\n{how}")))
}

impl Seeded {
    /// After the prelude was built and loaded in `build_dir`: marks it ready, and when this
    /// kernel made the first full build, keeps it as `cache`'s template. The real cargo built
    /// it; `warm_up` runs one replayed build first, which learns the link plan replays use
    /// (`build::link`), or each kernel's first cell would pay for learning it.
    pub(crate) fn finish(
        self,
        cache: Option<&BuildCache>,
        build_dir: &Path,
        stamp: &str,
        warm_up: impl FnOnce(),
    ) -> Result<()> {
        cache::mark_ready(build_dir, stamp)
            .map_err(|error| anyhow::anyhow!(cache::explain(&error)))?;
        if let (Some(cache), Some(_lock)) = (cache, &self.template_lock) {
            warm_up();
            if let Err(error) = cache::copy_build_dir(build_dir, &cache.template_dir()) {
                tracing::warn!("could not keep the build as the template: {error:#}");
            }
        }
        Ok(())
    }
}
