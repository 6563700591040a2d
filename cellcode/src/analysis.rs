//! What rust-analyzer is given for a completion or a hover, by evcxr's shaping of a cell, for
//! an analyzer in a process of the kernel's own (`CommandContext::completion_source` and
//! `hover_source`).

/// The source rust-analyzer analyses (the cell as evcxr wraps it, with the notebook's items),
/// and the byte offset in it that the request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisSource {
    pub code: String,
    pub offset: usize,
}
