//! This session's cells, for `history_request` (tail, range and search, as IPython answers
//! them for the current session).

use jupyter_protocol::{HistoryEntry, HistoryRequest};

/// The session number reported in history entries (the current session, as IPython's
/// `HistoryManager` numbers it for a kernel without a history database).
const SESSION: usize = 1;

#[derive(Debug, Default)]
pub(crate) struct History {
    /// (execution count, input, text output).
    cells: Vec<(usize, String, String)>,
}

impl History {
    pub(crate) fn record(&mut self, count: usize, input: &str) {
        self.cells.push((count, input.to_owned(), String::new()));
    }

    /// Remembers the plain-text result of the cell numbered `count`.
    pub(crate) fn record_output(&mut self, count: usize, output: &str) {
        if let Some(cell) = self.cells.iter_mut().rev().find(|c| c.0 == count) {
            cell.2 = output.to_owned();
        }
    }

    pub(crate) fn answer(&self, request: &HistoryRequest) -> Vec<HistoryEntry> {
        let (selected, output): (Vec<&(usize, String, String)>, bool) = match request {
            HistoryRequest::Tail { n, output, .. } => {
                let n = (*n).max(0) as usize;
                let skip = self.cells.len().saturating_sub(n);
                (self.cells.iter().skip(skip).collect(), *output)
            }
            HistoryRequest::Range {
                start,
                stop,
                output,
                ..
            } => {
                // IPython: line numbers from `start` to `stop` (exclusive); a non-positive stop
                // counts from the end.
                let last = self.cells.last().map_or(0, |c| c.0 as i32);
                let stop = if *stop <= 0 { last + 1 + stop } else { *stop };
                (
                    self.cells
                        .iter()
                        .filter(|c| (c.0 as i32) >= *start && (c.0 as i32) < stop)
                        .collect(),
                    *output,
                )
            }
            HistoryRequest::Search {
                pattern,
                unique,
                output,
                n,
                ..
            } => (self.search(pattern, *unique, *n), *output),
        };
        selected
            .into_iter()
            .map(|(count, input, out)| {
                if output {
                    HistoryEntry::InputOutput(SESSION, *count, (input.clone(), out.clone()))
                } else {
                    HistoryEntry::Input(SESSION, *count, input.clone())
                }
            })
            .collect()
    }

    /// The cells whose input matches the glob `pattern`, oldest first: with `unique`, only the
    /// latest of equal inputs; with `n` > 0, only the last `n`.
    fn search(&self, pattern: &str, unique: bool, n: i32) -> Vec<&(usize, String, String)> {
        let mut found: Vec<&(usize, String, String)> = self
            .cells
            .iter()
            .filter(|c| glob_match(pattern, &c.1))
            .collect();
        if unique {
            let mut seen = std::collections::HashSet::new();
            let mut kept: Vec<_> = found
                .into_iter()
                .rev()
                .filter(|c| seen.insert(c.1.clone()))
                .collect();
            kept.reverse();
            found = kept;
        }
        if n > 0 {
            let skip = found.len().saturating_sub(n as usize);
            found = found.into_iter().skip(skip).collect();
        }
        found
    }
}

/// IPython's search patterns are globs (`*` any run, `?` one character) matched against the
/// whole input.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> History {
        let mut h = History::default();
        h.record(1, "let a = 1;");
        h.record(2, "a + 1");
        h.record_output(2, "2");
        h.record(3, "let b = 2;");
        h
    }

    #[test]
    fn tail_returns_the_last_cells() {
        let entries = history().answer(&HistoryRequest::Tail {
            n: 2,
            output: false,
            raw: true,
        });
        assert_eq!(entries.len(), 2);
        assert!(matches!(&entries[0], HistoryEntry::Input(1, 2, code) if code == "a + 1"));
    }

    #[test]
    fn search_matches_globs_and_range_selects_numbers() {
        let h = history();
        let found = h.answer(&HistoryRequest::Search {
            pattern: "let *".into(),
            unique: true,
            output: false,
            raw: true,
            n: 0,
        });
        assert_eq!(found.len(), 2);
        let range = h.answer(&HistoryRequest::Range {
            session: None,
            start: 2,
            stop: 3,
            output: true,
            raw: true,
        });
        assert!(
            matches!(&range[..], [HistoryEntry::InputOutput(1, 2, (i, o))] if i == "a + 1" && o == "2")
        );
    }
}
