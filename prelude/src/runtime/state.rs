//! The prelude's process-wide state, one for all the copies of the prelude that cells link.

use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use tchbook_wire::env;

// Names the layout of `Shared`: a process whose cells were built against a prelude with another
// layout (its sources changed under a running kernel) must not read this one.
const MAGIC: u64 = 0x7463_6862_6f6f_6b35; // "tchbook5"

/// The message a cell ends with when the user interrupts it (`interrupt::MESSAGE`; the
/// runtime's `input()`, below the `interrupt` layer, stops with it too).
pub(crate) const INTERRUPTED: &str = tchbook_wire::report::INTERRUPTED;

/// Process-wide state.
///
/// evcxr links every cell as its own cdylib, and each may carry its own copy of this crate's
/// statics; a flag set by the copy that installed the SIGINT handler would be invisible to a
/// loader compiled into a later cell. So the state lives in one leaked allocation whose address
/// the first copy publishes in an environment variable, tagged with the pid so that a child
/// process inheriting the variable ignores it.
pub(crate) struct Shared {
    magic: u64,
    pub(crate) interrupted: AtomicBool,
    /// The thread cells run on (its kernel thread id; 0 before [`attach`](super::attach)): the
    /// interrupt checks the kernel puts into a cell's code stop only that thread, as Python's
    /// `KeyboardInterrupt` reaches only the main thread.
    pub(crate) cell_thread: AtomicI32,
    pub(super) attached: AtomicBool,
    pub(super) pumping: AtomicBool,
    /// Whether the evaluation process is between cells (`pump`): from the end of a cell (the
    /// pump sees its line go by) to the start of the next ([`super::run_cell`]).
    pub(super) between_cells: AtomicBool,
    pub(super) display_ids: AtomicU64,
    /// evcxr's `:fmt {:#?}` for std values ([`crate::display::set_plain_format`]).
    pub(crate) plain_pretty: AtomicBool,
    /// evcxr's `:types` for std values.
    pub(crate) plain_types: AtomicBool,
    /// The widgets' registry (`crate::widgets`), set once by the first copy that opens a widget:
    /// a comm opened by one cell's copy must be found by the copy the side channel calls.
    /// Untyped because this layer is below the widgets'.
    pub(crate) widgets: AtomicPtr<c_void>,
}

pub(crate) fn shared() -> &'static Shared {
    static LOCAL: OnceLock<&'static Shared> = OnceLock::new();
    LOCAL.get_or_init(|| {
        if let Some(found) = published_state() {
            return found;
        }
        let state: &'static Shared = Box::leak(Box::new(Shared {
            magic: MAGIC,
            interrupted: AtomicBool::new(false),
            cell_thread: AtomicI32::new(0),
            attached: AtomicBool::new(false),
            pumping: AtomicBool::new(false),
            between_cells: AtomicBool::new(false),
            display_ids: AtomicU64::new(0),
            plain_pretty: AtomicBool::new(false),
            plain_types: AtomicBool::new(false),
            widgets: AtomicPtr::new(std::ptr::null_mut()),
        }));
        let value = format!("{}:{:p}", std::process::id(), state as *const Shared);
        // SAFETY: set once, early (attach or the first display/interrupt call), before cells
        // start threads that read the environment; libtorch's threads do not call getenv then.
        unsafe { std::env::set_var(env::PRELUDE_STATE, value) };
        state
    })
}

fn published_state() -> Option<&'static Shared> {
    let value = std::env::var(env::PRELUDE_STATE).ok()?;
    let (pid, addr) = value.split_once(':')?;
    if pid.parse::<u32>().ok()? != std::process::id() {
        return None;
    }
    let addr = usize::from_str_radix(addr.trim_start_matches("0x"), 16).ok()?;
    if addr == 0 || addr % std::mem::align_of::<Shared>() != 0 {
        return None;
    }
    // SAFETY: the pid matches, so the address was published by this process's own `shared()`,
    // which leaked the allocation; it is never freed. The magic number guards against a value
    // someone else wrote.
    let state = unsafe { &*(addr as *const Shared) };
    (state.magic == MAGIC).then_some(state)
}

/// Whether display calls talk to a kernel (after [`attach`](super::attach)) or print plain text.
///
/// ```
/// assert!(!tchbook_prelude::runtime::in_kernel()); // doc tests run outside a kernel
/// ```
pub fn in_kernel() -> bool {
    shared().attached.load(Ordering::SeqCst)
}
