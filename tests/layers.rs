//! The kernel's modules import in one direction only, as `src/lib.rs` lists them: no cycle
//! between its top-level modules, none between the files of any one folder, and the seams the
//! docs promise hold: the engine knows nothing of Jupyter (no transport, dispatch, display or
//! kernel), display knows no sockets or handlers, transport knows no other module.

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
