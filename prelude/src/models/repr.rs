//! PyTorch's `print(model)` for any model, a cell's own included: `model.repr()` lists the
//! model's layers as PyTorch's module repr does,
//!
//! ```text
//! Net(
//!   (conv1): Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))
//!   (fc1): Linear(in_features=400, out_features=120, bias=True)
//! )
//! ```
//!
//! Rust has no reflection, but tch requires every module to be `Debug`, and a model's derived
//! `Debug` names its fields in order and prints each tch layer with its weight's shape (and a
//! convolution with its stride, padding, dilation and groups). That text is read back here:
//! a field holding a tch layer is a line, a field holding a struct with layers inside is a
//! nested module, a `Vec` of layers is PyTorch's `ModuleList`, and fields without layers
//! (sizes, flags) are left out, as PyTorch leaves out attributes that are not modules.
//! Parameter-free steps written as function calls in `forward` (`relu`, `max_pool2d`) are no
//! fields, so they have no line, where a PyTorch model that keeps them as attributes has one.

use crate::display::{Bundle, Render, rich};
use crate::sys::escape_html;
use std::fmt::{self, Debug};
use tch::nn::ModuleT;

/// A model printed as PyTorch prints it; see [`ModuleDisplay::repr`].
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let vs = nn::VarStore::new(Device::Cpu);
/// let layer = torch_nn::linear(vs.root() / "fc", 4, 8);
/// assert_eq!(layer.repr().to_string(), "Linear(in_features=4, out_features=8, bias=True)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ModuleRepr(String);

impl Render for ModuleRepr {
    fn bundle(&self) -> Bundle {
        Bundle::text(self.0.clone()).with_html(format!("<pre>{}</pre>", escape_html(&self.0)))
    }
}
rich!(ModuleRepr);

impl Debug for ModuleRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `print(model)` for every tch module, a model defined in a cell included (tch's `Module`
/// requires `Debug`, which such a model derives).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// #[derive(Debug)]
/// struct Model {
///     fc1: nn::Linear,
///     out: nn::Linear,
/// }
/// impl nn::Module for Model {
///     fn forward(&self, x: &Tensor) -> Tensor {
///         x.apply(&self.fc1).relu().apply(&self.out)
///     }
/// }
/// let vs = nn::VarStore::new(Device::Cpu);
/// let model = Model {
///     fc1: torch_nn::linear(vs.root() / "fc1", 4, 8),
///     out: torch_nn::linear(vs.root() / "out", 8, 3),
/// };
/// assert_eq!(
///     model.repr().to_string(),
///     "Model(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n  \
///      (out): Linear(in_features=8, out_features=3, bias=True)\n)"
/// );
/// ```
pub trait ModuleDisplay {
    /// PyTorch's repr of the module: `println!("{}", model.repr())` is `print(model)`.
    fn repr(&self) -> ModuleRepr;
}

impl<T: ModuleT + ?Sized> ModuleDisplay for T {
    fn repr(&self) -> ModuleRepr {
        ModuleRepr(module_repr_of(self))
    }
}

/// The repr of any `Debug` value that holds tch layers (a model that is not a tch module,
/// such as one whose `forward` returns two tensors, included).
pub(super) fn module_repr_of(value: &(impl Debug + ?Sized)) -> String {
    let text = format!("{value:?}");
    let node = Parser::new(&text).value();
    match render(&node) {
        Some(repr) => repr,
        None => format!("{}()", node.name()),
    }
}

/// PyTorch's module repr from each child's `(name, repr)`: a child of several lines is
/// indented as PyTorch's `_addindent` does.
pub(super) fn module_repr(class: &str, children: &[(&str, String)]) -> String {
    if children.is_empty() {
        return format!("{class}()");
    }
    let mut s = format!("{class}(\n");
    for (name, child) in children {
        s.push_str(&format!("  ({name}): {}\n", child.replace('\n', "\n  ")));
    }
    s.push(')');
    s
}

/// `nn.Linear`'s repr.
pub(super) fn linear_repr(i: i64, o: i64, bias: bool) -> String {
    format!(
        "Linear(in_features={i}, out_features={o}, bias={})",
        py_bool(bias)
    )
}

/// A convolution's settings, as `nn.Conv1d/2d/3d`'s repr shows them.
pub(super) struct Conv {
    pub in_channels: i64,
    pub out_channels: i64,
    pub kernel: Vec<i64>,
    pub stride: Vec<i64>,
    pub padding: Vec<i64>,
    pub dilation: Vec<i64>,
    pub groups: i64,
    pub bias: bool,
}

impl Conv {
    /// A square kernel with PyTorch's defaults for the rest.
    pub fn square(i: i64, o: i64, k: i64) -> Conv {
        Conv {
            in_channels: i,
            out_channels: o,
            kernel: vec![k, k],
            stride: vec![1, 1],
            padding: vec![0, 0],
            dilation: vec![1, 1],
            groups: 1,
            bias: true,
        }
    }
}

impl fmt::Display for Conv {
    // PyTorch's `_ConvNd.extra_repr`: the defaults are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Conv{}d({}, {}, kernel_size={}, stride={}",
            self.kernel.len(),
            self.in_channels,
            self.out_channels,
            py_tuple(&self.kernel),
            py_tuple(&self.stride)
        )?;
        if self.padding.iter().any(|&p| p != 0) {
            write!(f, ", padding={}", py_tuple(&self.padding))?;
        }
        if self.dilation.iter().any(|&d| d != 1) {
            write!(f, ", dilation={}", py_tuple(&self.dilation))?;
        }
        if self.groups != 1 {
            write!(f, ", groups={}", self.groups)?;
        }
        if !self.bias {
            f.write_str(", bias=False")?;
        }
        f.write_str(")")
    }
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

// --- reading a Debug text back -----------------------------------------------------------------

/// One value of a `{:?}` text: `Name { field: value, .. }`, `Name(value, ..)`, `Name[value, ..]`
/// (tch prints a tensor as `Tensor[[6, 3, 5, 5], Float]`), `[value, ..]`, or anything else as
/// an atom (`1`, `true`, `"text"`, `None`).
#[derive(Debug, PartialEq)]
enum Node {
    Struct(String, Vec<(String, Node)>),
    Tuple(String, Vec<Node>),
    List(String, Vec<Node>),
    Atom(String),
}

impl Node {
    fn name(&self) -> &str {
        match self {
            Node::Struct(n, _) | Node::Tuple(n, _) | Node::List(n, _) | Node::Atom(n) => n,
        }
    }

    fn field(&self, name: &str) -> Option<&Node> {
        match self {
            Node::Struct(_, fields) => fields.iter().find(|(f, _)| f == name).map(|(_, v)| v),
            _ => None,
        }
    }

    fn int(&self) -> Option<i64> {
        match self {
            Node::Atom(a) => a.parse().ok(),
            _ => None,
        }
    }

    fn ints(&self) -> Option<Vec<i64>> {
        match self {
            Node::List(_, items) => items.iter().map(Node::int).collect(),
            _ => None,
        }
    }

    /// A tensor's shape from tch's `Tensor[[dims], Kind]`; a small 1-d tensor, which tch
    /// prints as its values (`[0.1, 0.2]`), by their count.
    fn tensor_shape(&self) -> Option<Vec<i64>> {
        match self {
            Node::List(name, items) if name == "Tensor" => items.first()?.ints(),
            Node::List(name, items) if name.is_empty() => Some(vec![items.len() as i64]),
            _ => None,
        }
    }

    /// `Some(x)` → `x`; `None` → `None`.
    fn some(&self) -> Option<&Node> {
        match self {
            Node::Tuple(name, items) if name == "Some" => items.first(),
            _ => None,
        }
    }
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text: text.as_bytes(),
            at: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_spaces();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Node {
        self.skip_spaces();
        if self.peek() == Some(b'"') {
            return Node::Atom(self.string());
        }
        let start = self.at;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || b"_.-+".contains(&c) {
                self.at += 1;
            } else {
                break;
            }
        }
        let word = String::from_utf8_lossy(&self.text[start..self.at]).into_owned();
        self.skip_spaces();
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                Node::Struct(word, self.fields())
            }
            Some(b'(') => {
                self.at += 1;
                Node::Tuple(word, self.items(b')'))
            }
            Some(b'[') => {
                self.at += 1;
                Node::List(word, self.items(b']'))
            }
            _ if word.is_empty() => {
                // Something this reader does not know: skip one character so it ends.
                self.at += 1;
                Node::Atom(String::new())
            }
            _ => Node::Atom(word),
        }
    }

    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                b'\\' => self.at += 1,
                b'"' => break,
                _ => {}
            }
        }
        String::from_utf8_lossy(&self.text[start..self.at.min(self.text.len())]).into_owned()
    }

    fn fields(&mut self) -> Vec<(String, Node)> {
        let mut fields = Vec::new();
        loop {
            if self.eat(b'}') || self.peek().is_none() {
                return fields;
            }
            if self.eat(b'.') {
                // `..` of a non-exhaustive Debug.
                self.eat(b'.');
                continue;
            }
            let name = match self.value() {
                Node::Atom(name) => name,
                _ => String::new(),
            };
            self.eat(b':');
            fields.push((name, self.value()));
            self.eat(b',');
        }
    }

    fn items(&mut self, close: u8) -> Vec<Node> {
        let mut items = Vec::new();
        loop {
            if self.eat(close) || self.peek().is_none() {
                return items;
            }
            items.push(self.value());
            self.eat(b',');
        }
    }
}

// --- from the parsed value to PyTorch's repr ---------------------------------------------------

/// The repr of a value holding layers: a layer's one line, or a module with its children;
/// `None` where there are no layers inside.
fn render(node: &Node) -> Option<String> {
    if let Some(layer) = layer(node) {
        return Some(layer);
    }
    match node {
        // tch's `nn::seq()`: its layers by index, as `nn.Sequential` prints them (the closures
        // of `add_fn`, which print as `func`, have no line).
        Node::Struct(name, _) if name == "Sequential" || name == "SequentialT" => {
            let Some(Node::List(_, items)) = node.field("layers") else {
                return None;
            };
            let children: Vec<(String, String)> = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| Some((i.to_string(), render(item)?)))
                .collect();
            let children: Vec<(&str, String)> = children
                .iter()
                .map(|(i, r)| (i.as_str(), r.clone()))
                .collect();
            Some(module_repr("Sequential", &children))
        }
        Node::Struct(name, fields) => {
            let children: Vec<(&str, String)> = fields
                .iter()
                .filter_map(|(field, value)| Some((field.as_str(), render(value)?)))
                .collect();
            (!children.is_empty()).then(|| module_repr(name, &children))
        }
        Node::List(name, items) if name.is_empty() => {
            let rendered: Vec<Option<String>> = items.iter().map(render).collect();
            if items.is_empty() || rendered.iter().any(Option::is_none) {
                return None;
            }
            let names: Vec<String> = (0..items.len()).map(|i| i.to_string()).collect();
            let children: Vec<(&str, String)> = names
                .iter()
                .map(String::as_str)
                .zip(rendered.into_iter().flatten())
                .collect();
            Some(module_repr("ModuleList", &children))
        }
        // A layer kept in a `Box` or an `Option`.
        Node::Tuple(name, items) if items.len() == 1 && (name == "Some" || name == "Box") => {
            render(&items[0])
        }
        _ => None,
    }
}

/// A tch layer's line, as the PyTorch layer it reproduces prints it.
fn layer(node: &Node) -> Option<String> {
    let Node::Struct(name, _) = node else {
        return None;
    };
    let bias = || node.field("bs").is_some_and(|b| b.some().is_some());
    match name.as_str() {
        "Linear" => {
            let ws = node.field("ws")?.tensor_shape()?;
            let [o, i] = ws[..] else { return None };
            Some(linear_repr(i, o, bias()))
        }
        "Conv" => {
            let ws = node.field("ws")?.tensor_shape()?;
            let config = node.field("config")?;
            let groups = config.field("groups")?.int()?;
            Some(
                Conv {
                    in_channels: *ws.get(1)? * groups,
                    out_channels: ws[0],
                    kernel: ws[2..].to_vec(),
                    stride: config.field("stride")?.ints()?,
                    padding: config.field("padding")?.ints()?,
                    dilation: config.field("dilation")?.ints()?,
                    groups,
                    bias: bias(),
                }
                .to_string(),
            )
        }
        "BatchNorm" => {
            let features = node.field("running_mean")?.tensor_shape()?;
            let nd = node.field("nd")?.int()?;
            let config = node.field("config")?;
            let number = |f: &str| match config.field(f) {
                Some(Node::Atom(a)) => Some(py_float(a)),
                _ => None,
            };
            let affine = matches!(config.field("affine"), Some(Node::Atom(a)) if a == "true");
            Some(format!(
                "BatchNorm{nd}d({}, eps={}, momentum={}, affine={}, track_running_stats=True)",
                features.first()?,
                number("eps")?,
                number("momentum")?,
                py_bool(affine)
            ))
        }
        "Embedding" => {
            let ws = node.field("ws")?.tensor_shape()?;
            let [n, d] = ws[..] else { return None };
            Some(format!("Embedding({n}, {d})"))
        }
        _ => None,
    }
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
        Err(_) => rust.to_string(),
    }
}

#[cfg(test)]
mod tests;
