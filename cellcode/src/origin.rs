//! Where each piece of a built cell crate's source came from, for a debugger to map the crate's
//! lines back to the cells' (evcxr calls `EvalCallbacks::before_load` with them).

/// The origin of one of evcxr's code segments, in the order they make up the crate's
/// `src/lib.rs`; each covers as many lines as its text has newlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeOrigin {
    /// The cell's own code, from the cell's line given (from 1).
    Cell(usize),
    /// An earlier cell's code that evcxr writes into every later crate (its items), as that
    /// cell had it; which cell is for the caller to find.
    EarlierCell,
    /// Code evcxr generated.
    Generated,
}
