//! execute_request on the real kernel: errors, panics, crashes, stop_on_error, what evcxr and the
//! evaluation process add (the message order and counting are `protocol::execute`'s, on the fake
//! engine).

mod commands;
mod errors;
mod process;
mod variables;
