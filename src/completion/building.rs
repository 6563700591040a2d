//! Building the completion index for a build cache (`tchbook install`, or in the background on
//! first use): every question of [`index::build`](super::index) asked of rust-analyzer
//! processes of its own, in parallel.

use super::analyzer::{Analyzer, Limits, Setup};
use super::index;
use super::messages::{self, Reply, Request, Source};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Builds the index for the build directory `template` (which must hold the prelude's
/// manifest) into `out`, asking `analyzers` analyzer processes of its own (each holds about
/// 1 GiB), each question within the analyzer's usual limits (a whole build takes minutes on two
/// busy cores); `nice` lowers their priority.
pub(crate) fn build_index(
    template: &Path,
    out: &Path,
    header: &str,
    nice: bool,
    analyzers: usize,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let exe = std::env::current_exe().context("finding this binary")?;
    if nice {
        // SAFETY: only lowers this thread's scheduling priority (Linux: per thread); the
        // analyzer threads spawned next, and the processes they start, inherit it.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, 15);
        }
    }
    // Each analyzer's scratch directory, beside the index (the same file system as the cache).
    let mut scratches = Vec::new();
    let mut workers = Vec::new();
    for _ in 0..analyzers.max(1) {
        let scratch = tempfile::Builder::new()
            .prefix("analyzer-")
            .tempdir_in(out.parent().unwrap_or(Path::new(".")))
            .context("creating the analyzer's scratch directory")?;
        workers.push(Analyzer::spawn(Setup {
            exe: exe.clone(),
            build_dir: template.to_owned(),
            dir: scratch.path().to_owned(),
            limits: Limits {
                // The first question loads std, tch and the prelude: tens of seconds when busy.
                hang: Duration::from_secs(300),
                ..Limits::default()
            },
        }));
        scratches.push(scratch);
    }
    // rust-analyzer answers from what it could load: a manifest it could not resolve leaves
    // std alone in scope. Such an index would hide the prelude from every first Tab, where
    // rust-analyzer itself would offer it; the first answer shows it, before the minutes the
    // rest takes.
    let check_scope = |scope: &[messages::Item]| {
        if header.contains("tchbook_prelude") && !scope.iter().any(|item| item.text == "Tensor") {
            anyhow::bail!(
                "rust-analyzer did not load the prelude from {} (no `Tensor` in scope)",
                template.join("Cargo.toml").display()
            );
        }
        Ok(())
    };
    let index = index::build(header, check_scope, |sources| ask_all(&workers, sources));
    drop(workers);
    drop(scratches);
    index::save(out, &index?)
}

/// The replies to `sources`, in their order, each asked of whichever analyzer is free next.
fn ask_all(analyzers: &[Analyzer], sources: Vec<Source>) -> anyhow::Result<Vec<Reply>> {
    use std::sync::atomic::AtomicUsize;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let replies: Vec<Mutex<Option<anyhow::Result<Reply>>>> =
        sources.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for analyzer in analyzers {
            scope.spawn(|| {
                while !failed.load(Ordering::Acquire) {
                    let i = next.fetch_add(1, Ordering::AcqRel);
                    let Some(source) = sources.get(i) else {
                        break;
                    };
                    let request = Request::Complete {
                        source: source.clone(),
                        docs: true,
                    };
                    let reply = match analyzer.ask(request).blocking_recv() {
                        Ok(Ok(reply)) => Ok(reply),
                        Ok(Err(error)) => Err(anyhow::anyhow!(error)),
                        Err(_) => Err(anyhow::anyhow!("the analyzer thread ended")),
                    };
                    failed.fetch_or(reply.is_err(), Ordering::AcqRel);
                    *replies[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(reply);
                }
            });
        }
    });
    replies
        .into_iter()
        .map(|reply| {
            reply
                .into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| Err(anyhow::anyhow!("an earlier question failed")))
        })
        .collect()
}
