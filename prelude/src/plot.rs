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
        crate::display::encode_png(&rgb, w, h, png::ColorType::Rgb)
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
