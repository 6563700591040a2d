//! `interact`: a closure re-run whenever one of its controls changes, its result shown in an
//! `Output` below the controls (ipywidgets' `interactive`).

use super::boxes::VBox;
use super::model::Model;
use super::output::{Output, display};
use super::widget::sealed::AsModel;
use super::widget::{Control, Widget, widget};
use crate::display::Render;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};

/// The controls of an [`interact`]: a tuple of one to three [`Control`]s, whose values reach
/// the closure as a tuple of the same shape.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let controls = (IntSlider::new().with_value(2), Checkbox::new());
/// assert_eq!(controls.values(), (2, false));
/// ```
pub trait Controls: Send + Sync + 'static {
    /// The values, one per control, in order.
    type Values;

    /// The values now.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!((Text::new().with_value("a"),).values(), ("a".to_string(),));
    /// ```
    fn values(&self) -> Self::Values;

    /// The controls as widgets, in order.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!((IntSlider::new(), IntSlider::new()).widgets().len(), 2);
    /// ```
    fn widgets(&self) -> Vec<&dyn Widget>;

    /// Runs `f` on the prelude's callback thread each time any of the values changes.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// (Checkbox::new(),).watch(std::sync::Arc::new(|| println!("changed")));
    /// ```
    fn watch(&self, f: Arc<dyn Fn() + Send + Sync>);
}

macro_rules! controls {
    ($($c:ident $i:tt),+) => {
        impl<$($c: Control),+> Controls for ($($c,)+) {
            type Values = ($($c::Value,)+);
            fn values(&self) -> Self::Values {
                ($(self.$i.current(),)+)
            }
            fn widgets(&self) -> Vec<&dyn Widget> {
                vec![$(&self.$i as &dyn Widget),+]
            }
            fn watch(&self, f: Arc<dyn Fn() + Send + Sync>) {
                $(self.$i.watch(Arc::clone(&f));)+
            }
        }
    };
}

controls!(A 0);
controls!(A 0, B 1);
controls!(A 0, B 1, C 2);

/// What an [`interact`] closure returns, shown in its output area: a rich value (a plot, a
/// `Bundle`, a tensor's display, a widget) as a `display_data`, a `String` as text, `()` as
/// nothing.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// assert_eq!(().into_outputs().len(), 0);
/// assert_eq!(String::from("x = 1").into_outputs()[0]["text"], "x = 1\n");
/// ```
pub trait IntoOutput {
    /// The Jupyter outputs to show.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// use tchbook_prelude::display::Bundle;
    /// let shown = Bundle::text("a").into_outputs();
    /// assert_eq!(shown[0]["output_type"], "display_data");
    /// ```
    fn into_outputs(self) -> Vec<Value>;
}

impl IntoOutput for () {
    fn into_outputs(self) -> Vec<Value> {
        Vec::new()
    }
}

impl IntoOutput for String {
    fn into_outputs(self) -> Vec<Value> {
        let text = if self.ends_with('\n') {
            self
        } else {
            self + "\n"
        };
        vec![json!({"output_type": "stream", "name": "stdout", "text": text})]
    }
}

impl IntoOutput for &str {
    fn into_outputs(self) -> Vec<Value> {
        self.to_owned().into_outputs()
    }
}

impl<T: Render> IntoOutput for T {
    fn into_outputs(self) -> Vec<Value> {
        vec![display(&self)]
    }
}

/// The widget [`interact`] makes: its controls above the output area, in a `VBox`. Show it
/// (as a cell's value, or with `show`) to use it.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let i = interact((IntSlider::new().with_value(3),), |(n,)| format!("{n} squared is {}", n * n));
/// assert_eq!(i.output().outputs()[0]["text"], "3 squared is 9\n");
/// ```
#[derive(Clone)]
pub struct Interact {
    model: Arc<Model>,
    output: Output,
}

impl Interact {
    /// The output area the closure's results go to.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let i = interact((Checkbox::new(),), |(on,)| if on { "on" } else { "off" });
    /// assert_eq!(i.output().outputs()[0]["text"], "off\n");
    /// ```
    pub fn output(&self) -> &Output {
        &self.output
    }
}

widget!(Interact);

/// Runs `f` with the controls' values now, and again on the prelude's callback thread each time
/// one of them changes, showing what it returns ([`IntoOutput`]) in place of what it returned
/// before. The controls are a tuple of one to three [`Control`]s (sliders, check boxes,
/// drop-downs, text fields, built as usual) and `f` takes their values as a tuple of the same
/// shape. The result is a widget to show: the controls above the output.
///
/// `f` runs on the callback thread after the first time, so it may use only what it owns or
/// captured (data moved or cloned into it, `Arc`s), not the notebook's variables by
/// reference: those belong to the cell that made them.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let view = interact(
///     (FloatSlider::new().min(0.1).max(5.0).with_value(1.0).description("freq"),
///      IntSlider::new().min(10).max(200).with_value(50).description("points")),
///     |(freq, points)| {
///         let mut plot = LossPlot::new("sine");
///         for i in 0..points {
///             let x = i as f64 / points as f64;
///             plot.push(x, (std::f64::consts::TAU * freq * x).sin());
///         }
///         plot
///     },
/// );
/// show(&view); // in a notebook: the two sliders, and the plot redrawn as they move
/// ```
pub fn interact<C, F, R>(controls: C, f: F) -> Interact
where
    C: Controls,
    F: FnMut(C::Values) -> R + Send + 'static,
    R: IntoOutput,
{
    let output = Output::new();
    let mut children = controls.widgets();
    children.push(&output);
    let vbox = VBox::new(&children);
    let controls = Arc::new(controls);
    let f = Mutex::new(f);
    let rerun: Arc<dyn Fn() + Send + Sync> = {
        let (controls, output) = (Arc::clone(&controls), output.clone());
        Arc::new(move || {
            let values = controls.values();
            // Its live plots and bars draw only into the output, with what it returns.
            let shown = crate::display::holding_live_outputs(|| {
                (f.lock().unwrap_or_else(PoisonError::into_inner))(values)
            });
            output.set_outputs(shown.into_outputs());
        })
    };
    rerun();
    controls.watch(rerun);
    Interact {
        model: Arc::clone(vbox.model()),
        output,
    }
}
