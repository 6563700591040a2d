//! What jupyter-resource-usage's Kernel Usage panel shows, measured as ipykernel measures it
//! (`usage_request` in its kernelbase.py, with psutil): the CPU and memory of the kernel and
//! every process below it (the evaluation process, rust-analyzer, a cell's cargo and rustc),
//! and the host's CPU and memory, read from /proc.

use procfs::process::Process;
use procfs::{Current, CurrentSI, KernelStats, Meminfo};
use serde::Serialize;
use std::collections::HashMap;
use std::time::Instant;

/// The numbers of a `usage_reply` that the kernel measures itself (the GPUs come from the
/// evaluation process), under ipykernel's names.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProcessUsage {
    hostname: String,
    pub(crate) pid: u32,
    /// Percent of one CPU, summed over the process tree since the previous request (psutil's
    /// `cpu_percent()`: 0 for a process seen for the first time).
    kernel_cpu: f64,
    /// Bytes: the tree's proportional set size (PSS), each process's resident set where its
    /// `smaps_rollup` cannot be read.
    kernel_memory: u64,
    /// The host's CPU use since the previous request, in percent; left out the first time, as
    /// ipykernel leaves out psutil's meaningless first 0.0.
    #[serde(skip_serializing_if = "Option::is_none")]
    host_cpu_percent: Option<f64>,
    cpu_count: usize,
    host_virtual_memory: VirtualMemory,
}

/// psutil's `virtual_memory()`, field for field, from /proc/meminfo.
#[derive(Debug, Clone, Default, Serialize)]
struct VirtualMemory {
    pub(crate) total: u64,
    available: u64,
    pub(crate) percent: f64,
    pub(crate) used: u64,
    pub(crate) free: u64,
    active: u64,
    inactive: u64,
    pub(crate) buffers: u64,
    cached: u64,
    pub(crate) shared: u64,
    slab: u64,
}

/// Keeps the previous request's CPU times, as psutil's `Process` and `cpu_percent` keep theirs.
#[derive(Default)]
pub(crate) struct UsageMeter {
    /// pid → (process start time, CPU ticks, when read): a pid reused by a new process starts
    /// afresh.
    processes: HashMap<i32, (u64, u64, Instant)>,
    /// The host's (busy, total) ticks.
    host: Option<(u64, u64)>,
}

impl UsageMeter {
    /// Measures the tree below `root` (this kernel) now.
    pub(crate) fn measure(&mut self, root: u32) -> ProcessUsage {
        let tree = process_tree(root as i32);
        let ticks_per_second = procfs::ticks_per_second() as f64;
        let now = Instant::now();
        let mut seen = HashMap::new();
        let (mut kernel_cpu, mut kernel_memory) = (0.0, 0);
        for process in &tree {
            let Ok(stat) = process.stat() else { continue };
            let ticks = stat.utime + stat.stime;
            if let Some(&(start, before, then)) = self.processes.get(&stat.pid) {
                let seconds = now.duration_since(then).as_secs_f64();
                if start == stat.starttime && seconds > 0.0 && ticks >= before {
                    kernel_cpu += (ticks - before) as f64 / ticks_per_second / seconds * 100.0;
                }
            }
            seen.insert(stat.pid, (stat.starttime, ticks, now));
            kernel_memory += pss(process).unwrap_or_else(|| stat.rss * page_size());
        }
        self.processes = seen;
        ProcessUsage {
            hostname: hostname(),
            pid: root,
            kernel_cpu: (kernel_cpu * 10.0).round() / 10.0,
            kernel_memory,
            host_cpu_percent: self.host_cpu_percent(),
            cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
            host_virtual_memory: virtual_memory(),
        }
    }

    fn host_cpu_percent(&mut self) -> Option<f64> {
        let cpu = KernelStats::current().ok()?.total;
        // psutil's `_cpu_tot_time` / `_cpu_busy_time`: guest time is already in user time, so it
        // is not added; iowait counts as idle.
        let total = cpu.user
            + cpu.nice
            + cpu.system
            + cpu.idle
            + cpu.iowait.unwrap_or(0)
            + cpu.irq.unwrap_or(0)
            + cpu.softirq.unwrap_or(0)
            + cpu.steal.unwrap_or(0);
        let busy = total.saturating_sub(cpu.idle + cpu.iowait.unwrap_or(0));
        let previous = self.host.replace((busy, total));
        let (busy_before, total_before) = previous?;
        let elapsed = total.checked_sub(total_before).filter(|t| *t > 0)?;
        let percent = busy.saturating_sub(busy_before) as f64 / elapsed as f64 * 100.0;
        // As ipykernel, which omits psutil's 0.0 (its "no previous sample").
        (percent > 0.0).then_some((percent * 10.0).round() / 10.0)
    }
}

/// `root` and every process below it (by parent pid), `root` first.
fn process_tree(root: i32) -> Vec<Process> {
    let Ok(all) = procfs::process::all_processes() else {
        return Process::new(root).into_iter().collect();
    };
    let mut children: HashMap<i32, Vec<Process>> = HashMap::new();
    let mut tree = Vec::new();
    for process in all.flatten() {
        let Ok(stat) = process.stat() else { continue };
        if stat.pid == root {
            tree.push(process);
        } else {
            children.entry(stat.ppid).or_default().push(process);
        }
    }
    let mut next = 0;
    while next < tree.len() {
        let pid = tree[next].pid;
        tree.extend(children.remove(&pid).unwrap_or_default());
        next += 1;
    }
    tree
}

fn pss(process: &Process) -> Option<u64> {
    let rollup = process.smaps_rollup().ok()?;
    rollup
        .memory_map_rollup
        .0
        .first()?
        .extension
        .map
        .get("Pss")
        .copied()
}

fn page_size() -> u64 {
    procfs::page_size()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// psutil's `virtual_memory()` on Linux: `cached` includes the reclaimable slab, and `used` is
/// total minus available.
fn virtual_memory() -> VirtualMemory {
    let Ok(m) = Meminfo::current() else {
        return VirtualMemory::default();
    };
    let available = m.mem_available.unwrap_or(m.mem_free).min(m.mem_total);
    let used = m.mem_total - available;
    VirtualMemory {
        total: m.mem_total,
        available,
        percent: if m.mem_total == 0 {
            0.0
        } else {
            (used as f64 / m.mem_total as f64 * 1000.0).round() / 10.0
        },
        used,
        free: m.mem_free,
        active: m.active,
        inactive: m.inactive,
        buffers: m.buffers,
        cached: m.cached + m.s_reclaimable.unwrap_or(0),
        shared: m.shmem.unwrap_or(0),
        slab: m.slab,
    }
}
