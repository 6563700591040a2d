//! Loss curves drawn with plotters, as SVG and PNG, with a bundled font (DejaVu Sans) so they
//! render on a headless machine, and described in words for their alt text. A [`LossPlot`] redraws itself in place while a loop pushes
//! points (at most twice a second), and renders fully when a cell ends with it.

use crate::display::{Bundle, Live, Render, rich};
use plotters::prelude::*;
use serde_json::json;
use std::sync::Once;
use std::time::Duration;

/// DejaVu Sans (see assets/DejaVuSans-LICENSE.txt), registered with plotters as "sans-serif".
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

const REDRAW: Duration = Duration::from_millis(500);
const SIZE: (u32, u32) = (640, 400);

/// One named line.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut plot = LossPlot::new("loss");
/// plot.push(1.0, 0.5);
/// assert_eq!(plot.series()[0].points, [(1.0, 0.5)]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// A live loss plot.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut plot = LossPlot::new("training loss");
/// for epoch in 1..=10 {
///     plot.push(epoch as f64, 1.0 / epoch as f64);
/// }
/// assert!(plot.png().starts_with(b"\x89PNG"));
/// assert!(plot.svg().contains("<svg"));
/// ```
pub struct LossPlot {
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<Series>,
    live: Live,
}

impl LossPlot {
    /// An empty plot with a title; axes "epoch" and "loss".
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// # let _ = &mut plot;
    /// ```
    pub fn new(title: &str) -> Self {
        LossPlot {
            title: title.to_string(),
            x_label: "epoch".into(),
            y_label: "loss".into(),
            series: Vec::new(),
            live: Live::new(REDRAW),
        }
    }

    /// Axis labels.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let plot = LossPlot::new("loss").labels("step", "cross-entropy");
    /// # let _ = plot;
    /// ```
    pub fn labels(mut self, x: &str, y: &str) -> Self {
        self.x_label = x.to_string();
        self.y_label = y.to_string();
        self
    }

    /// Adds a point to the series "loss" and redraws in place (inside a kernel).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// for epoch in 1..=3 {
    ///     plot.push(epoch as f64, 1.0 / epoch as f64);
    /// }
    /// ```
    pub fn push(&mut self, x: f64, y: f64) {
        self.push_to("loss", x, y)
    }

    /// Adds a point to a named series (e.g. "train", "test") and redraws in place.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// plot.push_to("train", 1.0, 0.9);
    /// plot.push_to("test", 1.0, 1.1);
    /// assert_eq!(plot.series().len(), 2);
    /// ```
    pub fn push_to(&mut self, series: &str, x: f64, y: f64) {
        crate::interrupt::check();
        match self.series.iter_mut().find(|s| s.name == series) {
            Some(s) => s.points.push((x, y)),
            None => self.series.push(Series {
                name: series.to_string(),
                points: vec![(x, y)],
            }),
        }
        self.redraw(false);
    }

    /// Draws the final state in place (call after the loop; a cell ending with the plot shows
    /// it anyway). In a plain process it prints a one-line summary of each series.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// plot.push(1.0, 0.5);
    /// plot.finish();
    /// ```
    pub fn finish(&mut self) {
        if crate::runtime::in_kernel() {
            self.redraw(true);
        } else {
            println!("{}", self.text());
        }
    }

    /// The series.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// assert!(plot.series().is_empty());
    /// ```
    pub fn series(&self) -> &[Series] {
        &self.series
    }

    fn redraw(&mut self, force: bool) {
        if self.live.due(force) {
            let frame = self.bundle();
            self.live.draw(&frame);
        }
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        register_font();
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let points = self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        );
        for &(x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        if x1 - x0 < 1e-12 {
            x1 = x0 + 1.0;
        }
        let pad = ((y1 - y0) * 0.05).max(1e-6);
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            // Room for half of the last x tick's label, which is centred on the plot's edge.
            .margin_right(28)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style(("sans-serif", 13))
            .x_label_formatter(&|v| tick_label(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .draw()
            .map_err(e)?;
        for (i, s) in self.series.iter().enumerate() {
            let colour = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(e)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
        }
        if !self.series.is_empty() {
            chart
                .configure_series_labels()
                // A loss curve falls from the upper left: the upper right is where it is not.
                .position(SeriesLabelPosition::UpperRight)
                .label_font(("sans-serif", 13))
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(e)?;
        }
        root.present().map_err(e)
    }

    /// The plot as an SVG document.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// plot.push(1.0, 0.5);
    /// assert!(plot.svg().starts_with("<svg"));
    /// ```
    pub fn svg(&self) -> String {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
            if let Err(err) = self.draw(root) {
                return format!(
                    "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>plot failed: {err}</text></svg>"
                );
            }
        }
        out
    }

    /// The plot as PNG bytes.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// plot.push(1.0, 0.5);
    /// assert!(plot.png().starts_with(b"\x89PNG"));
    /// ```
    pub fn png(&self) -> Vec<u8> {
        let (w, h) = SIZE;
        let mut rgb = vec![255u8; (w * h * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
            let _ = self.draw(root);
        }
        encode_indexed_png(&rgb, w, h)
    }

    /// Writes `.svg` or `.png` by the file's extension.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("loss");
    /// plot.push(1.0, 0.5);
    /// plot.save("loss.svg").unwrap();
    /// plot.save("loss.png").unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        match path.extension().and_then(|e| e.to_str()) {
            Some("svg") => std::fs::write(path, self.svg()),
            _ => std::fs::write(path, self.png()),
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "title": self.title,
            "series": self.series.iter().map(|s| json!({
                "name": s.name,
                "x": s.points.iter().map(|p| p.0).collect::<Vec<_>>(),
                "y": s.points.iter().map(|p| p.1).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The plot in words, for the image's alt text: what is drawn against what, and for each
    /// line where it starts, where it ends and its lowest point.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut plot = LossPlot::new("training loss");
    /// for step in 1..=120 {
    ///     plot.push(step as f64, 2.0 / step as f64);
    /// }
    /// assert_eq!(
    ///     plot.alt(),
    ///     "Line plot \"training loss\" of loss against epoch: loss over epoch 1 to 120 \
    ///      (120 points) goes from 2.0000 to 0.0167, lowest 0.0167."
    /// );
    /// ```
    pub fn alt(&self) -> String {
        let mut alt = format!(
            "Line plot \"{}\" of {} against {}",
            self.title, self.y_label, self.x_label
        );
        if self.series.is_empty() {
            alt.push_str(", no points yet");
        }
        for (i, s) in self.series.iter().enumerate() {
            alt.push_str(if i == 0 { ": " } else { "; " });
            let finite: Vec<(f64, f64)> = (s.points.iter().copied())
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            let (Some(first), Some(last)) = (finite.first(), finite.last()) else {
                alt.push_str(&format!("{} has no finite points", s.name));
                continue;
            };
            let lowest = finite.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            alt.push_str(&format!(
                "{} over {} {} to {} ({} point{}) goes from {:.4} to {:.4}, lowest {:.4}",
                s.name,
                self.x_label,
                tick_label(first.0),
                tick_label(last.0),
                s.points.len(),
                if s.points.len() == 1 { "" } else { "s" },
                first.1,
                last.1,
                lowest
            ));
        }
        alt.push('.');
        alt
    }

    fn text(&self) -> String {
        let mut t = format!("{}:", self.title);
        for s in &self.series {
            match (s.points.first(), s.points.last()) {
                (Some(a), Some(b)) => t.push_str(&format!(
                    " {} {} points, {:.4} at {} → {:.4} at {}",
                    s.name,
                    s.points.len(),
                    a.1,
                    a.0,
                    b.1,
                    b.0
                )),
                _ => t.push_str(&format!(" {} (empty)", s.name)),
            }
        }
        t
    }
}

/// An axis tick as a person writes it: `20`, not `20.0`; `0.25`, not `0.250`.
fn tick_label(v: f64) -> String {
    if v == v.round() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let magnitude = v.abs().log10().floor();
    let decimals = (3.0 - magnitude).clamp(1.0, 8.0) as usize;
    let s = format!("{v:.decimals$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The plot as an indexed-colour PNG, deflated at the best level: a plot is a few flat colours
/// and their anti-aliased edges, so a palette of 256 holds it (exactly, as a rule) in a quarter
/// of the bytes RGB takes, and the file is a few tens of KB where fast RGB took 100–180 KB,
/// which every committed notebook and every live redraw carries.
fn encode_indexed_png(rgb: &[u8], w: u32, h: u32) -> Vec<u8> {
    let (palette, indices) = palette_of(rgb);
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(png::ColorType::Indexed);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_palette(palette);
        encoder.set_deflate_compression(png::DeflateCompression::Level(9));
        // Rows of palette indices compress best unfiltered (the PNG specification's advice).
        encoder.set_filter(png::Filter::NoFilter);
        if let Ok(mut writer) = encoder.write_header() {
            let _ = writer.write_image_data(&indices);
        }
    }
    out
}

/// A palette for `rgb` (at most 256 colours, as RGB triples) and each pixel's index into it.
/// A picture of 256 colours or fewer is kept exactly. Beyond that, the 256 most frequent colours
/// are the palette and each rarer one, a blend along some anti-aliased edge, takes the nearest
/// of them.
fn palette_of(rgb: &[u8]) -> (Vec<u8>, Vec<u8>) {
    use std::collections::HashMap;
    let mut counts: HashMap<[u8; 3], u32> = HashMap::new();
    for px in rgb.chunks_exact(3) {
        *counts.entry([px[0], px[1], px[2]]).or_insert(0) += 1;
    }
    let mut colours: Vec<([u8; 3], u32)> = counts.into_iter().collect();
    // Most frequent first; ties by colour, so the same picture always gives the same file.
    colours.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kept: Vec<[u8; 3]> = colours.iter().take(256).map(|c| c.0).collect();
    let mut index: HashMap<[u8; 3], u8> = kept
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, i as u8))
        .collect();
    for (colour, _) in colours.iter().skip(256) {
        let nearest = kept
            .iter()
            .enumerate()
            .min_by_key(|(_, k)| {
                (0..3)
                    .map(|ch| (i32::from(colour[ch]) - i32::from(k[ch])).pow(2))
                    .sum::<i32>()
            })
            .map_or(0, |(i, _)| i as u8);
        index.insert(*colour, nearest);
    }
    let indices = rgb
        .chunks_exact(3)
        .map(|px| index[&[px[0], px[1], px[2]]])
        .collect();
    (kept.concat(), indices)
}

/// PNG only, live or final: front ends prefer an SVG when a bundle has both and show it as an
/// `<img>` no template gives alt text (nbconvert's reads none for SVG), while a PNG's alt text is
/// read from the output's metadata. `svg()` and `save("….svg")` still give the vector form.
impl Render for LossPlot {
    fn bundle(&self) -> Bundle {
        let mut b = Bundle::text(self.text())
            .with_data("loss-plot", self.json())
            .with_alt(self.alt());
        b.png = Some(self.png());
        b
    }
}

rich!(LossPlot);

#[cfg(test)]
mod tests {
    use super::*;

    /// A plot's RGB pixels, as `png()` draws them before encoding.
    fn pixels(plot: &LossPlot) -> Vec<u8> {
        let (w, h) = SIZE;
        let mut rgb = vec![255u8; (w * h * 3) as usize];
        let _ = plot.draw(BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area());
        rgb
    }

    fn decode_rgb(png_bytes: &[u8]) -> Vec<u8> {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        buf
    }

    #[test]
    fn a_plot_png_shows_the_drawing_it_encodes() {
        let mut plot = LossPlot::new("CIFAR-10 Net: mean loss over 2000 mini-batches");
        for i in 1..=120 {
            let x = i as f64;
            plot.push(x, 2.3 / x.sqrt() + 0.05 * (x * 0.7).sin());
            plot.push_to("test", x, 2.4 / x.sqrt());
        }
        let drawn = pixels(&plot);
        let shown = decode_rgb(&plot.png());
        assert_eq!(shown.len(), drawn.len());
        // Pixels whose colour is not in the palette take the nearest one: along anti-aliased
        // edges only, and by a shade no eye tells apart.
        let changed = drawn
            .chunks_exact(3)
            .zip(shown.chunks_exact(3))
            .filter(|(a, b)| a != b)
            .count();
        let worst = drawn
            .iter()
            .zip(&shown)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        let pixels = drawn.len() / 3;
        assert!(
            changed * 200 < pixels,
            "{changed} of {pixels} pixels changed"
        );
        assert!(worst <= 48, "a pixel changed by {worst} in one channel");
    }

    #[test]
    fn a_picture_of_few_colours_is_kept_exactly() {
        let rgb: Vec<u8> = (0..64 * 64)
            .flat_map(|i| [(i % 200) as u8, 255 - (i % 200) as u8, 7])
            .collect();
        let (palette, indices) = palette_of(&rgb);
        assert_eq!(palette.len(), 200 * 3);
        let back: Vec<u8> = indices
            .iter()
            .flat_map(|&i| palette[3 * i as usize..3 * i as usize + 3].to_vec())
            .collect();
        assert_eq!(back, rgb);
    }
}
