"""What an incremental session buys a cell crate: the trivial cell's crate, and crates that also
hold items a notebook defined (bench/cells/notebook_items.rs once, then five times renamed), each
built by the kernel's recorded rustc with and without `-C incremental` and with one codegen unit
instead of 16, alternated (A B C ... A B C ...), on a copy of a live kernel's build slot as
floor.py makes it. Each variant keeps its own session, as a kernel's consecutive cells share one,
and each build has a new entry point name, as each cell has.

    python bench/incremental.py SLOT_DIR --kernel TCHBOOK_BINARY [--reps 10]
"""

import re
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import Slot, alternated, print_medians, slot_arguments, without_codegen_options  # noqa: E402

HERE = Path(__file__).resolve().parent
# `1 + 1` as the kernel generates it in a notebook without variables.
TRIVIAL = """#![allow(unused_imports, unused_mut, dead_code)]
use tchbook_prelude::prelude::*;
{items}
#[unsafe(no_mangle)]
pub extern "C" fn run_user_code_1(
evcxr_variable_store: *mut u8) -> *mut u8 {{
::tchbook_prelude::runtime::run_cell(::std::boxed::Box::new(||{{
(
1 + 1
).evcxr_display();
}}));
evcxr_variable_store
}}
"""


def renamed(items, n):
    """The items with every name they define suffixed by `n`, so that copies can live together."""
    names = set(re.findall(r"^(?:struct|fn)\s+(\w+)", items, re.M))
    return re.sub(r"\b(" + "|".join(sorted(names)) + r")\b", lambda m: f"{m.group(1)}{n}", items)


def main():
    args = slot_arguments(__doc__.splitlines()[0])
    items = (HERE / "cells" / "notebook_items.rs").read_text()
    crates = {
        "trivial cell": TRIVIAL.format(items=""),
        f"… with {len(re.findall(r'^(?:struct|fn|impl)', items, re.M))} items": TRIVIAL.format(items=items),
        "… with five times as many": TRIVIAL.format(items="\n".join(renamed(items, n) for n in range(1, 6))),
    }
    with tempfile.TemporaryDirectory(prefix="tchbook-incremental-") as tmp:
        s = Slot(args.slot, args.kernel, Path(tmp))
        session = s.args
        without = without_codegen_options(session, ("incremental",))

        def build(variant, source, args, extra=()):
            s.args = args
            return s.rustc(variant, source, extra=extra)

        runs = {}
        for c, (name, source) in enumerate(crates.items()):
            runs[(name, "with a session")] = lambda c=c, src=source: build(f"{c}-inc", src, session)
            runs[(name, "without")] = lambda c=c, src=source: build(f"{c}-noinc", src, without)
            runs[(name, "without, one codegen unit")] = lambda c=c, src=source: build(
                f"{c}-cgu1", src, without, ["-Ccodegen-units=1"])
        times = alternated(runs, args.reps)
    print_medians(f"rustc on a cell crate, median (min) of {args.reps} alternated runs", times)


if __name__ == "__main__":
    sys.exit(main())
