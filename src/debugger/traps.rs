//! The breakpoints a dead gdb left in the evaluation process.
//!
//! gdb places a breakpoint by writing an `int3` over the first byte of an instruction while
//! the process runs: the user's breakpoints, and its own in the dynamic linker (to hear of each
//! library a cell loads) and the C++ runtime. A gdb that dies leaves them there (the kernel
//! detaches the process and lets it run), and the next `int3` reached ends the evaluation
//! process with SIGTRAP, every variable lost; the next gdb to attach saves such an `int3` as
//! the "original" byte of its own breakpoint there and later runs it (a SIGSEGV, seen).
//!
//! So when gdb ends, the kernel takes them out: a library's code is its file's bytes
//! (position-independent code has no text relocations), and a page of it that anything wrote
//! to is a private copy, counted as `Private_Dirty` in `/proc/<pid>/smaps`. In each executable
//! mapping of a file with such pages, every `int3` the file does not have gets the file's byte
//! back, through `/proc/<pid>/mem` (the evaluation process admits the kernel as its tracer,
//! `PR_SET_PTRACER`).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The `int3` instruction.
const INT3: u8 = 0xcc;

/// An executable mapping of a file that was written to.
#[derive(Debug, PartialEq)]
struct Written {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

/// Writes back the file's byte wherever process `pid`'s code holds an `int3` its library's file
/// does not; returns how many bytes it wrote.
pub(crate) fn take_out(pid: u32) -> Result<usize, String> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .map_err(|error| format!("the evaluation process {pid}'s smaps: {error}"))?;
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{pid}/mem"))
        .map_err(|error| format!("the evaluation process {pid}'s memory: {error}"))?;
    let mut written = 0;
    for mapping in written_code(&smaps) {
        let Ok(file) = File::open(&mapping.path) else {
            continue;
        };
        let mut in_memory = vec![0u8; (mapping.end - mapping.start) as usize];
        let mut in_file = vec![0u8; in_memory.len()];
        if mem.read_exact_at(&mut in_memory, mapping.start).is_err() {
            continue;
        }
        let read = file.read_at(&mut in_file, mapping.offset).unwrap_or(0);
        for (i, (&now, &was)) in in_memory.iter().zip(&in_file[..read]).enumerate() {
            if now == INT3 && was != INT3 {
                mem.write_all_at(&[was], mapping.start + i as u64)
                    .map_err(|error| format!("writing to process {pid}: {error}"))?;
                written += 1;
            }
        }
    }
    Ok(written)
}

/// The executable file mappings with written pages, from `/proc/<pid>/smaps` (a line
/// `start-end perms offset dev inode path`, then `Name: value` lines).
fn written_code(smaps: &str) -> Vec<Written> {
    let mut found = Vec::new();
    let mut current: Option<Written> = None;
    for line in smaps.lines() {
        if let Some(dirty) = line.strip_prefix("Private_Dirty:") {
            let kb: u64 = dirty
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            if kb > 0
                && let Some(mapping) = current.take()
            {
                found.push(mapping);
            }
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some((start, end)) = fields.first().and_then(|range| range.split_once('-')) else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        else {
            continue; // a `Name: value` line
        };
        current = match (fields.get(1), fields.get(2), fields.get(5)) {
            (Some(perms), Some(offset), Some(path))
                if perms.contains('x') && path.starts_with('/') =>
            {
                u64::from_str_radix(offset, 16).ok().map(|offset| Written {
                    start,
                    end,
                    offset,
                    path: fields[5..].join(" "),
                })
            }
            _ => None,
        };
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_written_executable_file_mappings_are_read() {
        let smaps = "\
7f00-7f10 r-xp 00002000 08:01 12 /lib/libclean.so
Size:                 64 kB
Private_Dirty:         0 kB
7f10-7f20 r-xp 00001000 08:01 13 /tmp/a dir/libcode_4.so
Size:                 64 kB
Private_Dirty:         4 kB
7f20-7f30 rw-p 00000000 08:01 13 /tmp/a dir/libcode_4.so
Private_Dirty:         8 kB
7f30-7f40 rwxp 00000000 00:00 0
Private_Dirty:         4 kB
";
        assert_eq!(
            written_code(smaps),
            vec![Written {
                start: 0x7f10,
                end: 0x7f20,
                offset: 0x1000,
                path: "/tmp/a dir/libcode_4.so".into()
            }]
        );
    }
}
