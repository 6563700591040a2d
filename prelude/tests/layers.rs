//! The prelude's modules import in one direction only (the layers in `src/lib.rs`'s docs): no
//! cycle between its files (`layer_scan`). A `mod.rs` may re-export its children; a child that
//! reached back through those re-exports would be a cycle, so children name their siblings.

use crate::layer_scan::{cycles, imports};

#[test]
fn prelude_modules_import_in_one_direction_without_cycles() {
    let edges = imports(&crate::prelude_dir().join("src"), None);
    assert!(
        edges.contains_key(&vec!["display".to_string()]),
        "the scan found no imports at all: {edges:?}"
    );
    let cycles = cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import cycles between the prelude's files (a lower layer must not import a higher one; \
         see the layers in src/lib.rs):\n{}",
        cycles.join("\n")
    );
}
