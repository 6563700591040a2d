//! libtorch's errors inside a panic message: the sentence worth showing, the C++ frames kept
//! for the end, and out of memory said in a few words.

/// A libtorch error inside a panic message: its first sentence(s) and everything after.
pub struct TorchError {
    pub summary: String,
    pub rest: String,
}

/// `called Result::unwrap() on an Err value: Torch("msg\nException raised from ...")` → the
/// message (unescaped) split where libtorch's own frames begin.
pub fn torch_error(message: &str) -> Option<TorchError> {
    let start = message.find("Torch(\"")? + "Torch(\"".len();
    let end = message.rfind("\")").filter(|&end| end >= start)?;
    let text = unescape_debug(&message[start..end]);
    let cut = text
        .find("\nException raised from")
        .or_else(|| text.find("Exception raised from"))
        .unwrap_or(text.len());
    let (head, rest) = text.split_at(cut);
    let summary = head
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Some(TorchError {
        summary,
        rest: rest.trim().to_owned(),
    })
}

/// Undoes `{:?}` escaping of a string (`\n`, `\"`, `\\`, `\t`, `\'`, `\u{..}`).
fn unescape_debug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let code: String = chars
                    .by_ref()
                    .skip_while(|&c| c == '{')
                    .take_while(|&c| c != '}')
                    .collect();
                if let Some(c) = u32::from_str_radix(&code, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The short form of libtorch's out-of-memory errors, CPU and CUDA, or `None` for others.
pub fn out_of_memory(summary: &str) -> Option<String> {
    if let Some(at) = summary.find("you tried to allocate ") {
        // CPU: "[enforce fail at alloc_cpu.cpp:..] ... DefaultCPUAllocator: not enough memory:
        // you tried to allocate 40000000000 bytes."
        let digits: String = summary[at + "you tried to allocate ".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let asked = digits.parse::<u64>().ok()?;
        let free = match available_memory() {
            Some((available, total)) => {
                format!(
                    "{} is available (of {})",
                    human_bytes(available),
                    human_bytes(total)
                )
            }
            None => "the memory available is unknown".to_owned(),
        };
        return Some(format!(
            "not enough memory: the cell asked for {} on the CPU; {free}. Variables are kept.",
            human_bytes(asked)
        ));
    }
    if summary.contains("CUDA out of memory") {
        // "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of
        // 79.19 GiB of which 3.12 GiB is free. ..."
        // A size is the two words after `key`: "20.00 GiB".
        let after = |key: &str| {
            let at = summary.find(key)? + key.len();
            let words: Vec<&str> = summary[at..].split_whitespace().take(2).collect();
            (words.len() == 2).then(|| words.join(" ").trim_end_matches(['.', ',']).to_owned())
        };
        let asked = after("Tried to allocate ").unwrap_or_else(|| "?".to_owned());
        let gpu = summary
            .find("GPU ")
            .map(|at| {
                summary[at..]
                    .split(" has")
                    .next()
                    .unwrap_or("GPU")
                    .to_owned()
            })
            .unwrap_or_else(|| "the GPU".to_owned());
        let free = after("of which ");
        return Some(match free {
            Some(free) => format!(
                "CUDA out of memory: the cell asked for {asked} on {gpu}; {free} is free. \
                 Variables are kept (`cuda::empty_cache()` returns cached blocks)."
            ),
            None => format!("CUDA out of memory: the cell asked for {asked}. Variables are kept."),
        });
    }
    None
}

/// `MemAvailable` and `MemTotal` of this machine, in bytes.
fn available_memory() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    };
    Some((field("MemAvailable:")?, field("MemTotal:")?))
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_out_of_memory_names_the_size_and_the_free_memory() {
        let short = out_of_memory(
            "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of \
             79.19 GiB of which 3.12 GiB is free. Of the allocated memory 70 GiB is allocated",
        )
        .unwrap();
        assert!(short.contains("asked for 20.00 GiB on GPU 0"), "{short}");
        assert!(short.contains("3.12 GiB is free"), "{short}");
    }
}
