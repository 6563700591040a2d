//! The kernel's modules import in one direction only, as `src/lib.rs` lists them: no cycle
//! between its top-level modules, none between the files of any one folder, and the seams the
//! docs promise hold: the engine knows nothing of Jupyter (no transport, dispatch, display or
//! kernel), display knows no sockets or handlers, transport knows no other module. And no Rust or
//! Python file of the repository holds more than 400 code lines.

use crate::layer_scan::{Edges, cycles, imports, name};
use std::path::Path;

#[test]
fn kernel_modules_import_in_one_direction_without_cycles() {
    let edges = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), Some(1));
    let module = |name: &str| vec![name.to_owned()];
    assert!(
        edges
            .get(&module("dispatch"))
            .is_some_and(|to| to.contains(&module("engine"))),
        "the scan found no imports at all: {edges:?}"
    );
    let cycles = cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import cycles between the kernel's modules (see the list in src/lib.rs):\n{}",
        cycles.join("\n")
    );
    let forbidden = [
        (
            "engine",
            &["transport", "dispatch", "display", "kernel"][..],
        ),
        ("display", &["transport", "dispatch", "kernel"][..]),
        (
            "transport",
            &["dispatch", "engine", "display", "kernel", "completion"][..],
        ),
    ];
    for (from, never) in forbidden {
        let reached: Vec<String> = edges
            .get(&module(from))
            .into_iter()
            .flatten()
            .filter(|to| never.contains(&name(to).as_str()))
            .map(name)
            .collect();
        assert!(reached.is_empty(), "{from} imports {reached:?}");
    }
}

/// Who imports whom among siblings: each import between two file modules, cut to the two
/// modules under their deepest common folder (`cellbuild::cargo_front::key` importing
/// `cellbuild::cache` is `cellbuild::cargo_front -> cellbuild::cache`). Imports between a
/// module and its own children are the folder's business and left out.
fn sibling_imports(edges: &Edges) -> Edges {
    let mut siblings = Edges::new();
    for (from, targets) in edges {
        for to in targets {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                siblings
                    .entry(from[..=common].to_vec())
                    .or_default()
                    .insert(to[..=common].to_vec());
            }
        }
    }
    siblings
}

#[test]
fn the_files_of_every_folder_import_in_one_direction() {
    let edges = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), None);
    let siblings = sibling_imports(&edges);
    let inside = |folder: &str| siblings.keys().any(|m| m.len() > 1 && m[0] == folder);
    assert!(
        inside("cellbuild") && inside("evaluation"),
        "the scan found no imports inside folders: {siblings:?}"
    );
    let cycles = cycles(&siblings);
    assert!(
        cycles.is_empty(),
        "import cycles between the files of a folder:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn a_cycle_inside_a_folder_is_found() {
    let module = |path: &str| path.split("::").map(str::to_owned).collect::<Vec<_>>();
    let mut edges = Edges::new();
    for (from, to) in [
        ("cellbuild::env", "cellbuild::cache"),
        ("cellbuild::cache::explain", "cellbuild::env"),
        ("cellbuild::cache", "cellbuild::cache::explain"),
        ("cellbuild::cache::explain", "cellbuild::cache"),
    ] {
        edges.entry(module(from)).or_default().insert(module(to));
    }
    let cycles = cycles(&sibling_imports(&edges));
    assert_eq!(
        cycles,
        ["cellbuild::cache -> cellbuild::env -> cellbuild::cache"]
    );
}

/// The most code lines a source file of the repository may hold: past it, a file does more than
/// one job and is split by job (`tests/interrupt/`, `bench/kernel_session.py`).
const MOST_CODE_LINES: usize = 400;

/// A file's code lines: neither blank nor only a comment (`//` in Rust, `#` in Python).
fn code_lines(path: &str, text: &str) -> usize {
    let comment = if path.ends_with(".py") { "#" } else { "//" };
    text.lines()
        .map(str::trim_start)
        .filter(|line| !line.is_empty() && !line.starts_with(comment))
        .count()
}

/// "path: N code lines" for each file over [`MOST_CODE_LINES`], leaving out what is not ours to
/// split: vendored crates, and files a tool wrote (`@generated` in their first lines).
fn over_the_limit(files: impl IntoIterator<Item = (String, String)>) -> Vec<String> {
    files
        .into_iter()
        .filter(|(path, text)| {
            !path.starts_with("vendor/") && !text.lines().take(5).any(|l| l.contains("@generated"))
        })
        .map(|(path, text)| (code_lines(&path, &text), path))
        .filter(|(lines, _)| *lines > MOST_CODE_LINES)
        .map(|(lines, path)| format!("{path}: {lines} code lines"))
        .collect()
}

/// The repository's Rust and Python files, as git lists them (tracked, and new ones it does not
/// ignore), with their text; files deleted in the working tree are left out.
fn sources(root: &Path) -> Vec<(String, String)> {
    let out = std::process::Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
        ])
        .args(["*.rs", "*.py"])
        .current_dir(root)
        .output()
        .expect("git, to list the repository's files");
    assert!(
        out.status.success(),
        "git ls-files failed in {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut paths: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).ok()?;
            Some((path, text))
        })
        .collect()
}

#[test]
fn no_source_file_holds_more_than_400_code_lines() {
    let files = sources(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        files.iter().any(|(p, _)| p == "src/lib.rs")
            && files.iter().any(|(p, _)| p.ends_with(".py")),
        "git listed neither src/lib.rs nor any Python file: {} files",
        files.len()
    );
    let over = over_the_limit(files);
    assert!(
        over.is_empty(),
        "files over {MOST_CODE_LINES} code lines (not blank, not only a comment): split each by \
         job, as tests/interrupt/ and bench/kernel_session.py are:\n{}",
        over.join("\n")
    );
}

#[test]
fn a_file_over_the_limit_is_named_with_its_count() {
    let lines = |n: usize, line: &str| format!("{line}\n").repeat(n);
    let files = [
        // Comments and blank lines do not count: 400 code lines are within the limit.
        (
            "src/full.rs",
            lines(400, "let x = 1;") + &lines(50, "    // why") + &lines(9, ""),
        ),
        ("bench/long.py", lines(401, "x = 1") + &lines(20, "# why")),
        // `#` starts a Rust attribute, not a comment; `//` is Python's floor division.
        (
            "src/attributes.rs",
            lines(200, "#[test]") + &lines(201, "fn f() {}"),
        ),
        ("vendor/evcxr/src/big.rs", lines(1000, "let x = 1;")),
        (
            "src/proto.rs",
            "// @generated by prost\n".to_owned() + &lines(1000, "let x = 1;"),
        ),
    ];
    let over = over_the_limit(files.map(|(p, t)| (p.to_owned(), t)));
    assert_eq!(
        over,
        [
            "bench/long.py: 401 code lines",
            "src/attributes.rs: 401 code lines"
        ]
    );
}
