//! Kernel integration tests: the real `tchbook` binary on loopback ports, driven by a real
//! client (jupyter-zmq-client), asserting whole message sequences. `protocol` serves the same
//! kernel in-process on a fake engine (`fake_engine`), so it runs in seconds.
//!
//! Kernels need libtorch (`LIBTORCH`, or the `torch` package of the Python on PATH or of
//! tchbook's venv) and share the per-user build cache, so only the first kernel on a machine
//! compiles tch.

mod fake_engine;
mod fake_side_channel;
mod support;
// The prelude's import scan, which checks the kernel's layers too.
#[path = "../prelude/tests/layer_scan.rs"]
mod layer_scan;

mod cache;
mod completion;
mod curve;
mod display;
mod download;
mod execute;
mod first_requests;
mod fuzz;
mod hostile_folder;
mod hostile_network;
mod hostile_output;
mod install;
mod interrupt;
mod layers;
mod lifecycle;
mod limits;
mod model_tree;
mod panels;
mod processes;
mod protocol;
mod stdin;
mod value_display;
mod widgets;
