"""The floor under a tchbook cell: what rustc, the link and the dlopen cost on their own, measured
on a copy of a live kernel's build slot, in the same run as the kernel's cells (kernels.py).

A trivial cell's time is the kernel's work, evcxr's, the cargo front end's, rustc's on the cell
crate (which has the prelude's and its ~150 dependencies' metadata in scope), the link against the
dependencies' shared library and the dlopen of the result. This replays the slot's recorded rustc
command (the one the cargo front end runs for every cell, with the kernel binary as the linker and
the same `-C lto=off`) on:

- `bare`: a one-function cdylib that names no dependency (rustc alone, its start and a link);
- `empty`: an empty cell crate, `use tchbook_prelude::prelude::*;` and the entry point only,
  which is the least any cell costs: the prelude's metadata, code generation of nothing, the link;
- `empty_no_link`: the same without the link (`-Z no-link`), so that the link is the difference;
- `cell`: the trivial cell's own source, as the kernel generated it;

each alternated with the others (A B C D A B C D ...), and the dlopen of the `empty` library in a
process that already holds the dependencies' library, as the evaluation process does.

    python bench/floor.py SLOT_DIR [--reps 10]
"""

import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLACEHOLDER = "{tchbook-build-dir}"
ENTRY = "#[unsafe(no_mangle)]\npub extern \"C\" fn run_user_code_{n}(s: *mut u8) -> *mut u8 {{ s }}\n"
PRELUDE = "#![allow(unused_imports)]\nuse tchbook_prelude::prelude::*;\n"


def latest_planned_record(slot):
    """The newest replay record that links through the dependencies' library: the command the
    kernel's last cells ran."""
    records = sorted((slot / "target" / "tchbook-replay").glob("*.json"),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for path in records:
        record = json.loads(path.read_text())
        if (record.get("link_plan") or {}).get("link") == "shared":
            return record
    raise SystemExit(f"{slot}: no replay record with a link plan (run a few cells in the kernel first)")


class Slot:
    """A copy of a kernel's build slot and its recorded rustc command."""

    def __init__(self, slot, kernel_binary, workdir):
        self.dir = workdir / "slot"
        shutil.copytree(slot, self.dir, symlinks=True)
        record = latest_planned_record(self.dir)
        sub = lambda text: text.replace(PLACEHOLDER, str(self.dir))
        self.args = [sub(a) for a in record["args"]]
        self.env = {**os.environ, **{k: sub(v) for k, v in record["env"]}}
        plan = json.loads(sub(json.dumps(record["link_plan"])))
        self.library = Path(plan["library"])
        # As src/cellbuild/cargo_front/replay.rs runs it: the kernel binary links, by the plan.
        self.args += ["-C", f"linker={kernel_binary}", "-C", "lto=off"]
        self.env["TCHBOOK_LINK_PLAN"] = json.dumps(plan)
        self.cell = (self.dir / "src" / "lib.rs").read_text()
        self.n = 1_000_000

    def rustc(self, variant, source, extra=(), externs=True):
        """Seconds for the recorded rustc on `source`. Each variant keeps an incremental cache of
        its own, as a kernel's consecutive cells share one: alternated in one cache, each would
        throw away what the one before it left."""
        return self.run(variant, source, extra, externs)[0]

    def mono_items(self, source):
        """How many functions rustc instantiates in `source`'s crate itself (`-Z
        print-mono-items`), rather than calling its dependencies' compiled ones."""
        _, out = self.run("mono-items", source, ["-Zno-link", "-Zprint-mono-items=yes"])
        return sum(line.startswith("MONO_ITEM fn") for line in out.splitlines())

    def run(self, variant, source, extra=(), externs=True):
        """(seconds, stdout) of the recorded rustc on `source`, as `rustc` describes it."""
        self.n += 1
        # A new entry point name each time, as each cell has: nothing is reused by name.
        source = source.replace("run_user_code_", f"run_user_code_{self.n}_")
        (self.dir / "src" / "lib.rs").write_text(source)
        args = [f"incremental={self.dir / 'target' / 'floor-incremental' / variant}"
                if a.startswith("incremental=") else a for a in self.args]
        if not externs:
            i = args.index("--extern")
            del args[i:i + 2]
        env = dict(self.env)
        if extra:
            env["RUSTC_BOOTSTRAP"] = "1"
        t0 = time.perf_counter()
        run = subprocess.run(args + list(extra), cwd=self.dir, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - t0
        if run.returncode != 0:
            raise RuntimeError(f"rustc failed on the floor crate:\n{source}\n{run.stderr[-3000:]}")
        return seconds, run.stdout

    def built(self):
        out = Path(self.args[self.args.index("--out-dir") + 1])
        return out / "libctx.so"


def measure(slot, kernel_binary, reps=10):
    """Medians and minimums (seconds) of each floor measurement, over `reps` alternated runs."""
    with tempfile.TemporaryDirectory(prefix="tchbook-floor-") as tmp:
        s = Slot(Path(slot), kernel_binary, Path(tmp))
        # Every crate here holds none of a notebook's items, so the kernel builds each as the
        # cargo front end replays such a crate (src/cellbuild/cargo_front/replay.rs).
        s.args = without_codegen_options(s.args, ("incremental", "codegen-units")) + [
            "-C", "codegen-units=1"]
        variants = {
            "bare": lambda: s.rustc("bare", ENTRY.format(n=""), externs=False),
            "empty": lambda: s.rustc("empty", PRELUDE + ENTRY.format(n="")),
            "empty_no_link": lambda: s.rustc("empty_no_link", PRELUDE + ENTRY.format(n=""), extra=["-Zno-link"]),
            "cell": lambda: s.rustc("cell", s.cell),
        }
        times = {name: [] for name in variants}
        for run in variants.values():  # one untimed round: the caches settle
            run()
        for _ in range(reps):
            for name, run in variants.items():
                times[name].append(run())
        # The dlopen: a fresh copy of the empty cell's library each time (the loader would hand
        # back the one already open), in a process holding the dependencies' library already.
        s.rustc("empty", PRELUDE + ENTRY.format(n=""))
        ctypes.CDLL(str(s.library), mode=ctypes.RTLD_GLOBAL)
        dlopen = []
        for i in range(reps):
            copy = Path(tmp) / f"libcell{i}.so"
            shutil.copy(s.built(), copy)
            t0 = time.perf_counter()
            ctypes.CDLL(str(copy))
            dlopen.append(time.perf_counter() - t0)
        times["dlopen"] = dlopen
        out = {name: {"median": statistics.median(v), "min": min(v), "n": len(v)} for name, v in times.items()}
        out["link"] = {"median": out["empty"]["median"] - out["empty_no_link"]["median"],
                       "min": out["empty"]["min"] - out["empty_no_link"]["min"], "n": reps}
        out["cell_source"] = s.cell
        return out


def without_codegen_options(args, names):
    """rustc's arguments without the `-C name=...` options named, in either spelling."""
    out = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a == "-C" and i + 1 < len(args) and args[i + 1].split("=")[0] in names:
            skip = True
            continue
        if a.startswith("-C") and a[2:].split("=")[0] in names:
            continue
        out.append(a)
    return out


def alternated(runs, reps):
    """Seconds of each of `runs` (name -> function), run in turn `reps` times (A B C A B C ...)
    after one untimed round, in which each settles (a session, a cache)."""
    for run in runs.values():
        run()
    times = {key: [] for key in runs}
    for _ in range(reps):
        for key, run in runs.items():
            times[key].append(run())
    return times


def print_medians(title, times):
    """`times` ((crate, variant) -> seconds), a line each: median (min) in ms, under `title`."""
    print(title)
    for (crate, variant), t in times.items():
        print(f"{crate:28s} {variant:28s} {statistics.median(t) * 1000:6.1f} ms ({min(t) * 1000:.1f} ms)")


def slot_arguments(description):
    """The command line of a script that replays a kernel's build slot: the slot, the kernel
    binary that links its cells, the repetitions."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("slot", type=Path, help="a tchbook kernel's build slot (`:last_compile_dir` in a cell)")
    p.add_argument("--kernel", type=Path, required=True, help="the tchbook binary (the cells' linker)")
    p.add_argument("--reps", type=int, default=10)
    return p.parse_args()


def main():
    args = slot_arguments(__doc__.splitlines()[0])
    result = measure(args.slot, args.kernel, args.reps)
    for name, v in result.items():
        if isinstance(v, dict):
            print(f"{name:14s} median {v['median'] * 1000:6.1f} ms  min {v['min'] * 1000:6.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
