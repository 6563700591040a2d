//! What the completer is given for a completion or a hover: evcxr's shaping of the cell for
//! rust-analyzer, and the notebook's variables with their types.

use super::evaluate::State;
use crate::completion::{self, Prepared, Source};

impl State {
    /// evcxr's shaping of the cell for rust-analyzer, and the variables with their types. The
    /// analysis itself runs in the analyzer process (`completion`), never on this thread.
    pub(super) fn prepare_completion(&mut self, code: &str, position: usize) -> Prepared {
        let context = &mut self.context;
        let prepared = guarded("preparing a completion", || {
            context.completion_source(code, position)
        });
        match prepared {
            // A `:` command: evcxr completes it without rust-analyzer.
            Some(None) => {
                let context = &mut self.context;
                let Some(found) = guarded("completing a command", || {
                    context.completions(code, position)
                }) else {
                    return Prepared::Unavailable;
                };
                Prepared::Answered(completion::Completions {
                    matches: found
                        .completions
                        .into_iter()
                        .map(|c| completion::Match {
                            text: c.code,
                            kind: c.kind.to_owned(),
                        })
                        .collect(),
                    start: found.start_offset,
                    end: found.end_offset,
                })
            }
            Some(Some(source)) => Prepared::Rust {
                source: source.into(),
                variables: self
                    .context
                    .variables_and_types()
                    .map(|(name, ty)| (name.to_owned(), ty.to_owned()))
                    .collect(),
            },
            None => Prepared::Unavailable,
        }
    }

    pub(super) fn prepare_hover(&mut self, code: &str, position: usize) -> Option<Source> {
        let context = &mut self.context;
        guarded("preparing a hover", || context.hover_source(code, position)).map(Source::from)
    }
}

/// Runs an evcxr call that only reshapes text, logging its error or panic: neither may end the
/// engine thread, which owns the notebook's variables.
fn guarded<T>(what: &str, call: impl FnOnce() -> anyhow::Result<T>) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(Ok(value)) => Some(value),
        Ok(Err(error)) => {
            tracing::warn!("{what}: {error:#}");
            None
        }
        Err(_) => {
            tracing::error!("{what}: evcxr panicked (see the message above)");
            None
        }
    }
}
