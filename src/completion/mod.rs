//! Completion and documentation, answered within JupyterLab's patience.
//!
//! JupyterLab drops a completion reply that comes later than its provider timeout (1 s by
//! default), and rust-analyzer's first analysis of std and tch takes 6–9 s on two cores and
//! holds ~1.1 GiB: the first Tab of every fresh kernel used to show nothing, and the first
//! documentation request (JupyterLab sends one for the highlighted match) took seconds. Now:
//! - the engine shapes the cell as evcxr would for rust-analyzer
//!   ([`crate::engine::Evaluator::prepare_completion`]) and lists the notebook's variables;
//! - a request is answered at once from the [`index`] where it can be: rust-analyzer's own
//!   answers for the names in scope, the types in scope and the primitives, and the modules and
//!   types of the crates in scope, with every item's documentation, computed once per build
//!   cache (by `tchbook install`, else in the background on first use), and loaded when the
//!   kernel starts; the notebook's own items are read from its source;
//! - the rest goes to rust-analyzer, which runs in a process of its own ([`analyzer`],
//!   [`server`], [`rust_analyzer`]), started by the first request the index cannot answer, so a kernel whose
//!   requests the index answers never pays its memory, and nothing rust-analyzer does (panic,
//!   hang, blow-up) reaches the evaluation engine; a completion gives it [`DEADLINE`], and a
//!   slower answer is replaced by the index's (or nothing). Once it has been idle for
//!   [`analyzer::Limits::idle`], the process ends, and the next request starts a new one.

mod analyzer;
mod building;
mod index;
mod messages;
mod rust_analyzer;
pub mod server;

use analyzer::{Analyzer, Limits, Setup};
use index::Notebook;
use messages::{Index, Reply, Request};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub(crate) use building::build_index;
pub use messages::Source;

/// How long a completion waits for a warm rust-analyzer: JupyterLab's 1 s, less the round trip
/// and the engine's share.
pub(crate) const DEADLINE: Duration = Duration::from_millis(700);
/// How long a completion or a documentation request waits for the engine to shape the cell. An
/// idle engine does it in milliseconds, but the engine thread starts evcxr and the evaluation
/// process first (about a second: a fresh kernel's first Tab came after JupyterLab's timeout)
/// and runs cells in turn; meanwhile the index answers from the cell's own text and the
/// variables the engine listed last.
const ENGINE_PATIENCE: Duration = Duration::from_millis(200);
/// How much longer a completion waits for the engine when the index found nothing in the cell's
/// own text: right after a cell the engine is still finishing it, and the variables it defined
/// (`v.le` on a `v` of the last cell) are only listed once it has. Within JupyterLab's 1 s.
const ENGINE_SECOND_CHANCE: Duration = Duration::from_millis(500);
/// How long a hover (Shift+Tab) may wait: the first one loads rust-analyzer, which takes tens of
/// seconds on two busy cores. JupyterLab's tooltip has no timeout of its own, and the reply
/// comes from a task of its own, so nothing else waits for it.
const HOVER_DEADLINE: Duration = Duration::from_secs(120);
/// The index's file in the build cache. Its format's version is in the name: kernels of one
/// version share a cache, and a kernel built before a format change reads only its own file.
const INDEX_FILE: &str = "completion-index.v2.json";

/// One completion match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub text: String,
    /// JupyterLab's kind names (`function`, `class`, `module`, ...), for its icons.
    pub kind: String,
}

/// Completion matches, most relevant first; `start..end` (bytes of the request's code) is the
/// text they replace.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Completions {
    pub matches: Vec<Match>,
    pub start: usize,
    pub end: usize,
}

/// What the engine makes of a completion request.
#[derive(Debug)]
pub enum Prepared {
    /// Answered already (evcxr's `:` commands).
    Answered(Completions),
    /// Rust: the source rust-analyzer gets, and the notebook's variables with their types.
    Rust {
        source: Source,
        variables: Vec<(String, String)>,
    },
    /// The engine could not prepare it (it is not running, or evcxr failed).
    Unavailable,
}

/// Where the fallback index of the build cache in `cache_dir` is kept.
pub(crate) fn index_path(cache_dir: &Path) -> PathBuf {
    cache_dir.join(INDEX_FILE)
}

/// The index as last read, with its file's modification time.
type Loaded = Option<(SystemTime, Arc<Index>)>;

/// Completion and hover for one kernel.
pub struct Completer {
    analyzer: Analyzer,
    header: String,
    index_path: Option<PathBuf>,
    index: Arc<Mutex<Loaded>>,
    /// A request is held open so the analyzer warms up even though its caller moved on.
    warming: Arc<AtomicBool>,
    indexing: Arc<AtomicBool>,
    /// The last answer that came after its request had given up, with the source it answers.
    late: Arc<Mutex<Option<(Source, Reply)>>>,
    /// The notebook's variables as the engine last listed them.
    variables: Mutex<Vec<(String, String)>>,
    /// Whether the kernel has run a cell: until then the notebook holds nothing the cell's own
    /// text does not show ([`Completer::cell_ran`]).
    cell_ran: AtomicBool,
}

impl Completer {
    /// A completer for the kernel whose evcxr build directory is `build_dir`; `cache_dir` holds
    /// the fallback index (none without a build cache). `header` is the `use` line that puts the
    /// prelude in scope in every cell.
    pub fn new(build_dir: &Path, cache_dir: Option<&Path>, header: &str) -> Completer {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("tchbook"));
        let analyzer = Analyzer::spawn(Setup {
            exe,
            build_dir: build_dir.to_owned(),
            dir: build_dir.join("tchbook-analyzer"),
            limits: Limits::default(),
        });
        let completer = Completer {
            analyzer,
            header: header.to_owned(),
            index_path: cache_dir.map(index_path),
            index: Arc::new(Mutex::new(None)),
            warming: Arc::new(AtomicBool::new(false)),
            indexing: Arc::new(AtomicBool::new(false)),
            late: Arc::new(Mutex::new(None)),
            variables: Mutex::new(Vec::new()),
            cell_ran: AtomicBool::new(false),
        };
        // Read now, in the background (several MiB of JSON), so that the first Tab does
        // not wait for it; a request that comes sooner waits on the lock for the rest.
        let (path, held) = (completer.index_path.clone(), completer.index.clone());
        let _ = std::thread::Builder::new()
            .name("tchbook-index-load".into())
            .spawn(move || {
                if let Some(path) = path {
                    read_index(&path, &held);
                }
            });
        completer
    }

    /// Tells the completer that the kernel runs a cell. Before the first one the notebook has no
    /// items and no variables, so the index answers from the request's own text at once,
    /// without asking the engine: a fresh kernel's engine spends its first second starting
    /// evcxr, and the first Tab and the documentation JupyterLab asks for after it waited
    /// [`ENGINE_PATIENCE`] for it, to learn nothing more.
    pub(crate) fn cell_ran(&self) {
        self.cell_ran.store(true, Ordering::Relaxed);
    }

    /// The engine's shaping of the cell within [`ENGINE_PATIENCE`], or `None`: it is busy, or no
    /// cell has run, so it knows nothing the request's own text does not show and is not asked.
    async fn shaped(&self, prepare: impl Future<Output = Prepared>) -> Option<Prepared> {
        if !self.cell_ran.load(Ordering::Relaxed) {
            return None;
        }
        self.prepared(ENGINE_PATIENCE, prepare).await
    }

    /// Completions at byte `position` of `code`; `prepare` is the engine's shaping of the cell
    /// ([`ENGINE_PATIENCE`]).
    pub(crate) async fn complete(
        &self,
        code: &str,
        position: usize,
        prepare: impl Future<Output = Prepared>,
    ) -> Completions {
        let (source, variables) = match self.shaped_or_alone(code, position, prepare).await {
            Ok(shaped) => shaped,
            Err(answered) => return answered,
        };
        let from_index = || {
            let notebook = Notebook {
                variables: &variables,
                source: &source.code,
            };
            self.indexed(code, position, notebook)
        };
        self.index_in_background();
        // The index holds rust-analyzer's own answers for the cases it covers, instantly;
        // rust-analyzer is asked only for the rest (`x.f().`, types the index does not know),
        // within the deadline (a warm rust-analyzer takes 0.2–1 s on two busy cores, and a
        // request it has started cannot be called back, so it is not asked twice). So a
        // notebook whose completions the index answers never starts rust-analyzer (~1.1 GiB).
        if let Some(found) = from_index().filter(|found| !found.matches.is_empty()) {
            return found;
        }
        match self.analyzed(&source).await {
            Some(Reply::Completions { items, start, end }) => Completions {
                matches: items.into_iter().map(Match::from).collect(),
                start: user_offset(&source, position, start).unwrap_or(position),
                end: user_offset(&source, position, end).unwrap_or(position),
            }
            .typed_in(code, position),
            // Failed, late, or the process died: the index's answer, if any.
            _ => from_index().unwrap_or_else(|| Completions::empty_at(position)),
        }
    }

    /// The engine's shaping of the cell, the Rust source and the variables, or the answer when
    /// there is nothing more to ask: the engine answered itself (`:` commands) or could not
    /// shape it, or it is busy (or was not asked) and the index found something in the cell's
    /// own text. When the index finds nothing there, the engine gets a second chance.
    async fn shaped_or_alone(
        &self,
        code: &str,
        position: usize,
        prepare: impl Future<Output = Prepared>,
    ) -> Result<(Source, Vec<(String, String)>), Completions> {
        let mut prepare = std::pin::pin!(prepare);
        let mut prepared = self.shaped(prepare.as_mut()).await;
        if prepared.is_none() {
            let alone = self.indexed_for_cell_alone(code, position);
            if !alone.matches.is_empty() {
                return Err(alone);
            }
            prepared = self.prepared(ENGINE_SECOND_CHANCE, prepare.as_mut()).await;
            if prepared.is_none() {
                return Err(alone);
            }
        }
        match prepared {
            Some(Prepared::Answered(found)) => Err(found),
            Some(Prepared::Rust { source, variables }) => Ok((source, variables)),
            Some(Prepared::Unavailable) | None => Err(Completions::empty_at(position)),
        }
    }

    /// rust-analyzer's completions of `source` within [`DEADLINE`], or its answer to this very
    /// text that came after an earlier request gave up (Tab pressed again on an unchanged
    /// cell); `None` when it failed or is too late, its answer then kept for the next request.
    async fn analyzed(&self, source: &Source) -> Option<Reply> {
        let request = Request::Complete {
            source: source.clone(),
            docs: false,
        };
        if !self.analyzer.is_warm() {
            // rust-analyzer loads std and tch first (seconds): this request starts that, and
            // the same question asked again a few seconds later is answered.
            self.warm_up(request.clone());
        }
        let late = {
            let mut late = self.late.lock().unwrap_or_else(|p| p.into_inner());
            late.take().filter(|(asked, _)| asked == source)
        };
        if let Some((_, reply)) = late {
            return Some(reply);
        }
        let mut answer = self.analyzer.ask(request);
        match tokio::time::timeout(DEADLINE, &mut answer).await {
            Ok(Ok(Ok(reply))) => Some(reply),
            Ok(_) => None,
            Err(_) => {
                // Too late for this Tab: kept for the next one on the same text.
                let late = self.late.clone();
                let asked = source.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(reply)) = answer.await {
                        *late.lock().unwrap_or_else(|p| p.into_inner()) = Some((asked, reply));
                    }
                });
                None
            }
        }
    }

    /// `(plain text, html)` documentation of the name that ends at byte `position` of `code`,
    /// from the index (no rust-analyzer); `None` when the index does not hold it. `prepare` is
    /// the engine's shaping of the cell ([`ENGINE_PATIENCE`]).
    pub(crate) async fn documentation(
        &self,
        code: &str,
        position: usize,
        prepare: impl Future<Output = Prepared>,
    ) -> Option<(String, String)> {
        let (source, variables) = match self.shaped(prepare).await {
            Some(Prepared::Rust { source, variables }) => (source.code, variables),
            Some(_) => return None,
            // The engine is busy, or knows nothing more: the cell's own text holds what it
            // defines.
            None => (code.to_owned(), self.known_variables()),
        };
        let index = self.index()?;
        let notebook = Notebook {
            variables: &variables,
            source: &source,
        };
        let shown = index::documentation(&index, code, position, notebook)?;
        let mut html = String::new();
        let markdown = shown.markdown();
        pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new(&markdown));
        Some((shown.plain(), html))
    }

    /// `(plain text, html)` documentation at `source`'s offset, from rust-analyzer.
    pub(crate) async fn inspect(&self, source: Source) -> Option<(String, String)> {
        let answer = self.analyzer.ask(Request::Hover { source });
        match tokio::time::timeout(HOVER_DEADLINE, answer).await {
            Ok(Ok(Ok(Reply::Hover {
                markdown: Some(markdown),
                plain,
            }))) if !markdown.trim().is_empty() => {
                let mut html = String::new();
                pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new(&markdown));
                Some((plain.unwrap_or(markdown), html))
            }
            _ => None,
        }
    }

    /// The engine's shaping of the cell, if it comes within `patience`.
    async fn prepared(
        &self,
        patience: Duration,
        prepare: impl Future<Output = Prepared>,
    ) -> Option<Prepared> {
        let prepared = tokio::time::timeout(patience, prepare).await.ok()?;
        if let Prepared::Rust { variables, .. } = &prepared {
            *self.variables.lock().unwrap_or_else(|p| p.into_inner()) = variables.clone();
        }
        Some(prepared)
    }

    /// The notebook's variables as the engine last listed them.
    fn known_variables(&self) -> Vec<(String, String)> {
        self.variables
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The index's completions when the engine has not shaped the cell: the cell's own text
    /// stands for the source (a fresh kernel has nothing else; later, the items of earlier cells
    /// are missing), with the variables the engine listed last.
    fn indexed_for_cell_alone(&self, code: &str, position: usize) -> Completions {
        let line = code
            .get(..position)
            .and_then(|before| before.rsplit('\n').next())
            .unwrap_or_default();
        if line.trim_start().starts_with(':') {
            // A `:` command, which only the engine completes: Rust names would be wrong here.
            return Completions::empty_at(position);
        }
        self.index_in_background();
        let variables = self.known_variables();
        let notebook = Notebook {
            variables: &variables,
            source: code,
        };
        self.indexed(code, position, notebook)
            .unwrap_or_else(|| Completions::empty_at(position))
    }

    /// The index's completions, `None` where it cannot answer. Without an index (not built
    /// yet), the notebook's own names still complete.
    fn indexed(&self, code: &str, position: usize, notebook: Notebook) -> Option<Completions> {
        let index = self.index().unwrap_or_default();
        let (items, start) = index::lookup(&index, code, position, notebook)?;
        let found = Completions {
            matches: items.into_iter().map(Match::from).collect(),
            start,
            end: position,
        };
        Some(found.typed_in(code, position))
    }

    fn warm_up(&self, request: Request) {
        if self.warming.swap(true, Ordering::AcqRel) {
            return;
        }
        let asked = match &request {
            Request::Complete { source, .. } => Some(source.clone()),
            _ => None,
        };
        let answer = self.analyzer.ask(request);
        let warming = self.warming.clone();
        let late = self.late.clone();
        tokio::spawn(async move {
            if let (Ok(Ok(reply)), Some(asked)) = (answer.await, asked) {
                *late.lock().unwrap_or_else(|p| p.into_inner()) = Some((asked, reply));
            }
            warming.store(false, Ordering::Release);
        });
    }

    /// The index, re-read when its file changed (a background build finished).
    fn index(&self) -> Option<Arc<Index>> {
        read_index(self.index_path.as_ref()?, &self.index)
    }

    /// Builds the index in a process of its own when the cache has none (a cache that
    /// `tchbook install` did not build).
    fn index_in_background(&self) {
        let Some(path) = self.index_path.clone() else {
            return;
        };
        if path.exists() || self.indexing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(template) = path.parent().map(|dir| dir.join("template")) else {
            return;
        };
        let header = self.header.clone();
        let _ = std::thread::Builder::new()
            .name("tchbook-indexer".into())
            .spawn(move || {
                if let Err(error) = build_index(&template, &path, &header, true, 1) {
                    tracing::warn!("building the completion index: {error:#}");
                }
            });
    }
}

/// The index at `path`, from `held` unless the file changed since it was read.
fn read_index(path: &Path, held: &Mutex<Loaded>) -> Option<Arc<Index>> {
    let mut held = held.lock().unwrap_or_else(|p| p.into_inner());
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    if let Some((when, index)) = held.as_ref()
        && *when == modified
    {
        return Some(index.clone());
    }
    let index = Arc::new(index::load(path)?);
    *held = Some((modified, index.clone()));
    Some(index)
}

impl Completions {
    fn empty_at(position: usize) -> Completions {
        Completions {
            matches: Vec::new(),
            start: position,
            end: position,
        }
    }

    /// Only matches that continue what is typed, ASCII case aside (rust-analyzer also offers
    /// `iter` for `v.le`, its "auto-iter" suggestions), those in the typed case first, and
    /// libtorch's `internal_` operators after the rest: a PyTorch user knows them as
    /// `torch._foo`, not what `x.` should offer first.
    fn typed_in(mut self, code: &str, position: usize) -> Completions {
        let typed = code.get(self.start..position).unwrap_or_default();
        self.matches.retain(|m| index::continues(&m.text, typed));
        self.matches
            .sort_by_key(|m| (is_internal(&m.text), !m.text.starts_with(typed)));
        self
    }
}

fn is_internal(name: &str) -> bool {
    name.starts_with("internal_") || name.starts_with("f_internal_")
}

impl From<messages::Item> for Match {
    fn from(item: messages::Item) -> Match {
        Match {
            text: item.text,
            kind: item.kind,
        }
    }
}

/// A byte offset of rust-analyzer's source as an offset of the user's cell. The replaced text
/// lies around the cursor, inside one piece of the cell that evcxr copied as it was, so the
/// distance to the cursor is the same in both.
fn user_offset(source: &Source, position: usize, offset: usize) -> Option<usize> {
    if offset <= source.offset {
        position.checked_sub(source.offset - offset)
    } else {
        Some(position + (offset - source.offset))
    }
}

#[cfg(test)]
mod tests;
