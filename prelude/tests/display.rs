use crate::{is_child, run_child};
use tchbook_prelude::display::{Bundle, Render};
use tchbook_prelude::prelude::*;

#[test]
fn tensors_print_like_pytorch() {
    let t = Tensor::from_slice(&[6i64, 8, 10, 12]).view([2, 2]);
    assert_eq!(t.repr(), "tensor([[ 6,  8],\n        [10, 12]])");
    assert_eq!(Tensor::from_slice(&[1f32, 2.]).repr(), "tensor([1., 2.])");
    assert_eq!(
        Tensor::from_slice(&[0.5f32, 1.25]).repr(),
        "tensor([0.5000, 1.2500])"
    );
    assert_eq!(Tensor::from(3.5f32).repr(), "tensor(3.5000)");
    assert_eq!(
        Tensor::from_slice(&[1f64, 2.]).repr(),
        "tensor([1., 2.], dtype=torch.float64)"
    );
    assert_eq!(
        Tensor::from_slice(&[true, false]).repr(),
        "tensor([ True, False])"
    );
    assert_eq!(
        Tensor::arange(2000, (Kind::Int64, Device::Cpu)).repr(),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    );
    assert_eq!(
        Tensor::zeros([0, 3], (Kind::Float, Device::Cpu)).repr(),
        "tensor([], size=(0, 3))"
    );
    let g = Tensor::ones([2], (Kind::Float, Device::Cpu)).set_requires_grad(true);
    assert_eq!(g.repr(), "tensor([1., 1.], requires_grad=True)");
}

#[test]
fn tensor_html_and_json_carry_shape_dtype_device_and_values() {
    let t = Tensor::from_slice(&[1.5f32, 2.25, 3.0]);
    let b = t.bundle();
    let html = b.html.unwrap();
    assert!(html.contains("[3]") && html.contains("float32") && html.contains("cpu"));
    assert!(html.contains("1.5000") && html.contains("2.2500"));
    assert_eq!(
        b.data.unwrap().1,
        serde_json::json!({"shape": [3], "dtype": "float32", "device": "cpu"})
    );
    assert!(t.to_html().contains("3.0000"));
}

#[test]
fn evcxr_blocks_carry_every_mime_type() {
    let b = Bundle::text("t")
        .with_html("<b>h</b>")
        .with_data("thing", serde_json::json!({"k": 1}));
    let s = b.evcxr_blocks();
    assert!(s.contains("EVCXR_BEGIN_CONTENT text/plain\nt\nEVCXR_END_CONTENT\n"));
    assert!(s.contains("EVCXR_BEGIN_CONTENT text/html\n<b>h</b>\nEVCXR_END_CONTENT\n"));
    assert!(s.contains(
        "EVCXR_BEGIN_CONTENT application/vnd.tchbook.thing+json\n{\"k\":1}\nEVCXR_END_CONTENT\n"
    ));
    // JupyterLab's JSON viewer outranks HTML and images: a bundle must never carry this type.
    assert!(!s.contains("application/json"));
}

fn decode_png(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("PNG header decodes");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("PNG data decodes");
    // Something was drawn: not a blank white image.
    assert!(buf[..info.buffer_size()].iter().any(|&v| v < 128));
    (info.width, info.height)
}

#[test]
fn loss_plots_render_as_a_decodable_png_with_alt_text_and_a_parsable_svg() {
    let mut plot = LossPlot::new("training loss");
    for epoch in 1..=20 {
        plot.push(epoch as f64, 2.0 / epoch as f64);
        plot.push_to("test", epoch as f64, 2.5 / epoch as f64);
    }
    plot.finish();
    assert_eq!(decode_png(&plot.png()), (640, 400));
    let svg = plot.svg();
    let doc = roxmltree::Document::parse(&svg).expect("SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert!(svg.contains("training loss") && svg.contains("epoch"));
    let b = plot.bundle();
    let json = b.data.clone().unwrap().1;
    assert_eq!(json["series"][0]["name"], "loss");
    let y = json["series"][0]["y"].as_array().unwrap();
    assert!(y.last().unwrap().as_f64() < y.first().unwrap().as_f64());
    // PNG only: a front end would show an SVG beside it as an image without alt text.
    assert!(b.png.is_some() && b.svg.is_none());
    let alt = &b.metadata()["image/png"]["alt"];
    assert_eq!(
        alt,
        "Line plot \"training loss\" of loss against epoch: loss over epoch 1 to 20 (20 points) \
         goes from 2.0000 to 0.1000, lowest 0.1000; test over epoch 1 to 20 (20 points) goes \
         from 2.5000 to 0.1250, lowest 0.1250."
    );
    let dir = crate::scratch("plot");
    plot.save(dir.join("loss.svg")).unwrap();
    plot.save(dir.join("loss.png")).unwrap();
    assert!(
        std::fs::read(dir.join("loss.png"))
            .unwrap()
            .starts_with(b"\x89PNG")
    );
}

#[test]
fn a_loss_plot_png_stays_small_enough_to_commit_and_redraw_live() {
    // A long, noisy curve and a second series: the most anti-aliased edges a loss plot has.
    let mut plot = LossPlot::new("CIFAR-10 (stand-in) Net: mean loss over 2000 mini-batches");
    for i in 1..=500 {
        let x = i as f64;
        plot.push(x, 2.3 / x.sqrt() + 0.1 * (x * 1.3).sin());
        plot.push_to("test", x, 2.5 / x.sqrt() + 0.05 * (x * 0.4).cos());
    }
    let png = plot.png();
    assert_eq!(decode_png(&png), (640, 400));
    // Fast RGB deflate made 100-180 KB of these.
    assert!(png.len() < 40_000, "a {} byte plot", png.len());
}

#[test]
fn plot_ticks_read_as_written_fit_the_image_and_the_legend_stays_off_the_curve() {
    let mut plot = LossPlot::new("training loss");
    for step in 1..=200 {
        plot.push(step as f64, 2.0 / step as f64);
    }
    let svg = plot.svg();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<(String, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| Some((n.text()?.trim().to_owned(), n.attribute("x")?.parse().ok()?)))
        .collect();
    let labels: Vec<&str> = texts.iter().map(|(t, _)| t.as_str()).collect();
    // Whole numbers as people write them: `20`, not `20.0`.
    assert!(
        !labels.iter().any(|t| t.ends_with(".0")),
        "ticks with a needless .0: {labels:?}"
    );
    // The last x tick is whole, inside the 640-pixel image.
    let (last, x) = texts
        .iter()
        .filter(|(t, _)| t.parse::<f64>().is_ok_and(|v| v >= 100.0))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("x ticks up to 200");
    assert!(
        x + 4.0 * last.len() as f64 <= 640.0,
        "{last} at x={x} is cut"
    );
    // The legend sits at the upper right, away from a falling curve's start.
    // (The y axis is also labelled `loss`, at the far left.)
    let legend_x = texts
        .iter()
        .filter(|(t, _)| t == "loss")
        .map(|(_, x)| *x)
        .fold(f64::MIN, f64::max);
    assert!(legend_x > 320.0, "legend at x={legend_x}");
}

#[test]
fn an_empty_plot_still_renders() {
    let plot = LossPlot::new("nothing yet");
    decode_png(&plot.png());
    roxmltree::Document::parse(&plot.svg()).unwrap();
}

#[test]
fn progress_bars_report_rate_and_counts() {
    let mut bar = Progress::new(10, "batch").description("epoch 1");
    for _ in 0..10 {
        bar.tick();
    }
    bar.set_postfix("loss=0.5");
    bar.finish();
    let b = bar.bundle();
    assert!(
        b.text.starts_with("epoch 1 ")
            && b.text.contains("100% 10/10")
            && b.text.contains("loss=0.5"),
        "{}",
        b.text
    );
    let json = b.data.unwrap().1;
    assert_eq!(
        (json["done"].as_u64(), json["total"].as_u64()),
        (Some(10), Some(10))
    );
    assert!(
        b.html
            .unwrap()
            .contains("<progress value=\"10\" max=\"10\"")
    );
    assert_eq!(progress(vec![1, 2, 3]).map(|x| x * 2).sum::<i32>(), 12);
}

#[test]
fn datasets_and_tables_render_with_their_numbers() {
    let df = iris();
    let b = df.bundle();
    assert!(b.html.unwrap().contains("sepal length (cm)") && b.text.contains("5.1"));
    let ds = TensorDataset::new(
        Tensor::zeros([7, 2], (Kind::Float, Device::Cpu)),
        Tensor::zeros([7], (Kind::Int64, Device::Cpu)),
    );
    assert!(ds.bundle().text.contains("7 samples"));
    let vs = nn::VarStore::new(Device::Cpu);
    let model = IrisModel::new(&vs.root());
    assert!(
        model
            .bundle()
            .text
            .contains("(fc2): Linear(in_features=8, out_features=9, bias=True)")
    );
}

// ---------------------------------------------------------------------------------------------
// Plain display of std values: one compilation where evcxr needed two

const PLAIN_CHILD: &str = "display::plain_display_child";

/// evcxr's output format settings: (name, `:fmt {:#?}`, `:types`).
const PLAIN_MODES: [(&str, bool, bool); 4] = [
    ("debug", false, false),
    ("pretty", true, false),
    ("types", false, true),
    ("pretty types", true, true),
];

/// Values a cell may end with. Every one must have `evcxr_display` through the prelude alone:
/// the child below would not compile otherwise.
macro_rules! each_value {
    ($show:ident) => {{
        use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
        use std::path::{Path, PathBuf};
        use std::rc::Rc;
        use std::sync::Arc;
        use std::time::Duration;
        $show!(1 + 1);
        $show!(-7i8);
        $show!(u128::MAX);
        $show!(usize::MIN);
        $show!(2.5);
        $show!(1.0f32 / 3.0);
        $show!(f64::NAN);
        $show!(1e21);
        $show!(true);
        $show!('\n');
        $show!("tab\there \"quoted\"\n");
        $show!(String::from("owned"));
        $show!(&String::from("sliced")[1..]);
        $show!(vec![1, 2, 3]);
        $show!(Vec::<String>::new());
        $show!(VecDeque::from([1u8, 2]));
        $show!(&[1.5f32, 2.0][..]);
        $show!([[1, 2], [3, 4]]);
        $show!([0u8; 0]);
        $show!(Some("x"));
        $show!(None::<i32>);
        $show!(Ok::<i32, String>(3));
        $show!(Err::<(), String>("bad".into()));
        $show!(Box::new(5u16));
        $show!(Rc::new(vec!['a']));
        $show!(Arc::new(String::from("shared")));
        $show!((1,));
        $show!((1, "two"));
        $show!((1, "two", 3.0, '4', [5], (6, 7)));
        $show!(BTreeMap::from([(1, "a"), (2, "b")]));
        $show!(HashMap::from([("k", vec![1])]));
        $show!(HashSet::from([3]));
        $show!(BTreeSet::from([2, 1]));
        $show!(Duration::from_millis(1500));
        $show!(PathBuf::from("data/cifar-10"));
        $show!(Path::new("a b"));
        $show!(0..3);
        $show!(1..=3);
        $show!(vec![Tensor::from(1.0)]);
        $show!(Some(Device::Cpu));
        $show!((Kind::Float, Device::Cpu));
    }};
}

/// Type names shortened as evcxr 0.22 does it (`evcxr_shorten_type` in its eval_context.rs,
/// copied unchanged): the reference the prelude's own copy is checked against.
fn evcxr_shorten_type(t: &str) -> String {
    let mut r = String::with_capacity(t.len());
    let mut is_skipping = false;
    for c in t.chars().rev() {
        if !is_skipping {
            if c == ':' {
                is_skipping = true;
            } else {
                r.push(c);
            }
        } else if !c.is_alphanumeric() && c != '_' && c != ':' {
            is_skipping = false;
            r.push(c);
        }
    }
    r.chars().rev().collect()
}

fn evcxr_get_type_name<T>(_: &T) -> String {
    evcxr_shorten_type(std::any::type_name::<T>())
}

/// What evcxr 0.22's fallback prints for each value of `each_value!`: its generated code is
/// `evcxr_send_text_plain(&format!("{:?}", &(value)))`, or under `:types`
/// `{ let r = &(value); evcxr_send_text_plain(&format!(": {} = {:?}", evcxr_get_type_name(r), r)) }`,
/// with `{:#?}` after `:fmt {:#?}`.
fn evcxr_fallback(pretty: bool, types: bool) -> String {
    let mut out = String::new();
    macro_rules! fallback {
        ($e:expr) => {{
            let r = &($e);
            let text = match (types, pretty) {
                (false, false) => format!("{:?}", r),
                (false, true) => format!("{:#?}", r),
                (true, false) => format!(": {} = {:?}", evcxr_get_type_name(r), r),
                (true, true) => format!(": {} = {:#?}", evcxr_get_type_name(r), r),
            };
            out.push_str("EVCXR_BEGIN_CONTENT text/plain\n");
            out.push_str(&text);
            out.push_str("\nEVCXR_END_CONTENT\n");
        }};
    }
    each_value!(fallback);
    out
}

#[test]
#[ignore = "runs only as the child process of another test"]
// The calls are written as evcxr generates them, unit values and borrows included.
#[allow(clippy::unit_arg, clippy::needless_borrow, clippy::double_parens)]
fn plain_display_child() {
    use tchbook_prelude::display::set_plain_format;
    if !is_child(PLAIN_CHILD) {
        return;
    }
    // Each call as evcxr writes it for a cell's final expression: `(value).evcxr_display();`.
    macro_rules! cell_ends_with {
        ($e:expr) => {
            ($e).evcxr_display();
        };
    }
    for (name, pretty, types) in PLAIN_MODES {
        set_plain_format(pretty, types);
        println!("== {name}");
        each_value!(cell_ends_with);
    }
    set_plain_format(false, false);
    println!("== unit");
    (()).evcxr_display();
    (println!("printed")).evcxr_display();
    (for _ in 0..2 {}).evcxr_display();
    println!("== rich");
    let t = Tensor::from(1.0);
    t.evcxr_display();
    let boxed = Box::new(Tensor::from(2.0));
    boxed.evcxr_display();
    let shared = std::rc::Rc::new(Tensor::from(3.0));
    shared.evcxr_display();
    (&t).evcxr_display();
    println!("== end");
}

/// The child's output between `== name` and the next `== ` line.
fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let marker = format!("== {name}\n");
    let start = out
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {out}"))
        + marker.len();
    let rest = &out[start..];
    if rest.starts_with("== ") {
        return "";
    }
    rest.find("\n== ").map_or(rest, |end| &rest[..end + 1])
}

#[test]
fn std_values_print_exactly_what_evcxrs_fallback_prints_in_every_format() {
    let out = run_child(PLAIN_CHILD);
    for (name, pretty, types) in PLAIN_MODES {
        let expected = evcxr_fallback(pretty, types);
        let got = section(&out, name);
        if got != expected {
            // The first differing block, not two pages of text.
            let (g, e) = got
                .split_inclusive("EVCXR_END_CONTENT\n")
                .zip(expected.split_inclusive("EVCXR_END_CONTENT\n"))
                .find(|(g, e)| g != e)
                .unwrap_or((got, &expected));
            panic!("{name}: the prelude printed\n{g}\nwhere evcxr prints\n{e}");
        }
    }
    // Spot checks of the reference itself.
    assert!(out.contains("EVCXR_BEGIN_CONTENT text/plain\n2\nEVCXR_END_CONTENT\n"));
    assert!(out.contains("\n: Option<&str> = Some(\"x\")\n"));
    assert!(out.contains("\n: &[f32] = [1.5, 2.0]\n"));
    assert!(out.contains("\n: &str = \"liced\"\n"));
    assert!(out.contains("\n: Vec<Tensor> = ["));
    assert!(out.contains("\n[\n    1,\n    2,\n    3,\n]\n"));
}

#[test]
fn a_cell_ending_in_unit_shows_nothing_and_tensors_stay_rich() {
    let out = run_child(PLAIN_CHILD);
    assert_eq!(section(&out, "unit"), "printed\n");
    let rich = section(&out, "rich");
    // Tensor, Box<Tensor>, Rc<Tensor> and &Tensor all reach TensorDisplay, not plain Debug.
    assert_eq!(
        rich.matches("EVCXR_BEGIN_CONTENT text/html\n").count(),
        4,
        "{rich}"
    );
    for value in ["tensor(1., dtype=torch.float64)", "tensor(2.", "tensor(3."] {
        assert!(rich.contains(value), "{value} missing from {rich}");
    }
}
