//! The tutorials' models, with the parameter names of the PyTorch originals (`conv1.weight`,
//! `fc1.bias`, …) so state dicts move between the two, and safetensors save/load that
//! `safetensors.torch.load_file` + `load_state_dict` read (and write) unchanged.
//!
//! Each model initialises its layers as the PyTorch original does ([`crate::torch_nn`]): after
//! `tch::manual_seed(s)` its parameters equal those of the PyTorch model built after
//! `torch.manual_seed(s)` on the CPU, bit for bit (`prelude/tests/parity.rs` checks it).
//!
//! Build a model on a var store's root, as tch does:
//!
//! ```
//! use tchbook_prelude::prelude::*;
//! let vs = nn::VarStore::new(Device::Cpu);
//! let net = Net::new(&vs.root());
//! let out = net.forward(&Tensor::zeros([4, 3, 32, 32], (Kind::Float, Device::Cpu)));
//! assert_eq!(out.size(), [4, 10]);
//! ```

mod conv;
mod layers;
mod mlp;
mod repr;
mod sequential;
mod state_dict;
mod tch_layers;
mod tree;

pub use conv::{Net, Network};
pub use mlp::{ClassifierMlp, IrisModel, TestModel};
pub use repr::{ModuleDisplay, ModuleRepr};
pub use sequential::{Sequential, seq};
pub use state_dict::{
    IncompatibleKeys, StateDictError, f_load_state_dict, f_save_state_dict, load_state_dict,
    save_state_dict,
};
pub use tchbook_derive::ModuleTree;
pub use tree::{ModuleField, ModuleNode, ModuleTree};
