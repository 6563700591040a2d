//! `torch.cuda.memory_summary()`: per-device allocator tables, and process and system RAM.

use super::memory::{MemoryStats, Stat, f_mem_get_info, memory_stats};
use super::query::{device_count, get_device_name};
use crate::display::{Bundle, Render, html_table, rich, text_table};
use crate::sys;

/// `torch.cuda.memory_summary()`: a table per CUDA device from the caching allocator, with the
/// device's free and total memory; without CUDA, the process's and the system's RAM, and a line
/// saying that no CUDA device is present. Renders as a table in the notebook.
///
/// ```
/// let summary = tchbook_prelude::cuda::memory_summary();
/// println!("{summary}");
/// if !tchbook_prelude::cuda::is_available() {
///     assert!(summary.to_string().contains("No CUDA device is present"));
/// }
/// ```
pub fn memory_summary() -> MemorySummary {
    let devices = (0..device_count())
        .map(|i| DeviceMemory {
            index: i,
            name: get_device_name(i),
            stats: memory_stats(i),
            free_total: f_mem_get_info(i).ok(),
        })
        .collect();
    MemorySummary {
        devices,
        process_rss: sys::process_rss(),
        process_peak_rss: sys::process_peak_rss(),
        ram_total: sys::ram_total(),
        ram_available: sys::ram_available(),
    }
}

/// One CUDA device's part of a [`MemorySummary`].
///
/// ```no_run
/// for d in tchbook_prelude::cuda::memory_summary().devices {
///     println!("cuda:{} {} bytes allocated", d.index, d.stats.allocated_bytes.current);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct DeviceMemory {
    /// `cuda:index`.
    pub index: usize,
    /// Device name.
    pub name: String,
    /// Allocator statistics.
    pub stats: MemoryStats,
    /// (free, total) device memory, if the allocator could tell.
    pub free_total: Option<(u64, u64)>,
}

/// What [`memory_summary`] returns: per-device allocator tables plus process and system RAM.
///
/// ```no_run
/// let summary = tchbook_prelude::cuda::memory_summary();
/// println!("{summary}"); // a cell ending with `summary` shows the HTML table
/// ```
#[derive(Debug, Clone)]
pub struct MemorySummary {
    /// One entry per CUDA device (empty without CUDA).
    pub devices: Vec<DeviceMemory>,
    /// This process's resident memory.
    pub process_rss: u64,
    /// This process's peak resident memory.
    pub process_peak_rss: u64,
    /// System RAM.
    pub ram_total: u64,
    /// System RAM available.
    pub ram_available: u64,
}

impl MemorySummary {
    fn header() -> Vec<String> {
        [
            "Metric",
            "Cur Usage",
            "Peak Usage",
            "Tot Alloc",
            "Tot Freed",
        ]
        .map(String::from)
        .to_vec()
    }

    fn device_rows(d: &DeviceMemory) -> Vec<Vec<String>> {
        let b = |s: &Stat, name: &str| {
            let h = |v: i64| sys::human_bytes(v.max(0) as u64);
            vec![
                name.into(),
                h(s.current),
                h(s.peak),
                h(s.allocated),
                h(s.freed),
            ]
        };
        let c = |s: &Stat, name: &str| {
            vec![
                name.into(),
                s.current.to_string(),
                s.peak.to_string(),
                s.allocated.to_string(),
                s.freed.to_string(),
            ]
        };
        let s = &d.stats;
        let mut rows = vec![
            b(&s.allocated_bytes, "Allocated memory"),
            b(&s.active_bytes, "Active memory"),
            b(&s.requested_bytes, "Requested memory"),
            b(&s.reserved_bytes, "GPU reserved memory"),
            b(&s.inactive_split_bytes, "Non-releasable memory"),
            c(&s.allocation, "Allocations"),
            c(&s.active, "Active allocs"),
            c(&s.segment, "GPU reserved segments"),
            c(&s.inactive_split, "Non-releasable allocs"),
            c(&s.oversize_allocations, "Oversize allocations"),
            c(&s.oversize_segments, "Oversize GPU segments"),
        ];
        rows.push(vec![
            "cudaMalloc retries / OOMs".into(),
            s.num_alloc_retries.to_string(),
            s.num_ooms.to_string(),
            String::new(),
            String::new(),
        ]);
        if let Some((free, total)) = d.free_total {
            rows.push(vec![
                "Device memory free / total".into(),
                sys::human_bytes(free),
                sys::human_bytes(total),
                String::new(),
                String::new(),
            ]);
        }
        rows
    }

    fn ram_line(&self) -> String {
        format!(
            "Process RAM: {} (peak {}) · System RAM: {} available of {}",
            sys::human_bytes(self.process_rss),
            sys::human_bytes(self.process_peak_rss),
            sys::human_bytes(self.ram_available),
            sys::human_bytes(self.ram_total)
        )
    }
}

impl Render for MemorySummary {
    fn bundle(&self) -> Bundle {
        let mut text = String::new();
        let mut html = String::from("<div class=\"tchbook-memory\">");
        if self.devices.is_empty() {
            text.push_str("No CUDA device is present: showing process and system RAM.\n");
            html.push_str(
                "<p><b>No CUDA device is present</b>: showing process and system RAM.</p>",
            );
        }
        for d in &self.devices {
            let title = format!("CUDA memory summary, device cuda:{} ({})", d.index, d.name);
            let rows = Self::device_rows(d);
            text.push_str(&format!(
                "{title}\n{}\n\n",
                text_table(&Self::header(), &rows)
            ));
            html.push_str(&html_table(Some(&title), &Self::header(), &rows));
        }
        text.push_str(&self.ram_line());
        html.push_str(&format!(
            "<p>{}</p></div>",
            sys::escape_html(&self.ram_line())
        ));
        let mut rows: Vec<serde_json::Value> = self
            .devices
            .iter()
            .map(|d| {
                serde_json::json!({
                    "device": format!("cuda:{}", d.index),
                    "name": d.name,
                    "allocated": d.stats.allocated_bytes.current,
                    "reserved": d.stats.reserved_bytes.current,
                    "max_allocated": d.stats.allocated_bytes.peak,
                    "max_reserved": d.stats.reserved_bytes.peak,
                    "free": d.free_total.map(|m| m.0),
                    "total": d.free_total.map(|m| m.1),
                })
            })
            .collect();
        rows.push(serde_json::json!({
            "device": "cpu",
            "process_rss": self.process_rss,
            "process_peak_rss": self.process_peak_rss,
            "free": self.ram_available,
            "total": self.ram_total,
        }));
        let json = serde_json::json!({"cuda": !self.devices.is_empty(), "rows": rows});
        Bundle::text(text)
            .with_html(html)
            .with_data("memory-summary", json)
    }
}

rich!(MemorySummary);
