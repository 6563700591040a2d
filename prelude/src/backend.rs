//! libtorch's CUDA backend: whether this machine has an NVIDIA driver, and loading
//! `libtorch_cuda.so` where it has one. The bottom layer: it imports nothing from the crate, so
//! the kernel contract ([`crate::runtime`]) and every CUDA query can call it.

use std::sync::{Once, OnceLock};

/// Loads `libtorch_cuda.so` into the process (RTLD_GLOBAL) so that libtorch registers its CUDA
/// backend — on a machine with an NVIDIA driver ([`nvidia_driver_present`]). Rust links with
/// `--as-needed`, which drops the library from a binary that calls none of its symbols; CUDA then
/// looks absent on a GPU machine (tch-rs issue #980). `runtime::attach` and every CUDA
/// query call this, so a notebook needs nothing more; a program that asks tch itself
/// (`Device::cuda_if_available()`) must call it first: libtorch settles once, at its first CUDA
/// question, whether it has a CUDA backend.
///
/// Without a driver CUDA cannot work anyway, and loading the library would map libtorch's CUDA
/// kernels and the CUDA runtime, cuBLAS and cuDNN (≈230 MB resident) for nothing. Runs once per
/// copy of the prelude; harmless on a CPU-only libtorch.
///
/// ```
/// tchbook_prelude::device::load_cuda();
/// ```
pub fn load_cuda() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if !nvidia_driver_present() {
            return;
        }
        let mut failures = Vec::new();
        for candidate in cuda_library_candidates() {
            let Ok(path) = std::ffi::CString::new(candidate.clone()) else {
                continue;
            };
            // SAFETY: dlopen with a valid C string; the handle is deliberately never closed.
            let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !handle.is_null() {
                return;
            }
            failures.push(dlerror().unwrap_or(candidate));
        }
        // A GPU machine on which CUDA then looks absent needs this to say why (a missing cuBLAS,
        // a library built for another CUDA): see [`cuda_load_error`].
        let _ = LOAD_FAILURE.set(failures.join("; "));
    });
}

static LOAD_FAILURE: OnceLock<String> = OnceLock::new();

/// Why libtorch's CUDA backend did not load on a machine with an NVIDIA driver: the dynamic
/// loader's message for each place [`load_cuda`] tried. `None` where it loaded, and where there
/// is no driver (nothing was tried).
///
/// ```
/// if let Some(why) = tchbook_prelude::device::cuda_load_error() {
///     println!("libtorch_cuda.so did not load: {why}");
/// }
/// ```
pub fn cuda_load_error() -> Option<&'static str> {
    load_cuda();
    LOAD_FAILURE.get().map(String::as_str)
}

/// The dynamic loader's message for the last failed `dlopen` of this thread.
fn dlerror() -> Option<String> {
    // SAFETY: dlerror returns null or a NUL-terminated message owned by libc, read at once.
    let message = unsafe { libc::dlerror() };
    (!message.is_null()).then(|| {
        // SAFETY: as above: non-null, NUL-terminated, valid until the next dlerror call.
        unsafe { std::ffi::CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    })
}

/// Whether this machine has an NVIDIA driver, the condition for [`load_cuda`] to load
/// libtorch's CUDA backend: the driver's control device `/dev/nvidiactl` exists (Linux hosts,
/// containers given a GPU), or its library `libcuda.so.1` loads (WSL2 has no `/dev/nvidia*`).
///
/// ```
/// use tchbook_prelude::{cuda, device};
/// if !device::nvidia_driver_present() {
///     assert!(!cuda::is_available());
/// }
/// ```
pub fn nvidia_driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return true;
        }
        // SAFETY: dlopen with a valid C string. Lazy and local: nothing is bound or exported.
        // A handle found is kept, as the CUDA runtime will open the library again anyway.
        let handle =
            unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        !handle.is_null()
    })
}

fn cuda_library_candidates() -> Vec<String> {
    let mut out = Vec::new();
    // The directory of the libtorch_cpu.so already mapped into this process is the surest place.
    if let Ok(maps) = std::fs::read_to_string("/proc/self/maps")
        && let Some(path) = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.ends_with("/libtorch_cpu.so"))
    {
        out.push(path.replace("/libtorch_cpu.so", "/libtorch_cuda.so"));
    }
    if let Some(lib) = std::env::var_os("LIBTORCH") {
        out.push(format!("{}/lib/libtorch_cuda.so", lib.to_string_lossy()));
    }
    out.push("libtorch_cuda.so".to_string());
    out
}
