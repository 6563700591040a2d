//! tchbook's prelude: the library every notebook cell links.
//!
//! A cell starts with `use tchbook_prelude::prelude::*;` in scope, which brings tch (where tch
//! already mirrors PyTorch) and what PyTorch users reach for that tch lacks:
//!
//! - [`device`] — cuda → mps → cpu selection, moving tensors and var stores, device cards,
//!   one-line libtorch errors ([`device::catch_torch_error`]);
//! - [`cuda`] — `torch.cuda`-style queries and the caching allocator's memory statistics;
//! - [`data`] — Dataset, TensorDataset, DataLoader, CIFAR-10 / MNIST / Fashion-MNIST / CSV
//!   readers, transforms, `train_test_split`, downloads and stand-ins, the shipped Iris set;
//! - [`models`] — the tutorials' models with PyTorch's parameter names, safetensors state dicts,
//!   PyTorch's `print(model)` for any model that names its layers (`model.repr()`,
//!   `#[derive(ModuleTree)]`);
//!   [`torch_nn`] — `nn.Linear` / `nn.Conv2d` with PyTorch's initialisation, bit for bit;
//! - [`train`] — batch accuracy, timers, RunBuilder/RunManager; [`plot`] — live loss plots;
//!   [`tensorboard`] — `SummaryWriter` and `make_grid`, TensorBoard's event files as PyTorch
//!   writes them (default-on feature `tensorboard`);
//!   [`progress`] — progress bars; [`pyrepr`] — devices and shapes printed as PyTorch prints them;
//! - [`display`] — rich output for every prelude value, evcxr's plain text for std values in
//!   one compilation, and live, in-place updates;
//! - [`widgets`] — Jupyter widgets (ipywidgets' sliders, buttons, progress bars, boxes, output
//!   areas, `interact`), read and set by a cell while it runs;
//! - [`runtime`] and [`interrupt`] — the kernel contract (live display protocol, stdout pump,
//!   SIGINT flag), see DEVELOPERS.md.
//!
//! # Layers
//!
//! Modules are layered, and each imports only from the layers below it (and, inside a module
//! directory, each file only from its siblings below it; a `mod.rs` only declares and
//! re-exports, and `widgets`' also lists its widget types for the Variables panel).
//! `tests/layers.rs` reads every `crate::`/`super::` path in `src/` and fails on a cycle.
//!
//! 1. Facts: `sys` (Linux: CPU, RAM, process; HTML escaping), `backend` (whether there is an
//!    NVIDIA driver; loading libtorch's CUDA backend).
//! 2. The kernel contract: [`runtime`] (the wire to the kernel, pumps, signals, input, tuning),
//!    [`interrupt`] (the flag a cell polls); `torch_error` (libtorch errors in one line).
//! 3. Rendering: [`display`] — `Bundle` and `Render`, tables, live outputs, tensors as PyTorch
//!    prints them, std values as evcxr prints them.
//! 4. Things that render themselves: [`widgets`] (over `display` and the comms of `runtime`),
//!    [`cuda`], [`pyrepr`], [`progress`] (a widget inside a kernel), [`plot`], [`torch_nn`];
//!    and [`tensorboard`], which renders for TensorBoard (over `display`'s PNG encoder and
//!    `sys`).
//! 5. [`device`] (over `cuda`), [`models`] (over `torch_nn`).
//! 6. [`data`] (loaders use `cuda` for pinned memory; downloads show `progress`).
//! 7. [`train`] (over `data` and `device`), and the [`prelude`] that re-exports all of it.
//! 8. `side_channel`: the prelude's answers on the kernel's side channel (what JupyterLab's
//!    Variables and Kernel Usage panels show, the front end's widget messages), over all of the
//!    above (the evaluation process calls it; no cell does).
//!
//! The data set catalog and downloads are the `tchbook-fetch` crate's (shared with the kernel's
//! `tchbook download`); the line messages to the kernel are `tchbook-wire`'s.

#![warn(missing_docs)]

mod backend;
pub mod cuda;
pub mod data;
pub mod device;
pub mod display;
pub mod interrupt;
pub mod models;
pub mod plot;
pub mod progress;
pub mod pyrepr;
pub mod runtime;
mod side_channel;
mod sys;
#[cfg(feature = "tensorboard")]
pub mod tensorboard;
mod torch_error;
pub mod torch_nn;
pub mod train;
pub mod widgets;

/// Everything a notebook cell has in scope (`use tchbook_prelude::prelude::*;`).
pub mod prelude {
    pub use tch::nn::{self, Module, ModuleT, OptimizerConfig};
    pub use tch::{self, Device, IndexOp, Kind, Reduction, Tensor, no_grad};

    pub use crate::cuda;
    pub use crate::cuda::{gpu_monitor, gpu_usage};
    pub use crate::data::{
        Cifar10, CsvTable, DataLoader, Dataset, FashionMnist, KnownDataset, Mnist, TensorDataset,
        load_iris, read_csv, standin, train_test_split, transforms,
    };
    pub use crate::data::{f_fetch, fetch, iris, write_iris};
    pub use crate::device::{
        DeviceCard, TensorDevice, TorchError, VarStoreExt, best_device, catch_torch_error, device,
        device_card, device_name, f_device, named_parameters, short_error,
    };
    pub use crate::display::{PlainDisplay, Render, TensorDisplay, clear_output, show};
    pub use crate::interrupt;
    pub use crate::models::{
        ClassifierMlp, IrisModel, ModuleDisplay, ModuleNode, ModuleTree, Net, Network, Sequential,
        TestModel, load_state_dict, save_state_dict, seq,
    };
    pub use crate::plot::LossPlot;
    pub use crate::progress::{Progress, progress};
    pub use crate::pyrepr::{DeviceDisplay, TensorShape};
    pub use crate::runtime::{input, set_threads, tune_allocator};
    #[cfg(feature = "tensorboard")]
    pub use crate::tensorboard::{SummaryWriter, make_grid, make_grid_with};
    pub use crate::torch_nn::{self, ResetParameters};
    pub use crate::train::{
        Run, RunBuilder, RunManager, RunParams, Timer, batch_accuracy, num_correct,
    };
    pub use crate::widgets::{
        Button, Checkbox, Control, Controls, Dropdown, FloatProgress, FloatSlider, HBox, HTML,
        IntProgress, IntSlider, Interact, IntoOutput, Label, Output, Text, VBox, Widget, interact,
    };
}
