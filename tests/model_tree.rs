//! A notebook's own model prints as PyTorch's `print(model)` through the real kernel, from the
//! layers its `#[derive(ModuleTree)]` names; a model that does not say what it holds is a
//! compile error that says what to add, and the notebook keeps its variables.

use crate::support::{Execution, Kernel};
use jupyter_protocol::JupyterMessageContent;

/// The execute_result's `text/html`, if any.
fn html(run: &Execution) -> Option<String> {
    run.iopub.iter().find_map(|m| match &m.content {
        JupyterMessageContent::ExecuteResult(r) => r.data.content.iter().find_map(|d| match d {
            jupyter_protocol::MediaType::Html(text) => Some(text.clone()),
            _ => None,
        }),
        _ => None,
    })
}

/// A cell's compile error as the notebook shows it: its message and its rustc output.
fn error_text(run: &Execution) -> String {
    let (_, evalue, traceback) = run.error().expect("the cell fails to compile");
    format!("{evalue}\n{}", traceback.join("\n"))
}

/// A model as a notebook cell writes one: a nested block, a list of heads, a size that is no
/// layer, and a function kept as a field.
const MODEL: &str = r#"
#[derive(Debug, ModuleTree)]
struct Block {
    conv: nn::Conv2D,
    norm: nn::BatchNorm,
}

#[derive(Debug, ModuleTree)]
struct Net {
    block: Block,
    heads: Vec<nn::Linear>,
    hidden: i64,
    #[module(skip)]
    activation: fn(&Tensor) -> Tensor,
}

let vs = nn::VarStore::new(Device::Cpu);
let net = {
    let p = vs.root();
    Net {
    block: Block {
        conv: nn::conv2d(&p / "conv", 3, 8, 3, nn::ConvConfig { stride: 2, ..Default::default() }),
        norm: nn::batch_norm2d(&p / "norm", 8, Default::default()),
    },
    heads: vec![torch_nn::linear(&p / "h0", 8, 2), torch_nn::linear(&p / "h1", 8, 3)],
    hidden: 8,
    activation: Tensor::relu,
    }
};"#;

const TREE: &str = "Net(
  (block): Block(
    (conv): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2))
    (norm): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  )
  (heads): ModuleList(
    (0): Linear(in_features=8, out_features=2, bias=True)
    (1): Linear(in_features=8, out_features=3, bias=True)
  )
)";

#[tokio::test(flavor = "multi_thread")]
async fn a_cells_own_model_prints_its_layer_tree_as_pytorch_does() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok(MODEL).await;
    let shown = kernel.run_ok("net.repr()").await;
    assert_eq!(shown.result().as_deref(), Some(TREE), "{:?}", shown.iopub);
    assert_eq!(html(&shown), Some(format!("<pre>{TREE}</pre>")));
    let printed = kernel
        .run_ok("println!(\"{}\", net.repr()); // print(net)")
        .await;
    assert_eq!(printed.stdout(), format!("{TREE}\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_does_not_name_its_layers_is_an_error_that_says_what_to_add() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    let run = kernel
        .execute(
            "#[derive(Debug)]\nstruct Plain { fc: nn::Linear }\n\
             let vs = nn::VarStore::new(Device::Cpu);\n\
             let plain = Plain { fc: torch_nn::linear(vs.root() / \"fc\", 2, 2) };\n\
             plain.repr()",
        )
        .await;
    let message = error_text(&run);
    assert!(
        message.contains("`Plain` does not say which layers it holds")
            && message.contains("#[derive(Debug, ModuleTree)]"),
        "{message}"
    );

    // A field whose type says nothing of layers is named, with the attribute that skips it.
    let run = kernel
        .execute(
            "#[derive(Debug)]\nstruct Settings { lr: f64 }\n\
             #[derive(Debug, ModuleTree)]\nstruct WithSettings { settings: Settings }",
        )
        .await;
    let message = error_text(&run);
    assert!(
        message.contains("a field of type `Settings` does not say whether it holds layers")
            && message.contains("#[module(skip)]"),
        "{message}"
    );

    let next = kernel.run_ok("kept + 1").await;
    assert_eq!(next.result().as_deref(), Some("42"));
}
