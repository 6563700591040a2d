//! The kernel's modules import in one direction only, as `src/lib.rs` lists them: no cycle
//! between its top-level modules (imports inside one module are its own business), and the
//! seams the docs promise hold: the engine knows nothing of Jupyter (no transport, dispatch,
//! display or kernel), display knows no sockets or handlers, transport knows no other module.

use crate::layer_scan::{cycles, imports, name};
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
