"""`:dep` next to `cargo build`: adding a crate in tchbook and in evcxr_jupyter, and building the
same crate with cargo, cold and warm, in one run.

For each crate, the cell is the crate's `:dep` line and one expression that uses it; the cargo
side is a package whose `main.rs` prints the same expression, built with a plain `cargo build`
(the dev profile). Before anything is timed, `cargo fetch` downloads every crate the three need,
so that no measurement includes a download.

- cold: the first time on this machine: tchbook in a fresh kernel whose build cache has never
  built the crate (the crate may still be in the prelude's own dependency graph, built with it:
  then tchbook only resolves and links it, which is the point of such a row); evcxr_jupyter in an
  empty `EVCXR_TMPDIR`; cargo in an empty target directory. Once per crate: a cold build cannot
  be repeated without throwing away what it built.
- warm: the same cell again in a new kernel (the build folder keeps what the cold cell built),
  `--reps` times; cargo builds a second package depending on the crate in the same target
  directory (the crate is reused, only the package compiles).

A kernel's time runs from sending the cell to its `status: idle`; the kernel's start is left out.

    python bench/dep.py --tchbook target/release/tchbook --evcxr ~/.cache/tchbook/evcxr/bin/evcxr_jupyter \\
        --out bench/results/dep.json [--reps 3] [--crates ndarray,serde_json,regex]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kernel_session as ks  # noqa: E402

# crate: (its requirement, an expression that uses it, what the expression's text must contain)
CRATES = {
    "ndarray": ('"0.16"', "ndarray::Array2::<f64>::ones((3, 3)).sum()", "9"),
    "serde_json": ('"1"', 'serde_json::json!({"a": [1, 2]}).to_string()', "[1,2]"),
    "regex": ('"1"', 'regex::Regex::new(r"\\d+").unwrap().is_match("tch 2")', "true"),
}


def log(*args):
    print("[dep]", *args, file=sys.stderr, flush=True)


def cargo_package(root, name, crate):
    requirement, expression, _ = CRATES[crate]
    pkg = root / name
    (pkg / "src").mkdir(parents=True)
    (pkg / "Cargo.toml").write_text(
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2024"\n\n'
        f"[dependencies]\n{crate} = {requirement}\n")
    (pkg / "src" / "main.rs").write_text(f'fn main() {{\n    println!("{{:?}}", {expression});\n}}\n')
    return pkg


def cargo_build(pkg, target):
    t0 = time.perf_counter()
    run = subprocess.run(["cargo", "build", "--offline", "--quiet"], cwd=pkg, capture_output=True, text=True,
                         env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    seconds = time.perf_counter() - t0
    if run.returncode != 0:
        raise RuntimeError(f"cargo build of {pkg} failed:\n{run.stderr[-3000:]}")
    return seconds


def kernel_cell(ksm, kernel, runtime, crate, timeout):
    """Seconds for the crate's `:dep` cell in a fresh kernel, start excluded."""
    requirement, expression, expected = CRATES[crate]
    session = ks.Session(ksm, kernel, runtime)
    try:
        session.start(timeout)
        idle, _, value, out = session.execute(f":dep {crate} = {requirement}\n{expression}", timeout)
    finally:
        session.stop()
    if expected not in f"{value}{out}":
        raise RuntimeError(f"{kernel.name}: the {crate} cell gave {value!r} (expected {expected!r} in it)")
    return idle


def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "all": xs}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tchbook", type=Path, required=True)
    p.add_argument("--evcxr", type=Path, help="evcxr_jupyter (left out of the table without it)")
    p.add_argument("--crates", default=",".join(CRATES))
    p.add_argument("--reps", type=int, default=3, help="warm repetitions of each")
    p.add_argument("--timeout", type=float, default=1800)
    args = p.parse_args()
    crates = [c for c in args.crates.split(",") if c]
    results = {"reps": args.reps, "crates": {}, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="tchbook-dep-") as tmpname:
        tmp = Path(tmpname)
        runtime = tmp / "runtime"
        runtime.mkdir()
        # Every crate's sources, downloaded once, before anything is timed.
        fetch = cargo_package(tmp / "fetch", "fetchall", crates[0])
        with (fetch / "Cargo.toml").open("a") as manifest:
            for crate in crates[1:]:
                manifest.write(f"{crate} = {CRATES[crate][0]}\n")
        subprocess.run(["cargo", "fetch", "--quiet"], cwd=fetch, check=True)
        # A build cache of its own for tchbook, so that a crate's cold cell is cold in it and the
        # user's cache is not touched: a copy of the user's build templates without their kernels'
        # slots (which may hold earlier `:dep`s); `tchbook install` finishes it, untimed.
        cache = tmp / "tchbook-cache"
        user_cache = Path(os.environ.get("TCHBOOK_CACHE_DIR") or Path.home() / ".cache" / "tchbook")
        for version in (user_cache / "build").glob("*"):
            shutil.copytree(version, cache / "build" / version.name, symlinks=True,
                            ignore=lambda d, names: ["slots"] if Path(d) == version else [])
        tchbook = ks.tchbook_kernel("tchbook", args.tchbook, {"TCHBOOK_CACHE_DIR": str(cache)}, tmp)
        kernels = {"tchbook": tchbook}
        # The copy's prelude sits at another path, so cargo builds the prelude's own crates once
        # more in the first kernel's build folder: done here, untimed, by one trivial cell.
        prep = ks.write_specs(tmp / "kernels-prep", kernels)
        session = ks.Session(prep, tchbook, runtime)
        try:
            session.start(args.timeout)
            session.execute("1 + 1", args.timeout)
        finally:
            session.stop()
        for crate in crates:
            row = {}
            evcxr_dir = tmp / f"evcxr-{crate}"
            evcxr_dir.mkdir()
            if args.evcxr:
                ns = argparse.Namespace(kernels=["evcxr"], evcxr=args.evcxr, evcxr_tmpdir=evcxr_dir)
                evcxr_kernels, _ = ks.kernel_specs(ns, tmp / f"spec-{crate}")
                # The same cell as tchbook's, in evcxr's kernel without tch.
                kernels["evcxr"] = evcxr_kernels["evcxr"]
            ksm = ks.write_specs(tmp / f"kernels-{crate}", kernels)
            target = tmp / f"cargo-target-{crate}"
            sides = {"cargo build": lambda i: cargo_build(
                cargo_package(tmp / f"cargo-{crate}-{i}", f"depbench{i}", crate), target)}
            for name in kernels:
                sides[name] = lambda i, name=name: kernel_cell(ksm, kernels[name], runtime, crate, args.timeout)
            for side, run in sides.items():
                cold = run(0)
                warm = [run(i) for i in range(1, args.reps + 1)]
                row[side] = {"cold": cold, "warm": summary(warm)}
                log(f"{crate}: {side}: cold {cold:.1f} s, warm {statistics.median(warm):.2f} s")
            results["crates"][crate] = row
            results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            results["load_after"] = os.getloadavg()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
            shutil.rmtree(evcxr_dir, ignore_errors=True)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
