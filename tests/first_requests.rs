//! The very first request of a fresh kernel, one kernel per request: each kind of completion a
//! notebook asks for (std and dependency paths, members of the notebook's values and of its own
//! types, prelude names, local variables, macros), and a documentation request, answered from
//! the install-time index. JupyterLab drops a completion reply slower than one second, and
//! rust-analyzer needs several to load; so each test also asserts that no rust-analyzer process
//! was started, which is what keeps a kernel that never needs it small.

use crate::completion::complete;
use crate::support::{Kernel, binary, children};
use std::sync::OnceLock;

/// Builds the index in the tests' build cache if it has none: `tchbook install` (into a
/// temporary prefix) builds tch, the prelude and the index once per cache, as a user's install
/// does.
fn index_is_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let prefix = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(binary())
            .arg("install")
            .arg("--prefix")
            .arg(prefix.path())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("running tchbook install");
        assert!(status.success(), "tchbook install failed: {status}");
    });
}

/// Whether one of the kernel's processes is the analyzer process (`tchbook analyzer`).
fn runs_rust_analyzer(kernel: &Kernel) -> bool {
    children(kernel.pid()).into_iter().any(|pid| {
        let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        command
            .split(|&b| b == 0)
            .nth(1)
            .is_some_and(|arg| arg == b"analyzer")
    })
}

/// The matches of a fresh kernel's first request, a completion at the end of `code`.
async fn first_completion(code: &str) -> Vec<String> {
    tokio::task::spawn_blocking(index_is_built).await.unwrap();
    let mut kernel = Kernel::start().await;
    let reply = complete(&mut kernel, code).await;
    assert!(
        !runs_rust_analyzer(&kernel),
        "`{code}` was sent to rust-analyzer: {:?}",
        reply.matches
    );
    let typed = code.len()
        - code
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |at| at + 1);
    assert_eq!(
        reply.cursor_end - reply.cursor_start,
        code[code.len() - typed..].chars().count(),
        "`{code}`: the replaced text is what was typed of the name"
    );
    reply.matches
}

async fn assert_first_completion_offers(code: &str, expected: &[&str]) {
    let matches = first_completion(code).await;
    for name in expected {
        assert!(
            matches.iter().any(|m| m == name),
            "`{code}` should offer `{name}`: {matches:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_a_std_module_path() {
    assert_first_completion_offers("std::collections::Hash", &["HashMap", "HashSet"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_a_std_type_in_a_module() {
    assert_first_completion_offers("let shared = std::sync::Ar", &["Arc"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_a_constant_three_modules_deep() {
    assert_first_completion_offers("let tau = 2.0 * std::f64::consts::P", &["PI"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_a_dependency_path() {
    assert_first_completion_offers("let layer = tch::nn::Lin", &["Linear", "linear"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_methods_of_a_cells_vec() {
    assert_first_completion_offers("let mut v = vec![1, 2];\nv.pu", &["push"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_fields_and_methods_of_a_notebook_type() {
    let code = "struct P { x: f64 }\nimpl P { fn norm(&self) -> f64 { self.x.abs() } }\n\
                let p = P { x: 1.0 };\np.";
    assert_first_completion_offers(code, &["x", "norm"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_prelude_names() {
    assert_first_completion_offers("let t = Ten", &["Tensor"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_local_variables() {
    assert_first_completion_offers(
        "let learning_rate = 0.1;\nlet lr2 = learn",
        &["learning_rate"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn first_tab_completes_macros() {
    assert_first_completion_offers("printl", &["println!"]).await;
    assert_first_completion_offers("let s = form", &["format!"]).await;
}

/// `(plain text, html)` of a fresh kernel's first request, a documentation request at the end
/// of `code`, and whether it started rust-analyzer.
async fn first_documentation(code: &str) -> (String, String, bool) {
    tokio::task::spawn_blocking(index_is_built).await.unwrap();
    let mut kernel = Kernel::start().await;
    let reply = kernel.inspect(code, code.chars().count()).await;
    assert!(reply.found, "`{code}`: {reply:?}");
    let data = serde_json::to_value(&reply.data).unwrap();
    let plain = data["text/plain"].as_str().unwrap_or_default().to_owned();
    let html = data["text/html"].as_str().unwrap_or_default().to_owned();
    (plain, html, runs_rust_analyzer(&kernel))
}

#[tokio::test(flavor = "multi_thread")]
async fn first_documentation_request_is_answered_from_the_index() {
    let (plain, html, analyzer) = first_documentation("let mut v = vec![1];\nv.push").await;
    assert!(!analyzer, "rust-analyzer was started: {plain}");
    assert!(
        plain.contains("pub fn push(&mut self, value: T)"),
        "{plain}"
    );
    assert!(
        plain.contains("Appends an element to the back of a collection"),
        "{plain}"
    );
    assert!(html.contains("<code"), "{html}");

    let (plain, _, analyzer) = first_documentation("let m = std::collections::HashMap").await;
    assert!(!analyzer, "rust-analyzer was started: {plain}");
    assert!(plain.contains("hash map"), "{plain}");

    let (plain, _, analyzer) = first_documentation("let z = Tensor::zeros").await;
    assert!(!analyzer, "rust-analyzer was started: {plain}");
    assert!(plain.contains("pub fn zeros("), "{plain}");

    // The notebook's own items, from their definitions.
    let code = "/// A point of the plane.\nstruct P {\n    /// How far across.\n    x: f64,\n}\n\
                let p = P { x: 1.0 };\np.x";
    let (plain, _, analyzer) = first_documentation(code).await;
    assert!(!analyzer, "rust-analyzer was started: {plain}");
    assert!(
        plain.contains("x: f64") && plain.contains("How far across."),
        "{plain}"
    );
}
