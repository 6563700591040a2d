//! The prelude's modules import in one direction only (the layers in `src/lib.rs`'s docs): this
//! reads every `crate::…`, `$crate::…`, `super::…` and child-module path in `src/` (outside
//! comments, string literals and `#[cfg(test)]` code), maps each to the file module it names,
//! and fails on any cycle between files. A `mod.rs` may re-export its children; a child that
//! reached back through those re-exports would be a cycle, so children name their siblings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

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

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn prelude_modules_import_in_one_direction_without_cycles() {
    let src = crate::prelude_dir().join("src");
    let modules = modules(&src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        for path in paths(&code(&text)) {
            if let Some(t) = target(module, &path, &modules).filter(|t| t != module) {
                edges.entry(module.clone()).or_default().insert(t);
            }
        }
    }
    // Depth-first search; a module met again while still on the stack closes a cycle.
    fn visit(
        m: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
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
    for m in modules.keys() {
        if !state.contains_key(m) {
            visit(m, &edges, &mut state, &mut stack, &mut cycles);
        }
    }
    assert!(
        edges.contains_key(&vec!["display".to_string()]),
        "the scan found no imports at all: {edges:?}"
    );
    assert!(
        cycles.is_empty(),
        "import cycles between the prelude's files (a lower layer must not import a higher one; \
         see the layers in src/lib.rs):\n{}",
        cycles.join("\n")
    );
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
