//! libtorch's errors in one line, as Python's `print(e)` shows them: [`TorchError`], and running
//! tensor code with its panic caught ([`catch_torch_error`]).

use crate::backend::nvidia_driver_present;
use tch::TchError;

/// What libtorch says when asked for CUDA on a machine without a driver (its CUDA backend's
/// message, and what notebooks showed when the prelude still loaded that backend everywhere).
const NO_NVIDIA_DRIVER: &str = "Found no NVIDIA driver on your system. Please check that you have \
     an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx";

/// Whether `message` is libtorch failing because its CUDA backend is not loaded: a CUDA tensor
/// meets an operator registry without CUDA kernels, or a CUDA hook finds no ATen_cuda.
fn cuda_backend_missing(message: &str) -> bool {
    (message.starts_with("Could not run '") && message.contains("CUDA' backend"))
        || message.contains("without ATen_cuda library")
}

/// A libtorch error in one line, as Python's `print(e)` shows it — without the C++ backtrace
/// that tch keeps in its message.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
/// let b = Tensor::ones([3], (Kind::Float, Device::Cpu));
/// let e = catch_torch_error(|| &a + &b).unwrap_err();
/// assert!(e.to_string().contains("must match"), "{e}");
/// assert!(!e.to_string().contains("Exception raised from"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchError(pub String);

impl std::fmt::Display for TorchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TorchError {}

impl From<TchError> for TorchError {
    fn from(e: TchError) -> Self {
        TorchError(brief(&e.to_string()))
    }
}

/// The first meaningful line of a libtorch/tch message.
pub(crate) fn brief(message: &str) -> String {
    // tch's panicking operators unwrap a `Result`: the panic message is the Debug form of
    // `TchError::Torch("...")`, with the newlines escaped.
    let unwrapped;
    let mut text = message
        .strip_prefix("called `Result::unwrap()` on an `Err` value: ")
        .unwrap_or(message);
    if let Some(inner) = text.strip_prefix("Torch(\"") {
        unwrapped = inner
            .trim_end_matches("\")")
            .replace("\\n", "\n")
            .replace("\\\"", "\"");
        text = &unwrapped;
    }
    for cut in ["\nException raised from", "Exception raised from"] {
        if let Some(i) = text.find(cut) {
            text = &text[..i];
        }
    }
    let text = text.trim();
    let text = text.strip_prefix("Internal torch error: ").unwrap_or(text);
    // Without a driver the prelude leaves libtorch's CUDA backend unloaded (load_cuda), and
    // libtorch then answers a CUDA request with a page-long list of dispatch keys, or with advice
    // about linker flags; the backend itself would have said there is no driver.
    if cuda_backend_missing(text) && !nvidia_driver_present() {
        return NO_NVIDIA_DRIVER.to_string();
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `f`, turning a panic (tch panics on every libtorch error) into a `TorchError` with the
/// one-line message, and without printing the panic.
///
/// The panic hook is swapped for a silent one around the call and the previous hook (the
/// kernel's, which reports a panic as the cell's error) is put back afterwards, so a caught
/// error does not fail the cell.
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, TorchError> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown error".into());
        TorchError(brief(&message))
    })
}

/// A tch error (or any error) as one line, as Python's `print(e)` shows it (no C++ backtrace).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
/// let b = Tensor::ones([3], (Kind::Float, Device::Cpu));
/// let e = a.f_add(&b).unwrap_err();
/// assert!(!short_error(&e).contains("Exception raised from"));
/// ```
pub fn short_error(error: &impl std::fmt::Display) -> String {
    brief(&error.to_string())
}

/// Python's `try: ... except Exception as e: print(e)` for tensor code: runs `f` and returns
/// the libtorch error as a one-line [`TorchError`] instead of ending the cell. This is the
/// fallible twin of any panicking tch call (operators, `forward`), e.g. the cross-device error.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let cpu_tensor = Tensor::ones([3, 3], (Kind::Float, Device::Cpu));
/// match catch_torch_error(|| &cpu_tensor + &cpu_tensor) {
///     Ok(t) => println!("{}", t.repr()),
///     Err(e) => println!("{e}"),
/// }
/// ```
pub fn catch_torch_error<T>(f: impl FnOnce() -> T) -> Result<T, TorchError> {
    quietly(f)
}
