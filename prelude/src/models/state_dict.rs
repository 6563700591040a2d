//! State dicts as safetensors files that PyTorch's `safetensors.torch.load_file` +
//! `load_state_dict` read, and write, unchanged.

use crate::display::{Bundle, Render, rich};
use crate::torch_error::TorchError;
use std::path::Path;
use tch::Tensor;
use tch::nn::VarStore;

/// Why a state dict could not be saved or loaded.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let mut other = nn::VarStore::new(Device::Cpu);
/// let _small = TestModel::new(&other.root());
/// let path = std::env::temp_dir().join(format!("sd-doc-{}.safetensors", std::process::id()));
/// save_state_dict(&vs, &path);
/// let e = tchbook_prelude::models::f_load_state_dict(&mut other, &path).unwrap_err();
/// assert!(e.to_string().contains("Missing key(s)"));
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug)]
pub enum StateDictError {
    /// Reading or writing the file failed (tch's message, one line).
    File(String),
    /// The file lacks parameters the model has, or has ones it lacks (PyTorch's strict load).
    Mismatch {
        /// In the model, not in the file.
        missing: Vec<String>,
        /// In the file, not in the model.
        unexpected: Vec<String>,
    },
    /// A parameter's shape differs between file and model.
    Shape {
        /// The parameter.
        name: String,
        /// Shape in the file.
        file: Vec<i64>,
        /// Shape in the model.
        model: Vec<i64>,
    },
}

impl std::fmt::Display for StateDictError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateDictError::File(m) => f.write_str(m),
            StateDictError::Mismatch {
                missing,
                unexpected,
            } => write!(
                f,
                "Error(s) in loading state_dict: Missing key(s): {missing:?}. Unexpected key(s): {unexpected:?}."
            ),
            StateDictError::Shape { name, file, model } => write!(
                f,
                "size mismatch for {name}: copying a param with shape {file:?} from checkpoint, the shape in current model is {model:?}."
            ),
        }
    }
}

impl std::error::Error for StateDictError {}

/// What a load returns, as PyTorch's `load_state_dict` returns its `_IncompatibleKeys`: the
/// keys the file lacked and the keys it had that the model does not. A strict load (the only
/// kind here, and PyTorch's default) fails on either, so a load that returns has both empty and
/// prints as PyTorch's does, `<All keys matched successfully>`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let path = std::env::temp_dir().join(format!("keys-doc-{}.safetensors", std::process::id()));
/// save_state_dict(&vs, &path);
/// let mut vs2 = nn::VarStore::new(Device::Cpu);
/// let _net2 = Net::new(&vs2.root());
/// let keys = load_state_dict(&mut vs2, &path);
/// assert_eq!(keys.to_string(), "<All keys matched successfully>");
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// In the model, not in the file.
    pub missing_keys: Vec<String>,
    /// In the file, not in the model.
    pub unexpected_keys: Vec<String>,
}

impl Render for IncompatibleKeys {
    fn bundle(&self) -> Bundle {
        Bundle::text(
            if self.missing_keys.is_empty() && self.unexpected_keys.is_empty() {
                "<All keys matched successfully>".to_string()
            } else {
                format!(
                    "_IncompatibleKeys(missing_keys={:?}, unexpected_keys={:?})",
                    self.missing_keys, self.unexpected_keys
                )
            },
        )
    }
}
rich!(IncompatibleKeys);

/// The fallible twin of [`save_state_dict`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// if let Err(e) = tchbook_prelude::models::f_save_state_dict(&vs, "/nonexistent/cifar_net.safetensors") {
///     println!("{e}");
/// }
/// ```
pub fn f_save_state_dict(vs: &VarStore, path: impl AsRef<Path>) -> Result<(), StateDictError> {
    let named: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .map(|(n, t)| (n, t.detach().to_device(tch::Device::Cpu).contiguous()))
        .collect();
    let refs: Vec<(&str, &Tensor)> = named.iter().map(|(n, t)| (n.as_str(), t)).collect();
    Tensor::write_safetensors(&refs, path.as_ref())
        .map_err(|e| StateDictError::File(TorchError::from(e).to_string()))
}

/// `torch.save(net.state_dict(), PATH)` as safetensors: every variable under its PyTorch name,
/// on the CPU, loadable in Python with
/// `net.load_state_dict(safetensors.torch.load_file(PATH))`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let path = std::env::temp_dir().join(format!("cifar_net-{}.safetensors", std::process::id()));
/// save_state_dict(&vs, &path);
/// let mut vs2 = nn::VarStore::new(Device::Cpu);
/// let _net2 = Net::new(&vs2.root());
/// load_state_dict(&mut vs2, &path);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn save_state_dict(vs: &VarStore, path: impl AsRef<Path>) {
    f_save_state_dict(vs, path).unwrap_or_else(|e| panic!("{e}"))
}

/// The fallible twin of [`load_state_dict`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut vs = nn::VarStore::new(Device::Cpu);
/// let _net = Net::new(&vs.root());
/// let e = tchbook_prelude::models::f_load_state_dict(&mut vs, "missing.safetensors").unwrap_err();
/// assert!(e.to_string().contains("missing.safetensors"));
/// ```
pub fn f_load_state_dict(
    vs: &mut VarStore,
    path: impl AsRef<Path>,
) -> Result<IncompatibleKeys, StateDictError> {
    let path = path.as_ref();
    let file: std::collections::HashMap<String, Tensor> = Tensor::read_safetensors(path)
        .map_err(|e| StateDictError::File(format!("{}: {}", path.display(), TorchError::from(e))))?
        .into_iter()
        .collect();
    let vars = vs.variables();
    let mut missing: Vec<String> = vars
        .keys()
        .filter(|k| !file.contains_key(*k))
        .cloned()
        .collect();
    let mut unexpected: Vec<String> = file
        .keys()
        .filter(|k| !vars.contains_key(*k))
        .cloned()
        .collect();
    if !missing.is_empty() || !unexpected.is_empty() {
        missing.sort();
        unexpected.sort();
        return Err(StateDictError::Mismatch {
            missing,
            unexpected,
        });
    }
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    for name in names {
        let (src, var) = (&file[name], &vars[name]);
        if src.size() != var.size() {
            return Err(StateDictError::Shape {
                name: name.clone(),
                file: src.size(),
                model: var.size(),
            });
        }
    }
    tch::no_grad(|| {
        for (name, var) in vars {
            let mut var = var;
            var.copy_(&file[&name].to_kind(var.kind()).to_device(var.device()));
        }
    });
    Ok(IncompatibleKeys::default())
}

/// `net.load_state_dict(torch.load(PATH))` from safetensors (strict: names and shapes must
/// match, as PyTorch's default). Values are copied into the existing variables, on whatever
/// device the model lives. Returns what PyTorch's returns: as a cell's value it shows
/// `<All keys matched successfully>`.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let mut vs = nn::VarStore::new(Device::Cpu);
/// let net = Net::new(&vs.root());
/// load_state_dict(&mut vs, "cifar_net.safetensors");
/// # let _ = net;
/// ```
pub fn load_state_dict(vs: &mut VarStore, path: impl AsRef<Path>) -> IncompatibleKeys {
    f_load_state_dict(vs, path).unwrap_or_else(|e| panic!("{e}"))
}
