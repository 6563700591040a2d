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
use std::sync::Arc;
use tchbook_cellcode::CodeOrigin;
use tchbook_wire::INTERRUPT_POINT;

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
fn path_of(code: &str) -> PathBuf {
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
fn murmur2(data: &[u8], seed: u32) -> u32 {
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

/// Where a line of a built crate's source came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Origin {
    /// evcxr's or the prelude's code: it stands for the user's line above it.
    Generated,
    /// A line of a cell, by the cell's file.
    Cell(Arc<str>, usize),
    /// An item an earlier cell defined, whose cell is not known here (it ran before the
    /// debugger was switched on and was never dumped).
    Unknown,
}

/// For each line of a built crate's source (index 0 is line 1), where it came from.
type LineMap = Vec<Origin>;

/// The line map of a crate built for the cell in `own`, from evcxr's segments (`before_load`):
/// the cell's own lines; the items earlier cells defined (evcxr emits every item again into
/// each crate, from the code it was given) traced by their text to the cell that holds it,
/// among `cells` (file, code; the first that holds it wins).
pub(crate) fn line_map(
    own: &Arc<str>,
    segments: &[(CodeOrigin, &str)],
    cells: &[(Arc<str>, String)],
) -> LineMap {
    let mut map = LineMap::new();
    for (origin, code) in segments {
        let lines = 0..code.matches('\n').count();
        match origin {
            CodeOrigin::Cell(first) => {
                map.extend(lines.map(|offset| Origin::Cell(Arc::clone(own), first + offset)));
            }
            CodeOrigin::Generated => map.extend(lines.map(|_| Origin::Generated)),
            CodeOrigin::EarlierCell => {
                // As the user wrote it: the kernel put interrupt checks into the cell's code,
                // each on the line of the `{` or `;` it follows (`interrupt_points`).
                let code = code.replace(INTERRUPT_POINT, "");
                let found = cells.iter().find_map(|(file, text)| {
                    let at = text.find(code.strip_suffix('\n').unwrap_or(&code))?;
                    Some((file, text[..at].matches('\n').count() + 1))
                });
                map.extend(lines.map(|offset| match found {
                    Some((file, line)) => Origin::Cell(Arc::clone(file), line + offset),
                    None => Origin::Unknown,
                }));
            }
        }
    }
    map
}

/// The breakpoints and line maps of every cell file.
#[derive(Default)]
pub(crate) struct Cells {
    /// Per cell file, the breakpoints JupyterLab set, as it sent them (DAP `SourceBreakpoint`s,
    /// on cell lines).
    breakpoints: HashMap<String, Vec<Value>>,
    /// Per cell file built while the debugger was on, the map of its crate (whose debug
    /// information names that file), and when it was built.
    maps: HashMap<String, (u64, LineMap)>,
    builds: u64,
    /// The last key given to a breakpoint with a hit count (`HIT_KEY`).
    hit_keys: i64,
}

/// Where a stored breakpoint keeps the key of its hit counter in gdb (`hits.py`): a new one each
/// time JupyterLab sets the cell's breakpoints, so counting starts again then, as in debugpy.
const HIT_KEY: &str = "tchbookHitKey";

/// A breakpoint as gdb is given it: which cell's, and which of that cell's breakpoints.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) cell: String,
    pub(crate) index: usize,
}

impl Cells {
    pub(crate) fn set_breakpoints(&mut self, path: &str, mut breakpoints: Vec<Value>) {
        for breakpoint in &mut breakpoints {
            if breakpoint.get("hitCondition").is_some() {
                self.hit_keys += 1;
                breakpoint[HIT_KEY] = json!(self.hit_keys);
            }
        }
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
        self.builds += 1;
        self.maps.insert(path.to_owned(), (self.builds, map));
    }

    pub(crate) fn map(&self, path: &str) -> Option<&LineMap> {
        self.maps.get(path).map(|(_, map)| map)
    }

    /// The files of the cells built for the debugger, the latest first.
    pub(crate) fn built_files(&self) -> Vec<String> {
        let mut files: Vec<(&u64, &String)> = self.maps.iter().map(|(f, (n, _))| (n, f)).collect();
        files.sort_by(|a, b| b.0.cmp(a.0));
        files.into_iter().map(|(_, file)| file.clone()).collect()
    }

    /// The crate files holding lines of the cell `path` (its own, and those of later cells
    /// that hold its items).
    pub(crate) fn crates_with(&self, path: &str) -> Vec<String> {
        self.maps
            .iter()
            .filter(|(_, (_, map))| {
                map.iter()
                    .any(|o| matches!(o, Origin::Cell(file, _) if &**file == path))
            })
            .map(|(file, _)| file.clone())
            .collect()
    }

    /// The cell line a breakpoint on `line` of cell `path` stops at: the first line of code at
    /// or after it in the cell's own build, as debugpy moves a breakpoint on a blank line to
    /// the next statement; the line itself for a cell not built for the debugger.
    fn target(&self, path: &str, line: usize) -> Option<usize> {
        let Some(own) = self.map(path) else {
            return Some(line);
        };
        own.iter()
            .filter_map(|o| match o {
                Origin::Cell(file, l) if &**file == path && *l >= line => Some(*l),
                _ => None,
            })
            .min()
    }

    /// gdb's `setBreakpoints` arguments for the crate built for `crate_file`: every cell's
    /// breakpoints on lines that crate holds, and where each went.
    pub(crate) fn for_adapter(&self, crate_file: &str) -> Option<(Value, Vec<Placed>)> {
        let map = self.map(crate_file)?;
        let mut sent = Vec::new();
        let mut placed = Vec::new();
        for (cell, breakpoints) in &self.breakpoints {
            for (index, breakpoint) in breakpoints.iter().enumerate() {
                let line = breakpoint["line"].as_u64().unwrap_or(0) as usize;
                let Some(built) = self
                    .target(cell, line)
                    .and_then(|target| to_built(map, cell, target))
                else {
                    continue;
                };
                let Ok(breakpoint) = for_gdb(breakpoint, built) else {
                    continue;
                };
                sent.push(breakpoint);
                placed.push(Placed {
                    cell: cell.clone(),
                    index,
                });
            }
        }
        let arguments = json!({"source": {"path": crate_file}, "breakpoints": sent});
        Some((arguments, placed))
    }
}

/// A breakpoint as gdb takes it, at crate line `built`; why not, for a hit count that is none of
/// debugpy's forms. JupyterLab's protocol (debugpy's reading of it) takes a hit count `N` as
/// "stop at the N-th hit" only, and `> N`, `>= N`, `< N`, `<= N`, `== N` and `% N` (every N-th)
/// as they read. gdb's own hit count is an ignore count (stop at the N-th hit, then at every
/// hit), so the count is kept by a function of `hits.py` instead, called in the breakpoint's
/// condition after the user's own: hits where the user's condition does not hold are not
/// counted.
pub(crate) fn for_gdb(breakpoint: &Value, built: usize) -> Result<Value, String> {
    let mut breakpoint = breakpoint.clone();
    breakpoint["line"] = json!(built);
    let key = breakpoint
        .as_object_mut()
        .and_then(|fields| fields.remove(HIT_KEY))
        .and_then(|key| key.as_i64())
        .unwrap_or(0);
    let Some(hits) = breakpoint
        .as_object_mut()
        .and_then(|b| b.remove("hitCondition"))
    else {
        return Ok(breakpoint);
    };
    let hits = hits.as_str().unwrap_or_default().trim().to_owned();
    let (op, n) = hit_condition(&hits).ok_or_else(|| {
        format!(
            "hit count `{hits}`: write a number N (stop at the N-th hit), or one of `> N`, \
             `>= N`, `< N`, `<= N`, `== N`, `% N` (every N-th hit)"
        )
    })?;
    let counted = format!("$_tchbook_hit({key}, {op}, {n})");
    breakpoint["condition"] = json!(match breakpoint["condition"].as_str().map(str::trim) {
        Some(condition) if !condition.is_empty() => format!("({condition}) && {counted}"),
        _ => counted,
    });
    Ok(breakpoint)
}

/// A hit count as `hits.py`'s operator number and operand: `N` and `== N` 0, `> N` 1, `>= N` 2,
/// `< N` 3, `<= N` 4, `% N` 5 (N at least 1 for `N`, `== N` and `% N`).
fn hit_condition(hits: &str) -> Option<(u8, u64)> {
    let (op, rest) = [
        (">=", 2),
        ("<=", 4),
        ("==", 0),
        (">", 1),
        ("<", 3),
        ("%", 5),
    ]
    .iter()
    .find_map(|(word, op)| Some((*op, hits.strip_prefix(word)?)))
    .unwrap_or((0, hits));
    let n: u64 = rest.trim().parse().ok()?;
    (n >= 1 || matches!(op, 1 | 2 | 4)).then_some((op, n))
}

/// The crate line of a cell's line.
fn to_built(map: &LineMap, cell: &str, line: usize) -> Option<usize> {
    map.iter()
        .position(|o| matches!(o, Origin::Cell(file, l) if &**file == cell && *l == line))
        .map(|i| i + 1)
}

/// The cell and line of a crate line: its own, or that of the nearest user line above it (a
/// generated line stands for the statement it follows).
pub(crate) fn to_cell(map: &LineMap, built_line: usize) -> Option<(Arc<str>, usize)> {
    let upto = built_line.min(map.len());
    map[..upto]
        .iter()
        .rev()
        .find(|o| **o != Origin::Generated)
        .and_then(|o| match o {
            Origin::Cell(file, line) => Some((Arc::clone(file), *line)),
            _ => None,
        })
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

    /// A crate of one-line segments: the cell's line, or generated where `None`.
    fn own(lines: &[Option<usize>]) -> LineMap {
        let segments: Vec<(CodeOrigin, &str)> = lines
            .iter()
            .map(|line| (line.map_or(CodeOrigin::Generated, CodeOrigin::Cell), "x\n"))
            .collect();
        line_map(&Arc::from("/c.rs"), &segments, &[])
    }

    #[test]
    fn lines_go_to_the_next_code_and_back() {
        // Crate lines 1-3 generated, 4-5 the cell's lines 1-2, 6 generated, 7 the cell's line 4.
        let mut cells = Cells::default();
        cells.built(
            "/c.rs",
            own(&[None, None, None, Some(1), Some(2), None, Some(4)]),
        );
        let map = cells.map("/c.rs").unwrap();
        let at = |line| {
            cells
                .target("/c.rs", line)
                .and_then(|t| to_built(map, "/c.rs", t))
        };
        assert_eq!(at(1), Some(4));
        assert_eq!(at(3), Some(7), "a blank line moves to the next code");
        assert_eq!(at(5), None, "past the end");
        let line = |built| to_cell(map, built).map(|(_, line)| line);
        assert_eq!(line(5), Some(2));
        assert_eq!(line(6), Some(2), "generated code stands for the line above");
        assert_eq!(line(2), None);
        assert_eq!(line(99), Some(4));
    }

    #[test]
    fn an_earlier_cells_item_is_traced_to_its_cell() {
        let a: Arc<str> = Arc::from("/a.rs");
        let b: Arc<str> = Arc::from("/b.rs");
        let code_a = "let x = 1;\nfn train(n: i64) -> i64 {\n    n * 2\n}\n";
        let item = format!("fn train(n: i64) -> i64 {{{INTERRUPT_POINT}\n    n * 2\n}}\n");
        // Cell b's crate: line 1 generated, 2-4 the item of cell a, 5 generated, 6 b's line 1;
        // an item whose cell is not known (7) stops the fallback of the generated line after it.
        let segments = [
            (CodeOrigin::Generated, "x\n"),
            (CodeOrigin::EarlierCell, item.as_str()),
            (CodeOrigin::Generated, "x\n"),
            (CodeOrigin::Cell(1), "x\n"),
            (CodeOrigin::EarlierCell, "fn gone() {}\n"),
            (CodeOrigin::Generated, "x\n"),
        ];
        let map = line_map(&b, &segments, &[(Arc::clone(&a), code_a.to_owned())]);
        assert_eq!(to_cell(&map, 3), Some((Arc::clone(&a), 3)));
        assert_eq!(to_cell(&map, 5), Some((Arc::clone(&a), 4)));
        assert_eq!(to_cell(&map, 6), Some((Arc::clone(&b), 1)));
        assert_eq!(to_cell(&map, 8), None);

        let mut cells = Cells::default();
        cells.set_breakpoints("/a.rs", vec![json!({"line": 3}), json!({"line": 1})]);
        cells.built("/b.rs", map);
        assert_eq!(cells.crates_with("/a.rs"), vec!["/b.rs".to_owned()]);
        // Cell a was not built for the debugger: its lines go where b holds them, and line 1
        // (a statement of a, not in b) nowhere.
        let (arguments, placed) = cells.for_adapter("/b.rs").unwrap();
        assert_eq!(arguments["breakpoints"], json!([{"line": 3}]));
        assert_eq!((placed[0].cell.as_str(), placed[0].index), ("/a.rs", 0));
    }

    #[test]
    fn a_hit_count_is_counted_by_the_condition_after_the_users_own() {
        let mut cells = Cells::default();
        let hits = |hits: &str| json!({"line": 2, "hitCondition": hits});
        cells.set_breakpoints("/h.rs", vec![hits("4"), json!({"line": 3})]);
        cells.set_breakpoints("/h.rs", vec![hits("% 2"), hits(">= 3")]);
        let stored = &cells.breakpoints["/h.rs"];
        let at = |breakpoint: &Value| for_gdb(breakpoint, 7).unwrap();
        // Each setting of the cell's breakpoints counts anew: new keys.
        assert_eq!(
            at(&stored[0]),
            json!({"line": 7, "condition": "$_tchbook_hit(2, 5, 2)"})
        );
        assert_eq!(at(&stored[1])["condition"], "$_tchbook_hit(3, 2, 3)");
        let both = json!({"line": 2, "condition": " i == 3 ", "hitCondition": " 1 ", HIT_KEY: 9});
        assert_eq!(at(&both)["condition"], "(i == 3) && $_tchbook_hit(9, 0, 1)");
        for (form, op) in [("== 4", 0), ("> 4", 1), ("< 4", 3), ("<= 4", 4), ("4", 0)] {
            assert_eq!(hit_condition(form), Some((op, 4)), "{form}");
        }
        for refused in ["0", "% 0", "x", "=> 2", ""] {
            let error = for_gdb(&hits(refused), 7).unwrap_err();
            assert!(
                error.contains("hit count") && error.contains("% N"),
                "{refused}"
            );
        }
        assert_eq!(for_gdb(&json!({"line": 1}), 3).unwrap(), json!({"line": 3}));
    }

    #[test]
    fn breakpoints_of_an_unbuilt_cell_wait() {
        let mut cells = Cells::default();
        cells.set_breakpoints("/c.rs", vec![json!({"line": 2}), json!({"line": 9})]);
        assert!(cells.for_adapter("/c.rs").is_none());
        cells.built("/c.rs", own(&[None, Some(1), Some(2)]));
        let (arguments, placed) = cells.for_adapter("/c.rs").unwrap();
        assert_eq!(arguments["breakpoints"], json!([{"line": 3}]));
        assert_eq!(placed[0].index, 0);
        assert_eq!(placed.len(), 1, "line 9 is past the end");
    }
}
