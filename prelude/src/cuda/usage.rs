//! GPU usage as JupyterLab's Kernel Usage panel shows it (the kernel asks this process for it),
//! and the same numbers in a cell: [`gpu_usage`], and [`gpu_monitor`], which redraws them in
//! place while a training cell runs.

use super::memory::{AllocatorState, allocator_state, memory_stats};
use super::nvml::gpus;
use super::query::{device_count, pci_location};
use crate::display::{Bundle, DisplayHandle, Render, html_table, rich, show, text_table};
use crate::sys;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
pub use tchbook_wire::side_channel::{Allocator, Gpu};

/// (domain, bus, device) on the PCI bus.
type PciLocation = (u32, u32, u32);

/// Every GPU of the machine (NVML: memory used by all processes, utilisation), with this
/// process's CUDA caching allocator beside the GPU it runs on. Empty without an NVIDIA driver.
///
/// ```
/// let usage = tchbook_prelude::cuda::gpu_usage();
/// for gpu in &usage.gpus {
///     println!("{}: {} of {} bytes", gpu.name, gpu.memory_used, gpu.memory_total);
/// }
/// ```
pub fn gpu_usage() -> GpuUsage {
    let allocators: Vec<(Option<PciLocation>, Allocator)> =
        if allocator_state() == AllocatorState::Absent {
            Vec::new()
        } else {
            (0..device_count())
                .map(|i| {
                    let stats = memory_stats(i);
                    let allocator = Allocator {
                        device: i as u32,
                        allocated: stats.allocated_bytes.current.max(0) as u64,
                        reserved: stats.reserved_bytes.current.max(0) as u64,
                        peak: stats.allocated_bytes.peak.max(0) as u64,
                    };
                    (pci_location(i), allocator)
                })
                .collect()
        };
    let gpus = gpus()
        .into_iter()
        .map(|g| Gpu {
            allocator: allocators
                .iter()
                .find(|(pci, _)| pci.is_some() && *pci == g.pci)
                .map(|(_, a)| *a),
            index: g.index,
            name: g.name,
            memory_used: g.memory_used,
            memory_total: g.memory_total,
            utilization: g.utilization,
            driver: g.driver,
            cuda: g.cuda,
            error: g.error,
        })
        .collect();
    GpuUsage { gpus }
}

/// What [`gpu_usage`] found: one row per GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuUsage {
    /// The GPUs, in NVML's order.
    pub gpus: Vec<Gpu>,
}

impl GpuUsage {
    fn header() -> Vec<String> {
        [
            "GPU",
            "name",
            "memory used",
            "total",
            "utilisation",
            "this kernel: allocated",
            "reserved",
            "peak",
        ]
        .map(String::from)
        .to_vec()
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.gpus
            .iter()
            .map(|g| {
                let bytes = |b: Option<u64>| b.map_or("-".to_owned(), sys::human_bytes);
                vec![
                    g.index.to_string(),
                    g.name.clone(),
                    // A GPU NVML could not read says why rather than "0 B of 0 B".
                    match &g.error {
                        Some(error) => error.clone(),
                        None => sys::human_bytes(g.memory_used),
                    },
                    sys::human_bytes(g.memory_total),
                    g.utilization.map_or("-".to_owned(), |u| format!("{u}%")),
                    bytes(g.allocator.map(|a| a.allocated)),
                    bytes(g.allocator.map(|a| a.reserved)),
                    bytes(g.allocator.map(|a| a.peak)),
                ]
            })
            .collect()
    }
}

impl Render for GpuUsage {
    fn bundle(&self) -> Bundle {
        if self.gpus.is_empty() {
            let text = "No GPU: NVML (libnvidia-ml.so.1) is not on this machine.";
            return Bundle::text(text).with_html(format!("<p>{text}</p>"));
        }
        let rows = self.rows();
        let json = serde_json::to_value(&self.gpus).unwrap_or_default();
        Bundle::text(text_table(&Self::header(), &rows))
            .with_html(html_table(Some("GPU usage"), &Self::header(), &rows))
            .with_data("gpu-usage", json)
    }
}

rich!(GpuUsage);

/// Shows [`gpu_usage`] and redraws it every second until [`GpuMonitor::stop`] (or until the
/// monitor is dropped): GPU memory and utilisation beside a training loop, in the cell that runs
/// it.
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let monitor = cuda::gpu_monitor();
/// // for epoch in 0..10 { ... train ... }
/// monitor.stop();
/// ```
pub fn gpu_monitor() -> GpuMonitor {
    gpu_monitor_every(Duration::from_secs(1))
}

/// [`gpu_monitor`] with another period.
///
/// ```no_run
/// let monitor = tchbook_prelude::cuda::gpu_monitor_every(std::time::Duration::from_millis(500));
/// monitor.stop();
/// ```
pub fn gpu_monitor_every(every: Duration) -> GpuMonitor {
    let handle = show(&gpu_usage());
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (handle, stop) = (handle.clone(), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("tchbook-gpu-monitor".into())
            .spawn(move || {
                while !sleep_unless_stopped(&stop, every) {
                    handle.update_quiet(&gpu_usage());
                }
            })
            .ok()
    };
    GpuMonitor {
        handle,
        stop,
        thread,
    }
}

/// Sleeps `every` in short steps; whether `stop` was set meanwhile.
fn sleep_unless_stopped(stop: &AtomicBool, every: Duration) -> bool {
    let step = Duration::from_millis(50);
    let mut slept = Duration::ZERO;
    while slept < every {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        std::thread::sleep(step);
        slept += step;
    }
    stop.load(Ordering::SeqCst)
}

/// A live GPU usage table ([`gpu_monitor`]).
pub struct GpuMonitor {
    handle: DisplayHandle,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl GpuMonitor {
    /// Stops redrawing, after one last drawing.
    ///
    /// ```no_run
    /// tchbook_prelude::cuda::gpu_monitor().stop();
    /// ```
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
            self.handle.update(&gpu_usage());
        }
    }
}

impl Drop for GpuMonitor {
    fn drop(&mut self) {
        self.finish();
    }
}
