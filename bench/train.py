"""The training-loop benchmark: the prelude (a built Rust binary) vs PyTorch eager, alternated.

For each thread count and workload it runs the sides in turn, A B C A B C ..., each run a fresh
process doing a short warm-up and then the timed workload once (see torch_loops.py and
src/main.rs, which print one JSON line each), and records every run's seconds with the machine's
load average at its start. The sides: the prelude, PyTorch eager, and plain tch (the reference
the prelude must not fall behind); for the workloads in --tuned-malloc also PyTorch with the
prelude's malloc settings; for those in --allocator also the prelude on glibc's malloc (the
benchmark built without the kernel's allocator, mimalloc) and PyTorch with mimalloc preloaded
(the same sources the kernel links), so that the table shows what the allocator buys on each side
and what is left between the languages once both have it.

    python bench/train.py --prepare target/bench-allocators   # those two, built once
    python bench/train.py --bin target/release/tchbook-bench --out bench/out/train.json \
        --glibc-bin target/bench-allocators/tchbook-bench-glibc \
        --mimalloc target/bench-allocators/libmimalloc.so \
        [--runs 5] [--threads 1,2] [--device cpu] [--workloads iris,cifar,fashion,mlp,loader]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = ["iris", "cifar", "fashion", "mlp", "loader"]

# glibc's malloc tunables that the prelude sets with mallopt at start-up (NOTES.md's baseline:
# oneDNN's ~37 MB per-step temporaries otherwise go through mmap/munmap and page-fault every
# step). The "pytorch, tuned malloc" rows give PyTorch the same setting through glibc's
# environment variables, so the table shows what the prelude gains by default and what is left
# once both sides have it. Values in bytes; keep in step with what the prelude sets.
MALLOC_ENV = {  # prelude/src/runtime.rs, tune_allocator()
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
    "MALLOC_TOP_PAD_": str(64 << 20),
}


def prepare(out_dir, scope):
    """Builds the two programs of the allocator rows into out_dir: tchbook-bench-glibc (this
    benchmark without the kernel's allocator, so glibc's malloc) and libmimalloc.so (mimalloc as
    a library PyTorch's process preloads, compiled from the libmimalloc-sys crate the kernel links,
    with the defines its build script uses for the kernel's features: override, no_thp). Leaves
    target/release/tchbook-bench as the default build."""
    out_dir.mkdir(parents=True, exist_ok=True)
    root = HERE.parent
    target = Path(os.environ.get("CARGO_TARGET_DIR") or root / "target")
    # The scope of the build that made the other binaries, so that only tchbook-bench changes.
    build = ["cargo", "build", "--release", "--locked", *scope]
    subprocess.run(build + ["--features", "tchbook-bench/glibc"], cwd=root, check=True)
    (out_dir / "tchbook-bench-glibc").write_bytes((target / "release" / "tchbook-bench").read_bytes())
    (out_dir / "tchbook-bench-glibc").chmod(0o755)
    subprocess.run(build, cwd=root, check=True)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--locked", "--format-version", "1"], cwd=root,
                                     check=True, capture_output=True, text=True).stdout)
    sys_crate = next(Path(p["manifest_path"]).parent for p in meta["packages"] if p["name"] == "libmimalloc-sys")
    src = sys_crate / "c_src" / "mimalloc" / "v3"  # the crate's default; the kernel asks for no "v2"
    subprocess.run(["cc", "-O3", "-shared", "-fPIC", "-DMI_MALLOC_OVERRIDE", "-DMI_BUILD_RELEASE", "-DNDEBUG",
                    "-DMI_DEBUG=0", "-DMI_NO_THP=1", "-ftls-model=initial-exec", "-fno-builtin-malloc",
                    f"-I{src / 'include'}", f"-I{src / 'src'}", str(src / "src" / "static.c"),
                    "-o", str(out_dir / "libmimalloc.so"), "-lpthread"], check=True)
    log(f"wrote {out_dir / 'tchbook-bench-glibc'} and {out_dir / 'libmimalloc.so'}")


def log(*args):
    print("[train]", *args, file=sys.stderr, flush=True)


def run_one(cmd, threads, extra_env=None, timeout=None):
    env = dict(os.environ)
    # Both sides get the same OpenMP/MKL pool size as well as set_num_threads, so neither starts
    # spare pools the other does not.
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env.update(extra_env or {})
    load = os.getloadavg()[0]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        # A loaded 2-core machine can make 2-thread runs 20x slower (OpenMP threads waiting for
        # a core at every parallel region); record the limit rather than wait for ever.
        return {"seconds": timeout, "timed_out": True, "load1": load}
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
    rec = json.loads(line)
    rec["load1"] = load
    return rec


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prepare", type=Path, metavar="DIR",
                   help="only build the allocator rows' two programs into DIR (see --glibc-bin, --mimalloc)")
    p.add_argument("--cargo-scope", default="-p tchbook-bench",
                   help="with --prepare: the packages and targets of the build it goes with")
    p.add_argument("--bin", type=Path, help="the built tchbook-bench binary")
    p.add_argument("--out", type=Path)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--device", default="cpu")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds one run may take; a run that takes longer is recorded at this value")
    p.add_argument("--allocator", default="cifar",
                   help="workloads that also run the prelude on glibc's malloc and PyTorch on mimalloc")
    p.add_argument("--glibc-bin", type=Path, help="tchbook-bench built without mimalloc (--prepare)")
    p.add_argument("--mimalloc", type=Path, help="libmimalloc.so for PyTorch's side (--prepare)")
    p.add_argument("--tuned-malloc", default="fashion",
                   help="workloads that also get a PyTorch run with the prelude's malloc settings")
    args = p.parse_args()
    if args.prepare:
        prepare(args.prepare, args.cargo_scope.split())
        return
    if not args.bin or not args.out:
        p.error("--bin and --out are needed (or --prepare DIR)")
    threads = [int(t) for t in args.threads.split(",") if t]
    workloads = [w for w in args.workloads.split(",") if w]
    tuned = {w for w in args.tuned_malloc.split(",") if w}
    allocator = {w for w in args.allocator.split(",") if w}
    if allocator and not (args.glibc_bin and args.glibc_bin.is_file() and args.mimalloc and args.mimalloc.is_file()):
        p.error(f"the allocator rows ({args.allocator}) need --glibc-bin and --mimalloc: build them with "
                "`python bench/train.py --prepare DIR`, or pass --allocator ''")

    results = {"device": args.device, "runs": args.runs, "rows": [],
               "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for t in threads:
        for w in workloads:
            sides = {
                "prelude": ([str(args.bin), "--workload", w, "--threads", str(t), "--device", args.device], None),
                "pytorch": ([sys.executable, str(HERE / "torch_loops.py"), "--workload", w,
                             "--threads", str(t), "--device", args.device], None),
                "tch": ([str(args.bin), "--workload", w, "--threads", str(t), "--device", args.device,
                         "--impl", "tch"], None),
            }
            if w in tuned:
                sides["pytorch-tuned-malloc"] = (sides["pytorch"][0], MALLOC_ENV)
            if w in allocator:
                sides["prelude-glibc"] = ([str(args.glibc_bin)] + sides["prelude"][0][1:], None)
                sides["pytorch-mimalloc"] = (sides["pytorch"][0], {"LD_PRELOAD": str(args.mimalloc.resolve())})
            runs = {name: [] for name in sides}
            for r in range(args.runs):
                for name, (cmd, extra) in sides.items():
                    rec = run_one(cmd, t, extra, args.timeout)
                    runs[name].append(rec)
                log(f"{w} {t}t run {r + 1}/{args.runs}: " + ", ".join(
                    f"{name} {runs[name][-1]['seconds']:.3f} s" for name in sides))
            steps = {name: r["steps"] for name in sides for r in runs[name][:1] if "steps" in r}
            if len(set(steps.values())) != 1:
                raise RuntimeError(f"{w}: the sides ran different step counts: {steps}")
            row = {"workload": w, "threads": t, "steps": next(iter(steps.values()), 0), "sides": {}}
            for name, rs in runs.items():
                secs = [x["seconds"] for x in rs]
                row["sides"][name] = {
                    "min": min(secs), "median": statistics.median(secs), "all": secs,
                    "load1": [x["load1"] for x in rs], "last": rs[-1].get("last"),
                    "timed_out": sum(1 for x in rs if x.get("timed_out")),
                }
            results["rows"].append(row)
            # Written after each row, so a run cut short keeps what it measured.
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
    results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
