//! A cell's final value renders as its own `evcxr_display()` says (evcxr's convention, which
//! plotters, evcxr_image and many crates follow), while text a cell prints stays text.

use crate::support::{Execution, Kernel};
use base64::Engine as _;
use jupyter_protocol::JupyterMessageContent;
use serde_json::Value;

/// The `execute_result`'s MIME bundle as JSON (`Null` when the cell showed no value).
fn value_data(run: &Execution) -> Value {
    run.iopub
        .iter()
        .find_map(|m| match &m.content {
            JupyterMessageContent::ExecuteResult(r) => Some(serde_json::to_value(&r.data).unwrap()),
            _ => None,
        })
        .unwrap_or(Value::Null)
}

/// A type of the notebook's own, as evcxr's documentation writes one: its `evcxr_display`
/// prints an HTML table between evcxr's block lines.
const MATRIX: &str = r#"
struct Matrix { rows: Vec<Vec<i32>> }
impl Matrix {
    pub fn evcxr_display(&self) {
        let mut html = String::from("<table>");
        for row in &self.rows {
            html.push_str("<tr>");
            for x in row { html.push_str(&format!("<td>{x}</td>")); }
            html.push_str("</tr>");
        }
        html.push_str("</table>");
        println!("EVCXR_BEGIN_CONTENT text/html\n{html}\nEVCXR_END_CONTENT");
    }
}"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_value_renders_through_its_own_evcxr_display_and_printed_blocks_stay_text() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 41;").await;
    kernel.run_ok(MATRIX).await;
    let run = kernel
        .run_ok("let m = Matrix { rows: vec![vec![1, 2], vec![3, 4]] };\nm")
        .await;
    let data = value_data(&run);
    assert_eq!(
        data["text/html"],
        "<table><tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table>",
        "{:?}",
        run.iopub
    );
    assert!(run.stdout().is_empty(), "{}", run.stdout());

    // The same lines printed by the cell, before its value, are the cell's text: the value
    // (a number) renders as a number.
    let printed = kernel
        .run_ok(
            "let page = \"EVCXR_BEGIN_CONTENT text/html\\n<script>alert(1)</script>\\nEVCXR_END_CONTENT\";\n\
             { println!(\"{page}\"); kept + 1 }",
        )
        .await;
    assert_eq!(
        printed.stdout(),
        "EVCXR_BEGIN_CONTENT text/html\n<script>alert(1)</script>\nEVCXR_END_CONTENT\n"
    );
    let data = value_data(&printed);
    assert_eq!(data, serde_json::json!({"text/plain": "42"}));

    // The value keeps its place: the variable is still there for the next cell.
    let next = kernel.run_ok("m.rows[1][1] + kept").await;
    assert_eq!(next.result().as_deref(), Some("45"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_value_whose_evcxr_display_panics_fails_its_cell_and_leaves_no_block_open() {
    let mut kernel = Kernel::start().await;
    kernel.run_ok("let kept = 1;").await;
    kernel
        .run_ok(
            "struct Broken;\nimpl Broken { pub fn evcxr_display(&self) { \
             println!(\"EVCXR_BEGIN_CONTENT text/html\\n<b>half\"); panic!(\"drawing failed\"); } }",
        )
        .await;
    let run = kernel.execute("Broken").await;
    let (_, evalue, _) = run.error().expect("the cell fails");
    assert!(evalue.contains("drawing failed"), "{evalue}");
    assert_eq!(value_data(&run), Value::Null);
    // What the next cell prints is its own text, not the rest of a block.
    let next = kernel
        .run_ok("println!(\"EVCXR_BEGIN_CONTENT text/html\");\nkept + 1")
        .await;
    assert_eq!(next.stdout(), "EVCXR_BEGIN_CONTENT text/html\n");
    assert_eq!(next.result().as_deref(), Some("2"));
}

/// Published crates that follow evcxr's convention, through `:dep` as their documentation says:
/// plotters' `evcxr` feature (an SVG figure as HTML) and evcxr_image (an image as PNG).
#[tokio::test(flavor = "multi_thread")]
async fn published_crates_that_implement_evcxr_display_render_rich() {
    let mut kernel = Kernel::start().await;
    let figure = kernel
        .run_ok(
            ":dep plotters = { version = \"0.3.7\", default-features = false, features = [\"evcxr\", \"line_series\"] }\n\
             use plotters::prelude::*;\n\
             evcxr_figure((320, 200), |root| {\n\
                 root.fill(&WHITE)?;\n\
                 let mut chart = ChartBuilder::on(&root).build_cartesian_2d(0f32..1f32, 0f32..1f32)?;\n\
                 chart.draw_series(LineSeries::new(vec![(0.0, 0.0), (1.0, 1.0)], &RED))?;\n\
                 Ok(())\n\
             })",
        )
        .await;
    let html = value_data(&figure)["text/html"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        html.starts_with("<div style=\"\"><svg") && html.contains("<polyline"),
        "{:?}",
        figure.iopub
    );
    assert!(figure.stdout().is_empty(), "{}", figure.stdout());

    let image = kernel
        .run_ok(
            ":dep image = { version = \"0.23.14\", default-features = false, features = [\"png\"] }\n\
             :dep evcxr_image = \"1.1.0\"\n\
             use evcxr_image::ImageDisplay;\n\
             image::ImageBuffer::from_fn(8, 4, |x, _| image::Rgb([x as u8 * 30, 0, 255]))",
        )
        .await;
    let png = value_data(&image)["image/png"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(png.trim())
        .unwrap_or_default();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{:?}", image.iopub);
    // Width 8, height 4, in the IHDR chunk.
    assert_eq!(&bytes[16..24], &[0, 0, 0, 8, 0, 0, 0, 4]);
}
