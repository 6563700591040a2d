//! `kernel_info_request`, on shell and on control: the language, a banner naming rustc,
//! libtorch and the device, and the debugger (JupyterLab's Variables panel, `debug_request`).

use jupyter_protocol::{
    CodeMirrorMode, HelpLink, JupyterMessage, KernelInfoReply, LanguageInfo, ReplyStatus,
    UnknownMessage,
};

/// What kernel_info reports; the device becomes known once the evaluation process is up.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub rustc_version: String,
    pub rustc_banner: String,
    pub torch: Option<String>,
    pub libtorch_dir: Option<String>,
    pub cuda_devices: Option<usize>,
}

/// The reply: jupyter-protocol's `KernelInfoReply` and protocol 5.5's `supported_features`,
/// which that type lacks (ipykernel 7 sends the list with protocol version 5.3, as here).
pub(super) struct KernelInfo(KernelInfoReply);

impl KernelInfo {
    pub(super) fn as_child_of(&self, parent: &JupyterMessage) -> JupyterMessage {
        let mut content = serde_json::to_value(&self.0).expect("kernel_info serializes");
        content["supported_features"] = serde_json::json!(["debugger"]);
        let content = UnknownMessage {
            msg_type: "kernel_info_reply".into(),
            content,
        };
        JupyterMessage::new(content, Some(parent))
    }
}

pub(super) fn kernel_info_request(facts: &Facts) -> KernelInfo {
    KernelInfo(KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".into(),
        implementation: "tchbook".into(),
        implementation_version: crate::VERSION.into(),
        language_info: LanguageInfo {
            name: "rust".into(),
            version: facts.rustc_version.clone(),
            mimetype: Some("text/rust".into()),
            file_extension: Some(".rs".into()),
            pygments_lexer: Some("rust".into()),
            codemirror_mode: Some(CodeMirrorMode::Simple("rust".into())),
            nbconvert_exporter: Some("script".into()),
        },
        banner: banner(facts),
        help_links: help_links(),
        debugger: true,
        error: None,
    })
}

fn banner(facts: &Facts) -> String {
    let torch = match (&facts.torch, &facts.libtorch_dir) {
        (Some(version), Some(dir)) => format!("torch {version} (libtorch at {dir})"),
        (None, Some(dir)) => format!("libtorch at {dir}"),
        _ => "torch: libtorch not found (pip install torch==2.11.0, or set LIBTORCH)".into(),
    };
    let device = match facts.cuda_devices {
        Some(0) => "device: cpu (no CUDA device visible)".to_owned(),
        Some(n) => format!(
            "device: cuda ({n} CUDA device{})",
            if n == 1 { "" } else { "s" }
        ),
        None => "device: known once the evaluation process has started".to_owned(),
    };
    format!(
        "tchbook {} — tensor notebooks in Rust (evcxr + tch)\n{}\n{torch}\n{device}\n\
         Type :help for commands.",
        crate::VERSION,
        facts.rustc_banner
    )
}

fn help_links() -> Vec<HelpLink> {
    [
        ("tchbook", "https://github.com/tchbook/tchbook"),
        ("tch (Rust bindings for PyTorch)", "https://docs.rs/tch"),
        ("The Rust book", "https://doc.rust-lang.org/book/"),
        (
            "evcxr commands",
            "https://github.com/evcxr/evcxr/blob/main/COMMON.md",
        ),
    ]
    .into_iter()
    .map(|(text, url)| HelpLink {
        text: text.into(),
        url: url.into(),
    })
    .collect()
}
