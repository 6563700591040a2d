//! tch's layers in PyTorch's `print(model)`: each as the PyTorch layer it reproduces prints
//! itself (`nn.Linear`, `nn.Conv1d/2d/3d`, `nn.BatchNorm1d/2d/3d`, `nn.Embedding`,
//! `nn.LayerNorm`, `nn.GroupNorm`), read from the layer's public fields.
//!
//! Some settings tch 0.24 keeps in private fields with no accessor: a convolution's stride,
//! padding, dilation and groups (`Conv::config`), and a norm's `eps` (and a batch norm's
//! `momentum`) in its `config`. For those alone the layer's `Debug` text is read, by field name
//! ([`private_setting`]); tch is pinned to one version, and the prelude's test that prints one
//! model of every layer here beside PyTorch's `print(model)` of the same model
//! (`tests/model_repr.rs`) fails if that text ever changes. A setting that cannot be read is printed as `?`, never guessed.

use super::tree::{ModuleNode, ModuleTree};
use std::fmt;
use tch::nn;

/// `nn.Linear`'s repr.
fn linear_repr(i: i64, o: i64, bias: bool) -> String {
    format!(
        "Linear(in_features={i}, out_features={o}, bias={})",
        py_bool(bias)
    )
}

impl ModuleTree for nn::Linear {
    fn module_tree(&self) -> ModuleNode {
        let line = match self.ws.size()[..] {
            [o, i] => linear_repr(i, o, self.bs.is_some()),
            ref other => format!("Linear(weight={other:?})"),
        };
        ModuleNode::Layer(line)
    }
}

impl ModuleTree for nn::Embedding {
    fn module_tree(&self) -> ModuleNode {
        let line = match self.ws.size()[..] {
            [n, d] => format!("Embedding({n}, {d})"),
            ref other => format!("Embedding(weight={other:?})"),
        };
        ModuleNode::Layer(line)
    }
}

impl<ND: fmt::Debug> ModuleTree for nn::Conv<ND> {
    fn module_tree(&self) -> ModuleNode {
        let debug = format!("{self:?}");
        let setting = |key| private_setting(&debug, "config: ConvConfigND", key);
        let ints = |key| setting(key).map(py_ints);
        let ws = self.ws.size();
        let groups = setting("groups").and_then(|g| g.parse().ok());
        let conv = Conv {
            in_channels: ws.get(1).copied().unwrap_or(0) * groups.unwrap_or(1),
            out_channels: ws.first().copied().unwrap_or(0),
            kernel: ws.get(2..).unwrap_or_default().to_vec(),
            stride: ints("stride"),
            padding: ints("padding"),
            dilation: ints("dilation"),
            groups,
            bias: self.bs.is_some(),
        };
        ModuleNode::Layer(conv.to_string())
    }
}

impl ModuleTree for nn::BatchNorm {
    fn module_tree(&self) -> ModuleNode {
        let number = |key| private_number(self, "config: BatchNormConfig", key);
        let features = self.running_mean.size().first().copied().unwrap_or(0);
        ModuleNode::Layer(format!(
            "BatchNorm{}d({features}, eps={}, momentum={}, affine={}, track_running_stats=True)",
            self.nd,
            number("eps"),
            number("momentum"),
            // tch makes the weight exactly when the norm is affine.
            py_bool(self.ws.is_some())
        ))
    }
}

impl ModuleTree for nn::LayerNorm {
    fn module_tree(&self) -> ModuleNode {
        let eps = private_number(self, "config: LayerNormConfig", "eps");
        ModuleNode::Layer(format!(
            "LayerNorm({}, eps={eps}, elementwise_affine={})",
            py_tuple(&self.normalized_shape),
            py_bool(self.ws.is_some())
        ))
    }
}

impl ModuleTree for nn::GroupNorm {
    fn module_tree(&self) -> ModuleNode {
        let eps = private_number(self, "config: GroupNormConfig", "eps");
        ModuleNode::Layer(format!(
            "GroupNorm({}, {}, eps={eps}, affine={})",
            self.num_groups,
            self.num_channels,
            py_bool(self.ws.is_some())
        ))
    }
}

/// A convolution's settings, as `nn.Conv1d/2d/3d`'s repr shows them; `None`: not readable.
struct Conv {
    in_channels: i64,
    out_channels: i64,
    kernel: Vec<i64>,
    stride: Option<String>,
    padding: Option<String>,
    dilation: Option<String>,
    groups: Option<i64>,
    bias: bool,
}

impl fmt::Display for Conv {
    // PyTorch's `_ConvNd.extra_repr`: the defaults are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.kernel.len();
        let or_unknown = |s: &Option<String>| s.clone().unwrap_or_else(|| "?".into());
        write!(
            f,
            "Conv{n}d({}, {}, kernel_size={}, stride={}",
            self.in_channels,
            self.out_channels,
            py_tuple(&self.kernel),
            or_unknown(&self.stride)
        )?;
        if self.padding != Some(py_tuple(&vec![0; n])) {
            write!(f, ", padding={}", or_unknown(&self.padding))?;
        }
        if self.dilation != Some(py_tuple(&vec![1; n])) {
            write!(f, ", dilation={}", or_unknown(&self.dilation))?;
        }
        match self.groups {
            Some(1) => {}
            Some(g) => write!(f, ", groups={g}")?,
            None => f.write_str(", groups=?")?,
        }
        if !self.bias {
            f.write_str(", bias=False")?;
        }
        f.write_str(")")
    }
}

/// The value of `key` in the struct that follows `within` in a layer's `Debug` text (`[1, 1]`,
/// `2`, `1e-5`), for the settings tch keeps private; `None` where it is not there.
fn private_setting<'a>(debug: &'a str, within: &str, key: &str) -> Option<&'a str> {
    let inner = &debug[debug.find(within)? + within.len()..];
    let start = inner.find(&format!(" {key}: "))? + key.len() + 3;
    let value = &inner[start..];
    let mut depth = 0;
    for (i, c) in value.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' if depth > 0 => depth -= 1,
            ',' | '}' if depth == 0 => return Some(value[..i].trim()),
            _ => {}
        }
    }
    None
}

/// A private float setting of `layer` as Python prints it, `?` where it cannot be read.
fn private_number(layer: &impl fmt::Debug, within: &str, key: &str) -> String {
    private_setting(&format!("{layer:?}"), within, key).map_or("?".into(), py_float)
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// A Python tuple: `(5, 5)`, and `(1,)` for one element.
fn py_tuple(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// Rust's `[1, 1]` as Python's tuple `(1, 1)`.
fn py_ints(rust: &str) -> String {
    let inner = rust.trim_start_matches('[').trim_end_matches(']');
    let ints: Option<Vec<i64>> = inner.split(',').map(|x| x.trim().parse().ok()).collect();
    ints.map_or_else(|| "?".into(), |v| py_tuple(&v))
}

/// A float as Python prints it: `1e-05`, `0.1`.
fn py_float(rust: &str) -> String {
    match rust.parse::<f64>() {
        Ok(v) if v != 0.0 && v.abs() < 1e-4 => {
            let s = format!("{v:e}");
            match s.split_once('e') {
                Some((m, e)) => {
                    let e: i32 = e.parse().unwrap_or(0);
                    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
                }
                None => s,
            }
        }
        Ok(v) => format!("{v:?}"),
        Err(_) => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_numbers_and_tuples() {
        assert_eq!(py_float("1e-5"), "1e-05");
        assert_eq!(py_float("0.1"), "0.1");
        assert_eq!(py_tuple(&[1]), "(1,)");
        assert_eq!(py_tuple(&[5, 5]), "(5, 5)");
        assert_eq!(py_ints("[2, 3]"), "(2, 3)");
    }

    #[test]
    fn a_private_setting_is_read_by_name_inside_its_struct() {
        let debug = "Conv { ws: Tensor[[6, 3, 5, 5], Float], bs: Some([0.1, -0.2]), \
                     config: ConvConfigND { stride: [2, 1], padding: [0, 0], groups: 3, \
                     bias: true } }";
        let within = "config: ConvConfigND";
        assert_eq!(private_setting(debug, within, "stride"), Some("[2, 1]"));
        assert_eq!(private_setting(debug, within, "groups"), Some("3"));
        assert_eq!(private_setting(debug, within, "bias"), Some("true"));
        assert_eq!(private_setting(debug, within, "dilation"), None);
        assert_eq!(private_setting(debug, "config: Other", "stride"), None);
    }

    #[test]
    fn unreadable_settings_say_so() {
        let conv = Conv {
            in_channels: 3,
            out_channels: 6,
            kernel: vec![5, 5],
            stride: None,
            padding: None,
            dilation: None,
            groups: None,
            bias: true,
        };
        assert_eq!(
            conv.to_string(),
            "Conv2d(3, 6, kernel_size=(5, 5), stride=?, padding=?, dilation=?, groups=?)"
        );
    }
}
