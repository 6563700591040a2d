"""What a cell's optimisation level and codegen units cost its build: the trivial cell's crate and
a small tensor cell's, each built by the kernel's recorded rustc (no incremental session, as a
notebook without items of its own builds them; the link through the dependencies' library
included) at opt-level 1 with 16 codegen units (the kernel's settings until 2026-11-27), at
opt-level 0 with 16, and at opt-level 0 with one (what it builds now), alternated (A B C A B C
...), on a copy of a live kernel's build slot as floor.py makes it. Each build has a new entry
point name, as each cell has.

    python bench/opt_level.py SLOT_DIR --kernel TCHBOOK_BINARY [--reps 10]
"""

import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import Slot, alternated, print_medians, slot_arguments, without_codegen_options  # noqa: E402
from incremental import TRIVIAL  # noqa: E402

# kernels.py's small tch cell, its value displayed as the kernel generates it for a cell's last
# expression (without the `let`, whose variable store is measured elsewhere: NOTES.md).
TENSOR = TRIVIAL.replace(
    "(\n1 + 1\n).evcxr_display();",
    "(\nTensor::randn([64, 64], (Kind::Float, Device::Cpu)).matmul(&Tensor::randn([64, 64], "
    "(Kind::Float, Device::Cpu))).sum(Kind::Float).double_value(&[])\n).evcxr_display();")

VARIANTS = {
    "opt-level 1, 16 units": ("1", "16"),
    "opt-level 0, 16 units": ("0", "16"),
    "opt-level 0, one unit": ("0", "1"),
}


def with_settings(args, opt_level, units):
    """The recorded rustc arguments without an incremental session, at `opt_level` with `units`
    codegen units."""
    return without_codegen_options(args, ("incremental", "opt-level", "codegen-units")) + [
        "-C", f"opt-level={opt_level}", "-C", f"codegen-units={units}"]


def main():
    args = slot_arguments(__doc__.splitlines()[0])
    if TENSOR == TRIVIAL:
        raise SystemExit("bench/opt_level.py: the trivial cell's text changed; update TENSOR")
    crates = {"trivial cell": TRIVIAL.format(items=""), "small tch cell": TENSOR.format(items="")}
    with tempfile.TemporaryDirectory(prefix="tchbook-opt-level-") as tmp:
        s = Slot(args.slot, args.kernel, Path(tmp))
        recorded = s.args

        def build(source, settings):
            s.args = with_settings(recorded, *settings)
            return s.rustc("opt-level", source)

        runs = {(crate, variant): (lambda src=source, v=settings: build(src, v))
                for crate, source in crates.items() for variant, settings in VARIANTS.items()}
        times = alternated(runs, args.reps)
    print_medians(f"rustc on a cell crate, link included, median (min) of {args.reps} alternated runs", times)


if __name__ == "__main__":
    sys.exit(main())
