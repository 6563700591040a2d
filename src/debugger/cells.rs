//! Cells as the debugger sees them: each cell's file (named, as JupyterLab names it, by the
//! Murmur2 hash of its code), the breakpoints JupyterLab set in it (on the cell's lines), and,
//! once the cell was built while the debugger was on, where its lines went in the built crate.
//!
//! evcxr wraps a cell's statements in a function and moves its items above it, so line 3 of a
//! cell may be line 9 of the crate's source. A cell built for the debugger names its own file
//! in its debug information (the cargo front end's `--remap-path-prefix`), with the crate's line
//! numbers: gdb is told crate lines, JupyterLab is shown cell lines.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;

/// JupyterLab's `hashSeed` (ipykernel's value): any seed works, as long as both sides use it.
pub(crate) const HASH_SEED: u32 = 3339675911;

/// The folder every cell's file goes in, one per kernel process. Its name holds `ipykernel_`:
/// JupyterLab (4.4 and later) names a frame or a breakpoint by its cell ("Cell [3]:7" in the
/// call stack and breakpoint lists) only where the file's path contains ipykernel's folder
/// name (`canHandle` of the notebook's display provider in @jupyterlab/debugger-extension);
/// any other kernel's cells are listed by their temporary file's full path.
pub(crate) fn prefix() -> String {
    format!(
        "{}/ipykernel_tchbook_{}/",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

/// The file a cell with this code is dumped to: `prefix() + murmur2(code) + ".rs"`, the name
/// JupyterLab computes itself to match a stopped frame to its cell.
pub(crate) fn path_of(code: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}{}.rs",
        prefix(),
        murmur2(code.as_bytes(), HASH_SEED)
    ))
}

/// Writes a cell's code to its file; returns the path.
pub(crate) fn dump(code: &str) -> std::io::Result<PathBuf> {
    let path = path_of(code);
    std::fs::create_dir_all(prefix())?;
    std::fs::write(&path, code)?;
    Ok(path)
}

/// MurmurHash2, 32 bits, of the code's UTF-8 bytes (JupyterLab's `murmur2`, ipykernel's
/// `murmur2_x86`). No crate in the dependency tree has it; it is twenty lines.
pub(crate) fn murmur2(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1_e995;
    let mut h = seed ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let k = rest
            .iter()
            .enumerate()
            .fold(0u32, |k, (i, &byte)| k | (u32::from(byte) << (8 * i)));
        h = (h ^ k).wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

/// For each line of a built crate's source (index 0 is line 1), the cell line it came from.
pub(crate) type LineMap = Vec<Option<usize>>;

/// The breakpoints and line maps of every cell file.
#[derive(Default)]
pub(crate) struct Cells {
    /// Per cell file, the breakpoints JupyterLab set, as it sent them (DAP `SourceBreakpoint`s,
    /// on cell lines).
    breakpoints: HashMap<String, Vec<Value>>,
    /// Per cell file built while the debugger was on.
    maps: HashMap<String, LineMap>,
}

impl Cells {
    pub(crate) fn set_breakpoints(&mut self, path: &str, breakpoints: Vec<Value>) {
        if breakpoints.is_empty() {
            self.breakpoints.remove(path);
        } else {
            self.breakpoints.insert(path.to_owned(), breakpoints);
        }
    }

    pub(crate) fn breakpoints(&self) -> impl Iterator<Item = (&String, &Vec<Value>)> {
        self.breakpoints.iter()
    }

    pub(crate) fn built(&mut self, path: &str, map: LineMap) {
        self.maps.insert(path.to_owned(), map);
    }

    pub(crate) fn map(&self, path: &str) -> Option<&LineMap> {
        self.maps.get(path)
    }

    /// gdb's `setBreakpoints` arguments for a built cell's breakpoints, and for each breakpoint
    /// (in JupyterLab's order) the crate line it went to, or why it went nowhere.
    pub(crate) fn for_adapter(
        &self,
        path: &str,
        breakpoints: &[Value],
    ) -> Option<(Value, Vec<Result<usize, String>>)> {
        let map = self.maps.get(path)?;
        let mut sent = Vec::new();
        let placed: Vec<Result<usize, String>> = breakpoints
            .iter()
            .map(|breakpoint| {
                let line = breakpoint["line"].as_u64().unwrap_or(0) as usize;
                let built = to_built(map, line).ok_or_else(|| {
                    format!("line {line} of this cell has no code at or after it; set the breakpoint on a line with a statement")
                })?;
                let mut breakpoint = breakpoint.clone();
                breakpoint["line"] = json!(built);
                sent.push(breakpoint);
                Ok(built)
            })
            .collect();
        Some((
            json!({"source": {"path": path}, "breakpoints": sent}),
            placed,
        ))
    }
}

/// The crate line of a cell line: the first line of code at or after it, as debugpy moves a
/// breakpoint on a blank line to the next statement.
pub(crate) fn to_built(map: &LineMap, cell_line: usize) -> Option<usize> {
    let target = map.iter().flatten().filter(|&&l| l >= cell_line).min()?;
    map.iter().position(|l| *l == Some(*target)).map(|i| i + 1)
}

/// The cell line of a crate line: its own, or that of the nearest user line above it (a
/// generated line stands for the statement it follows).
pub(crate) fn to_cell(map: &LineMap, built_line: usize) -> Option<usize> {
    let upto = built_line.min(map.len());
    map[..upto].iter().rev().flatten().next().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from ipykernel's `murmur2_x86(code, 3339675911)` (ipykernel 7.1, 2026-11-29).
    #[test]
    fn murmur2_matches_ipykernel() {
        let cases: [(&str, u32); 7] = [
            ("", 3990065800),
            ("a", 2167009006),
            ("ab", 2805137849),
            ("abc", 3350977461),
            ("abcd", 804720481),
            ("for i in 0..3 {\n    println!(\"{i}\");\n}\n", 2800011845),
            ("é€😀x", 3631390339),
        ];
        for (code, hash) in cases {
            assert_eq!(murmur2(code.as_bytes(), HASH_SEED), hash, "{code:?}");
        }
    }

    #[test]
    fn lines_go_to_the_next_code_and_back() {
        // Crate lines 1-3 generated, 4-5 the cell's lines 1-2, 6 generated, 7 the cell's line 4.
        let map: LineMap = vec![None, None, None, Some(1), Some(2), None, Some(4)];
        assert_eq!(to_built(&map, 1), Some(4));
        assert_eq!(
            to_built(&map, 3),
            Some(7),
            "a blank line moves to the next code"
        );
        assert_eq!(to_built(&map, 5), None, "past the end");
        assert_eq!(to_cell(&map, 5), Some(2));
        assert_eq!(
            to_cell(&map, 6),
            Some(2),
            "generated code stands for the line above"
        );
        assert_eq!(to_cell(&map, 2), None);
        assert_eq!(to_cell(&map, 99), Some(4));
    }

    #[test]
    fn breakpoints_of_an_unbuilt_cell_wait() {
        let mut cells = Cells::default();
        cells.set_breakpoints("/c.rs", vec![json!({"line": 2})]);
        assert!(cells.for_adapter("/c.rs", &[json!({"line": 2})]).is_none());
        cells.built("/c.rs", vec![None, Some(1), Some(2)]);
        let (arguments, placed) = cells
            .for_adapter("/c.rs", &[json!({"line": 2}), json!({"line": 9})])
            .unwrap();
        assert_eq!(arguments["breakpoints"], json!([{"line": 3}]));
        assert_eq!(placed[0], Ok(3));
        assert!(placed[1].as_ref().unwrap_err().contains("line 9"));
    }
}
