//! Reads which modules of a crate import which: every `crate::…`, `$crate::…`, `super::…` and
//! child-module path in its `src/` (outside comments, string literals and `#[cfg(test)]` code),
//! each mapped to the file module it names, and finds the cycles among them. The prelude's
//! layers (`layers.rs`) and the kernel's (`tests/layers.rs` at the workspace's root, which
//! includes this file) are checked with it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub type Module = Vec<String>;
pub type Edges = BTreeMap<Module, BTreeSet<Module>>;

fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(src: &Path, dir: &Path, out: &mut BTreeMap<Module, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(src, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).unwrap().with_extension("");
                let mut module: Module = relative
                    .iter()
                    .map(|s| s.to_string_lossy().into_owned())
                    .collect();
                if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                    module.pop();
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The code of a file without comments, string literals and its `#[cfg(test)]` part.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut in_string = false;
        let mut escaped = false;
        for c in line.chars() {
            match (in_string, escaped, c) {
                (true, false, '\\') => escaped = true,
                (true, false, '"') => in_string = false,
                (true, ..) => escaped = false,
                (false, _, '"') => in_string = true,
                (false, ..) => out.push(c),
            }
        }
        out.push('\n');
    }
    out
}

/// Each path in `code` as its segments: `a::b::{c, d::e}` gives `[a, b, c]` and `[a, b, d]`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = ident(chars[i]) && (i == 0 || !(ident(chars[i - 1]) || chars[i - 1] == ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut group = None;
        loop {
            let start = i;
            while i < chars.len() && ident(chars[i]) {
                i += 1;
            }
            segments.push(chars[start..i].iter().collect::<String>());
            let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
            if rest.starts_with("::{") {
                let end = chars[i..].iter().position(|&c| c == '}').map(|p| i + p);
                group = Some(
                    chars[i + 3..end.unwrap_or(chars.len())]
                        .iter()
                        .collect::<String>(),
                );
                i = end.unwrap_or(chars.len());
                break;
            } else if rest.starts_with("::") && chars.get(i + 2).is_some_and(|&c| ident(c)) {
                i += 2;
            } else {
                break;
            }
        }
        match group {
            Some(items) => {
                for item in items.split(',') {
                    let first = item
                        .trim()
                        .split("::")
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string();
                    let mut path = segments.clone();
                    if !first.is_empty() && first != "self" {
                        path.push(first);
                    }
                    out.push(path);
                }
            }
            None if segments.len() > 1 => out.push(segments),
            None => {}
        }
    }
    out
}

/// The file module a path in `from` names: the longest module prefix, or `None` for a path into
/// another crate.
fn target(from: &Module, path: &[String], modules: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let mut full: Module = match path[0].as_str() {
        "crate" | "$crate" => Vec::new(),
        "super" => from[..from.len().saturating_sub(1)].to_vec(),
        child => {
            let mut m = from.clone();
            m.push(child.to_string());
            if !modules.contains_key(&m) {
                return None;
            }
            from.clone()
        }
    };
    if !matches!(path[0].as_str(), "crate" | "$crate" | "super") {
        full.push(path[0].clone());
    }
    full.extend(path[1..].iter().cloned());
    (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|m| modules.contains_key(m))
}

pub fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// Who imports whom in the crate whose sources are `src`, between file modules, or between the
/// modules `depth` segments deep (`Some(1)`: the crate's top-level modules; the crate root and
/// imports inside one such module left out).
pub fn imports(src: &Path, depth: Option<usize>) -> Edges {
    let modules = modules(src);
    let cut = |m: &Module| match depth {
        Some(depth) => m.iter().take(depth).cloned().collect(),
        None => m.clone(),
    };
    let mut edges = Edges::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        for path in paths(&code(&text)) {
            let Some(target) = target(module, &path, &modules) else {
                continue;
            };
            let (from, to) = (cut(module), cut(&target));
            if from != to && !(depth.is_some() && (from.is_empty() || to.is_empty())) {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    edges
}

/// The import cycles in `edges`, each as `a -> b -> a`.
pub fn cycles(edges: &Edges) -> Vec<String> {
    // Depth-first search; a module met again while still on the stack closes a cycle.
    fn visit(
        m: &Module,
        edges: &Edges,
        state: &mut BTreeMap<Module, bool>,
        stack: &mut Vec<Module>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(m.clone(), false);
        stack.push(m.clone());
        for next in edges.get(m).into_iter().flatten() {
            match state.get(next) {
                Some(false) => {
                    let from = stack.iter().position(|s| s == next).unwrap();
                    let mut cycle: Vec<String> = stack[from..].iter().map(name).collect();
                    cycle.push(name(next));
                    cycles.push(cycle.join(" -> "));
                }
                Some(true) => {}
                None => visit(next, edges, state, stack, cycles),
            }
        }
        stack.pop();
        state.insert(m.clone(), true);
    }
    let (mut state, mut stack, mut cycles) = (BTreeMap::new(), Vec::new(), Vec::new());
    for m in edges.keys() {
        if !state.contains_key(m) {
            visit(m, edges, &mut state, &mut stack, &mut cycles);
        }
    }
    cycles
}

#[test]
fn the_layer_scan_sees_paths_groups_and_relative_children() {
    let code = code(
        "use super::error::{DataError, io_error};\n// crate::ignored\nlet s = \"crate::x::y\"; crate::display::show(x);\n",
    );
    assert_eq!(
        paths(&code),
        [
            vec!["super", "error", "DataError"],
            vec!["super", "error", "io_error"],
            vec!["crate", "display", "show"],
        ]
    );
}
