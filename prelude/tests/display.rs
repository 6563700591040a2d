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
        b.json.unwrap(),
        serde_json::json!({"shape": [3], "dtype": "float32", "device": "cpu"})
    );
    assert!(t.to_html().contains("3.0000"));
}

#[test]
fn evcxr_blocks_carry_every_mime_type() {
    let b = Bundle::text("t")
        .with_html("<b>h</b>")
        .with_json(serde_json::json!({"k": 1}));
    let s = b.evcxr_blocks();
    assert!(s.contains("EVCXR_BEGIN_CONTENT text/plain\nt\nEVCXR_END_CONTENT\n"));
    assert!(s.contains("EVCXR_BEGIN_CONTENT text/html\n<b>h</b>\nEVCXR_END_CONTENT\n"));
    assert!(s.contains("EVCXR_BEGIN_CONTENT application/json\n{\"k\":1}\nEVCXR_END_CONTENT\n"));
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
fn loss_plots_render_as_a_decodable_png_and_a_parsable_svg() {
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
    let json = b.json.unwrap();
    assert_eq!(json["series"][0]["name"], "loss");
    let y = json["series"][0]["y"].as_array().unwrap();
    assert!(y.last().unwrap().as_f64() < y.first().unwrap().as_f64());
    assert!(b.png.is_some() && b.svg.is_some());
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
    let json = b.json.unwrap();
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
