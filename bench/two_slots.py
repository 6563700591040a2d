"""Two kernels' build slots side by side: what a change to the cells' dependencies (their
profiles, the build cache's `.cargo/config.toml`) costs or saves every cell. On a copy of each
slot, each kernel's own recorded rustc (its link plan and its binary as the linker, as floor.py
replays it; one codegen unit, no incremental session, the cell's opt-level 0, as a crate without
the notebook's items is built) builds an empty cell crate, the trivial cell's and the small tch
cell's (opt_level.py's), alternated slot by slot and crate by crate; then it counts the functions
rustc instantiates in the small tch cell (`-Z print-mono-items`): what the cell compiles itself
rather than calling in its dependencies.

    python bench/two_slots.py SLOT_A --kernel BIN_A SLOT_B --kernel-b BIN_B [--reps 20]
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import ENTRY, PRELUDE, Slot, alternated  # noqa: E402
from incremental import TRIVIAL  # noqa: E402
from opt_level import TENSOR, with_settings  # noqa: E402

CRATES = {
    "empty cell crate": PRELUDE + ENTRY.format(n=""),
    "trivial cell": TRIVIAL.format(items=""),
    "small tch cell": TENSOR.format(items=""),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("slot_a", type=Path, help="the first kernel's build slot (`:last_compile_dir`)")
    p.add_argument("--kernel", type=Path, required=True, help="the first kernel's binary")
    p.add_argument("slot_b", type=Path, help="the second kernel's build slot")
    p.add_argument("--kernel-b", type=Path, required=True, help="the second kernel's binary")
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="tchbook-two-slots-") as tmp:
        slots = {}
        for name, slot, binary in (("A", args.slot_a, args.kernel), ("B", args.slot_b, args.kernel_b)):
            (Path(tmp) / name).mkdir()
            s = Slot(slot, binary, Path(tmp) / name)
            s.args = with_settings(s.args, "0", "1")
            slots[name] = s
        runs = {(crate, name): (lambda s=s, c=crate, src=source: s.rustc(c, src))
                for crate, source in CRATES.items() for name, s in slots.items()}
        times = alternated(runs, args.reps)
        print(f"rustc on a cell crate, link included, median (min) of {args.reps} alternated runs")
        for crate in CRATES:
            a, b = times[(crate, "A")], times[(crate, "B")]
            print(f"{crate:18s} A {statistics.median(a) * 1000:6.1f} ms ({min(a) * 1000:.1f})"
                  f"   B {statistics.median(b) * 1000:6.1f} ms ({min(b) * 1000:.1f})"
                  f"   B/A {statistics.median(b) / statistics.median(a):.2f}")
        counts = {name: s.mono_items(CRATES["small tch cell"]) for name, s in slots.items()}
        print(f"functions the small tch cell instantiates: A {counts['A']}, B {counts['B']}")


if __name__ == "__main__":
    sys.exit(main())
