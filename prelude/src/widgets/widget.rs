//! What every widget is: a cheap handle on a shared [`Model`], shown by [`crate::display::show`]
//! or as a cell's value (its comms opened first, then one display carrying the widget's view,
//! its text and its HTML), closed by [`Widget::close`]; and what a control (a widget whose value
//! the user sets) is to [`interact`](super::interact::interact): a [`Control`].

use super::model::{Change, Model};
use super::render;
use crate::display::Bundle;
use serde_json::Value;
use std::sync::Arc;

pub(crate) mod sealed {
    /// The handle's model: not for implementing outside the prelude.
    pub trait AsModel {
        /// The shared model behind the handle.
        fn model(&self) -> &std::sync::Arc<crate::widgets::model::Model>;
    }
}

/// A Jupyter widget: a handle on a model synced with the front end. Clones are handles on the
/// same model, so a closure can hold one.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let slider = IntSlider::new().description("epochs");
/// let again = slider.clone();
/// again.set_value(7);
/// assert_eq!(slider.value(), 7);
/// assert_eq!(slider.model_id(), again.model_id());
/// ```
pub trait Widget: sealed::AsModel {
    /// The model's id: the comm's, and what the front end's view names.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert_eq!(Label::new("hi").model_id().len(), 32); // uuid4 hex
    /// ```
    fn model_id(&self) -> &str {
        self.model().id()
    }

    /// Whether the widget's comm is open (it was shown inside a kernel and not closed).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let label = Label::new("hi");
    /// show(&label); // outside a kernel: prints `Label(value='hi')`
    /// assert!(!label.is_open());
    /// ```
    fn is_open(&self) -> bool {
        self.model().is_open()
    }

    /// Closes the widget (Python's `w.close()`): its comm and its layout's and style's close,
    /// the front end removes its views, and the process forgets it. Until then a widget stays
    /// open, whether or not a variable still holds it. Showing it again reopens it.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let b = Button::new().description("Stop");
    /// b.close();
    /// assert!(!b.is_open());
    /// ```
    fn close(&self) {
        self.model().close()
    }
}

/// The display of a widget: its comms opened (inside a kernel; then the bundle carries the view)
/// and the text and HTML views of its state.
pub(crate) fn bundle(model: &Arc<Model>) -> Bundle {
    let open = model.open();
    let mut bundle = Bundle::text(render::text(model)).with_html(render::html(model));
    if open {
        bundle.widget = Some(model.id().to_owned());
    }
    bundle
}

/// Gives a widget handle type (a struct with a `model: Arc<Model>` field) the [`Widget`] trait,
/// [`crate::display::Render`] (shows open the comm), `Display` and `Debug` (its repr, which opens
/// nothing), and evcxr's `evcxr_display` for a cell's value. Its paths start at `super::`: it
/// expands in this file's siblings, and a path through `crate::widgets` would go up through the
/// module that re-exports them.
macro_rules! widget {
    ($t:ty) => {
        impl super::widget::sealed::AsModel for $t {
            fn model(&self) -> &::std::sync::Arc<super::model::Model> {
                &self.model
            }
        }
        impl super::widget::Widget for $t {}
        impl $crate::display::Render for $t {
            fn bundle(&self) -> $crate::display::Bundle {
                super::widget::bundle(&self.model)
            }
        }
        impl $t {
            /// Shows the widget as a cell's value (evcxr calls it): its comms first, then its view.
            pub fn evcxr_display(&self) {
                $crate::display::bundle::evcxr_print(&$crate::display::Render::bundle(self));
            }
        }
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&super::render::text(&self.model))
            }
        }
        impl ::std::fmt::Debug for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&super::render::text(&self.model))
            }
        }
    };
}
pub(crate) use widget;

/// Sets one attribute of a model (an update to the front end once it is open).
pub(crate) fn set(model: &Model, key: &str, value: impl Into<serde_json::Value>) {
    model.set(serde_json::Map::from_iter([(key.to_owned(), value.into())]));
}

/// Gives a widget type a builder and a setter per attribute: `name(self, v) -> Self` for
/// building (`IntSlider::new().max(10)`) and `set_name(&self, v)` once shown, each documented
/// with an example made from `$new`, an expression that makes one.
macro_rules! attributes {
    ($t:ident = $new:expr; $($name:ident, $setter:ident, $key:literal: $ty:ty = $example:expr, $doc:literal;)*) => {
        impl $t {
            $(
                #[doc = concat!($doc, " (`", $key, "`), when building.\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ",
                    stringify!($new), ".", stringify!($name), "(", stringify!($example), ");\n# let _ = w;\n```")]
                pub fn $name(self, value: $ty) -> Self {
                    self.$setter(value);
                    self
                }

                #[doc = concat!($doc, " (`", $key, "`), at any time: the front end updates its views.\n\n```\nuse tchbook_prelude::prelude::*;\nlet w = ",
                    stringify!($new), ";\nw.", stringify!($setter), "(", stringify!($example), ");\n```")]
                pub fn $setter(&self, value: $ty) {
                    super::widget::set(&self.model, $key, value);
                }
            )*
        }
    };
}
pub(crate) use attributes;

/// Runs `f` with the value of `key` each time it changes, on the callback thread.
pub(crate) fn listen<T: 'static>(
    model: &Model,
    key: &'static str,
    read: fn(&Value) -> Option<T>,
    f: impl Fn(T) + Send + Sync + 'static,
) {
    model.listen(
        &[key],
        Arc::new(move |change: &Change| {
            if let Some(value) = change.keys.get(key).and_then(read) {
                f(value)
            }
        }),
    );
}

/// A text attribute's value.
pub(crate) fn text_of(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// A widget whose value the user sets, usable in [`interact`](super::interact::interact).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// fn read<C: Control>(c: &C) -> C::Value { c.current() }
/// assert_eq!(read(&IntSlider::new().with_value(4)), 4);
/// ```
pub trait Control: Widget + Clone + Send + Sync + 'static {
    /// What the control holds (`i64` for an `IntSlider`).
    type Value: Send + 'static;

    /// Its value now (the same as the type's own `value()`).
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// assert!(Checkbox::new().with_value(true).current());
    /// ```
    fn current(&self) -> Self::Value;

    /// Runs `f` on the prelude's callback thread each time the value changes.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// IntSlider::new().watch(std::sync::Arc::new(|| println!("moved")));
    /// ```
    fn watch(&self, f: Arc<dyn Fn() + Send + Sync>);
}

/// Makes a widget type a [`Control`] whose value is `$value` (its `value()`), watched through
/// the state keys `$keys`.
macro_rules! control {
    ($t:ty, $value:ty, $keys:expr) => {
        impl super::widget::Control for $t {
            type Value = $value;
            fn current(&self) -> $value {
                <$t>::value(self)
            }
            fn watch(&self, f: ::std::sync::Arc<dyn Fn() + Send + Sync>) {
                self.model.listen(
                    $keys,
                    ::std::sync::Arc::new(move |_: &super::model::Change| f()),
                );
            }
        }
    };
}
pub(crate) use control;
