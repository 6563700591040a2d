//! Plain-text display of std values in one compilation.
//!
//! evcxr shows a cell's final value by compiling `(value).evcxr_display();` and, when that does
//! not compile, compiling the whole cell again with `{:?}` — a second rustc run (~0.4 s) for
//! every cell that ends in a number, a string or a `Vec`. [`PlainDisplay`] gives std types an
//! `evcxr_display` that prints exactly what that fallback prints, so the first compilation
//! succeeds. Types it does not cover still take evcxr's fallback, which shows the same text.
//!
//! Which types are covered follows from method resolution, which picks the impl by the
//! receiver's type:
//! - never `Tensor`, `Device`, `Kind` or a prelude type: [`super::TensorDisplay`] and the
//!   prelude's inherent `evcxr_display` methods must stay the only candidates there;
//! - `Box`, `Rc` and `Arc` only around a covered type, so that `Box<Tensor>` still reaches
//!   `Tensor`'s rich display through `Deref`;
//! - `&str` and `&[T]` rather than `str` and `[T]`: evcxr's `:types` names the type of the
//!   expression (`&str` for `"hi"`), and an impl for `str` would be picked first and say `str`.
//!   A reference to another covered type (`&v`) is still named by its referent (`Vec<i32>`
//!   where evcxr says `&Vec<i32>`): both resolve to the same method, so this cannot tell them
//!   apart. The value shown is the same.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// evcxr's display hook for std values (integers, floats, `bool`, `char`, strings, `Vec`,
/// arrays, slices, `Option`, `Result`, tuples, maps, sets, `Duration`, paths, ranges): prints
/// the `text/plain` block evcxr's own `{:?}` fallback would print, so that a cell ending in such
/// a value compiles once instead of twice. `()` prints nothing: a cell ending in `println!(..)`
/// or a `for` loop shows no value.
///
/// In scope in every cell through `prelude::*`; evcxr calls it, notebooks never need to.
/// [`set_plain_format`] follows evcxr's `:fmt` and `:types`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// // What evcxr runs for a cell ending in `vec![1, 2]`; it prints
/// // "EVCXR_BEGIN_CONTENT text/plain\n[1, 2]\nEVCXR_END_CONTENT\n".
/// (vec![1, 2]).evcxr_display();
/// // A cell ending in `()` prints nothing.
/// (()).evcxr_display();
/// // Tensors keep their rich display.
/// (Tensor::from(1.0)).evcxr_display();
/// ```
#[doc(hidden)]
pub trait PlainDisplay {
    /// Prints evcxr's `text/plain` content block for this value.
    fn evcxr_display(&self);
}

/// Follows evcxr's `:fmt` and `:types` for std values shown through [`PlainDisplay`]:
/// `pretty` is `:fmt {:#?}` (false: the default `{:?}`); `show_types` is `:types` on, which
/// writes `: <type> = <value>` with the type shortened as evcxr shortens it. Process-wide: every
/// cell's copy of the prelude reads the same setting. Other `:fmt` strings have no equivalent
/// here (std values keep `{:?}`).
///
/// ```
/// use tchbook_prelude::display::set_plain_format;
/// set_plain_format(true, false); // after `:fmt {:#?}`
/// set_plain_format(false, false); // back to evcxr's defaults
/// ```
pub fn set_plain_format(pretty: bool, show_types: bool) {
    let state = crate::runtime::shared();
    state.plain_pretty.store(pretty, Ordering::SeqCst);
    state.plain_types.store(show_types, Ordering::SeqCst);
}

/// The text evcxr's fallback computes for `value`:
/// `format!("{:?}", value)`, or `format!(": {} = {:?}", type, value)` under `:types`.
fn plain_text<T: Debug + ?Sized>(value: &T) -> String {
    let state = crate::runtime::shared();
    let pretty = state.plain_pretty.load(Ordering::SeqCst);
    let show_types = state.plain_types.load(Ordering::SeqCst);
    match (show_types, pretty) {
        (false, false) => format!("{value:?}"),
        (false, true) => format!("{value:#?}"),
        (true, false) => format!(": {} = {value:?}", short_type_name::<T>()),
        (true, true) => format!(": {} = {value:#?}", short_type_name::<T>()),
    }
}

/// Shows `value` as evcxr's `evcxr_send_text_plain` does: its `text/plain` alone.
fn send_text_plain<T: Debug + ?Sized>(value: &T) {
    super::bundle::evcxr_print(&super::bundle::Bundle::text(plain_text(value)));
}

/// `std::any::type_name::<T>()` shortened as evcxr 0.22's `evcxr_shorten_type` does it (every
/// path prefix dropped): `core::option::Option<alloc::string::String>` → `Option<String>`.
fn short_type_name<T: ?Sized>() -> String {
    let name = std::any::type_name::<T>();
    // Backwards over the name: a ':' starts a path prefix, which ends at the first character
    // that cannot be part of a path.
    let mut reversed = String::with_capacity(name.len());
    let mut skipping = false;
    for c in name.chars().rev() {
        if !skipping {
            if c == ':' {
                skipping = true;
            } else {
                reversed.push(c);
            }
        } else if !c.is_alphanumeric() && c != '_' && c != ':' {
            skipping = false;
            reversed.push(c);
        }
    }
    reversed.chars().rev().collect()
}

impl PlainDisplay for () {
    fn evcxr_display(&self) {}
}

macro_rules! plain {
    ($($t:ty),* $(,)?) => {
        $(
            impl PlainDisplay for $t {
                fn evcxr_display(&self) {
                    send_text_plain(self)
                }
            }
        )*
    };
}

plain!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool, char, String,
    &str, Duration, PathBuf, &Path,
);

macro_rules! plain_generic {
    ($(impl<$($p:ident),+> for $t:ty;)*) => {
        $(
            impl<$($p: Debug),+> PlainDisplay for $t {
                fn evcxr_display(&self) {
                    send_text_plain(self)
                }
            }
        )*
    };
}

plain_generic! {
    impl<T> for Vec<T>;
    impl<T> for VecDeque<T>;
    impl<T> for &[T];
    impl<T> for Option<T>;
    impl<T, E> for Result<T, E>;
    impl<K, V> for BTreeMap<K, V>;
    impl<T> for BTreeSet<T>;
    impl<T> for Range<T>;
    impl<T> for RangeInclusive<T>;
    impl<A> for (A,);
    impl<A, B> for (A, B);
    impl<A, B, C> for (A, B, C);
    impl<A, B, C, D> for (A, B, C, D);
    impl<A, B, C, D, E> for (A, B, C, D, E);
    impl<A, B, C, D, E, F> for (A, B, C, D, E, F);
}

impl<T: Debug, const N: usize> PlainDisplay for [T; N] {
    fn evcxr_display(&self) {
        send_text_plain(self)
    }
}

impl<K: Debug, V: Debug, S> PlainDisplay for HashMap<K, V, S> {
    fn evcxr_display(&self) {
        send_text_plain(self)
    }
}

impl<T: Debug, S> PlainDisplay for HashSet<T, S> {
    fn evcxr_display(&self) {
        send_text_plain(self)
    }
}

// Smart pointers only around covered types: a `Box<Tensor>` has no impl here, so method
// resolution goes on through `Deref` to `Tensor`'s rich display, as it did before this trait.
macro_rules! plain_pointer {
    ($($p:ident),*) => {
        $(
            impl<T: PlainDisplay + Debug + ?Sized> PlainDisplay for $p<T> {
                fn evcxr_display(&self) {
                    send_text_plain(self)
                }
            }
        )*
    };
}

plain_pointer!(Box, Rc, Arc);
