//! What Linux says about the CPU, the RAM and this process (for device cards and the
//! no-CUDA memory report).

/// The CPU model name from /proc/cpuinfo, e.g. "AMD EPYC 7B13" (an exported program's record
/// names the CPU with the same function).
pub(crate) use tchbook_wire::record::cpu_model;

/// Logical CPUs this process may run on.
pub(crate) fn logical_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Physical cores (distinct (physical id, core id) pairs), or the logical count if unknown.
pub(crate) fn physical_cores() -> usize {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return logical_cores();
    };
    let mut cores = std::collections::HashSet::new();
    let (mut package, mut core) = (None, None);
    for line in info.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            if let (Some(p), Some(c)) = (package.take(), core.take()) {
                cores.insert((p, c));
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            match k.trim() {
                "physical id" => package = Some(v.trim().to_string()),
                "core id" => core = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    if cores.is_empty() {
        logical_cores()
    } else {
        cores.len()
    }
}

fn meminfo_bytes(key: &str) -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&info, key)
}

fn kib_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
        .and_then(|l| l[key.len() + 1..].split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// Total system RAM in bytes (0 if unknown).
pub(crate) fn ram_total() -> u64 {
    meminfo_bytes("MemTotal").unwrap_or(0)
}

/// RAM available for new allocations in bytes (0 if unknown).
pub(crate) fn ram_available() -> u64 {
    meminfo_bytes("MemAvailable").unwrap_or(0)
}

fn status_bytes(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| kib_field(&s, key))
        .unwrap_or(0)
}

/// This process's resident set size in bytes.
pub(crate) fn process_rss() -> u64 {
    status_bytes("VmRSS")
}

/// This process's peak resident set size in bytes.
pub(crate) fn process_peak_rss() -> u64 {
    status_bytes("VmHWM")
}

/// This machine's name, as Python's `socket.gethostname()` gives it ("localhost" if unknown).
#[cfg(feature = "tensorboard")]
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer it is given.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match (rc, std::str::from_utf8(&buf[..end])) {
        (0, Ok(name)) if !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}

/// The local time of `unix_secs` (the TZ rules Python's `datetime.now()` follows), as
/// (month 0–11, day of month, hour, minute, second).
#[cfg(feature = "tensorboard")]
pub(crate) fn local_time(unix_secs: i64) -> (usize, i32, i32, i32, i32) {
    let t = unix_secs as libc::time_t;
    // SAFETY: tm is plain old data (zeroed is a valid value); localtime_r only writes into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals; localtime_r is the thread-safe variant.
    unsafe { libc::localtime_r(&t, &mut tm) };
    (
        tm.tm_mon.clamp(0, 11) as usize,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    )
}

/// Bytes as PyTorch's memory_summary writes them: "1.50 GiB", "512 B".
pub(crate) fn human_bytes(bytes: u64) -> String {
    match binary_units(bytes) {
        (_, "B") => format!("{bytes} B"),
        (value, unit) => format!("{value:.2} {unit}"),
    }
}

/// `bytes` in the largest binary unit it reaches: `(2.5, "KiB")`.
pub(crate) fn binary_units(bytes: u64) -> (f64, &'static str) {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    (value, UNITS[unit])
}

/// Escapes text for HTML.
pub(crate) fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}
