"""The kernel benchmark: tchbook vs evcxr_jupyter 0.22 vs ipykernel, through jupyter_client.

Measures, for each kernel:
- start -> kernel_info_reply, in fresh kernels;
- first tch result in a fresh kernel (start -> the small tch cell's result; evcxr's cell carries
  `:dep tch` and finds tch already built in the shared EVCXR_TMPDIR; ipykernel's does
  `import torch`);
- a trivial cell (`1 + 1`), a small tch cell and a completion request, repeated in one kernel;
- the floor under tchbook's cells (floor.py): rustc on an empty cell crate with the prelude in
  scope, the link, the dlopen, and rustc on the trivial cell's own source, on a copy of the
  kernel's build slot, right after its cells;
- memory: the summed RSS of the kernel's process tree idle with tch/torch loaded, and its peak
  while a cell runs the CIFAR-10 workload (sampled every 20 ms), split into the kernel plus its
  evaluation process and the compiler processes (cargo, rustc, the linker) a Rust cell spawns;
- tchbook's first requests (`--first-requests`, or `--first-starts` fresh kernels per kind in a
  full run): each kind of completion a notebook asks for (FIRST_REQUESTS) as the very first
  request of a fresh kernel, its latency, match count and whether JupyterLab would show it (in
  < 1 s, with the expected items); the documentation request JupyterLab's completer sends for
  the highlighted match, after a first Tab; and the PSS of the kernel's process tree 20 s later.

A cell's latency runs from sending execute_request to the iopub `status: idle` that ends it, which
is when a front end has shown everything; the execute_reply time is kept too.

Nothing in the user's Jupyter is touched: kernelspecs live in a temporary directory given to a
KernelSpecManager, connection files in a temporary runtime directory, and tchbook's spec comes
from `tchbook install --prefix <tmp>`.

    python bench/kernels.py --out bench/out/kernels.json [--reps 20] [--kernels tchbook,evcxr,ipykernel]
    python bench/kernels.py --out before-after.json --kernels tchbook-baseline,tchbook \\
        --tchbook-baseline OLD/tchbook --tchbook NEW/tchbook --alternate
    python bench/kernels.py --out opt-levels.json --kernels tchbook-baseline,tchbook \\
        --tchbook-baseline BIN --baseline-env TCHBOOK_OPT_LEVEL=1 --alternate
    python bench/kernels.py --kernels tchbook --first-requests --starts 3 \\
        --out bench/results/first-completion.json
"""

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import floor  # noqa: E402
from kernel_session import ROOT, Session, environment_setting, kernel_specs, log  # noqa: E402
from process_tree import COMPILER_NAMES, Sampler, tree_memory, tree_pss  # noqa: E402

# Each kind of completion a notebook asks for, sent as the first request of a fresh tchbook kernel:
# (kind, code with the cursor at its end, the items JupyterLab must show).
FIRST_REQUESTS = [
    ("std module path", "std::collections::Hash", ["HashMap", "HashSet"]),
    ("std type in a module", "let shared = std::sync::Ar", ["Arc"]),
    ("constant three modules deep", "let tau = 2.0 * std::f64::consts::P", ["PI"]),
    ("dependency path", "let layer = tch::nn::Lin", ["Linear", "linear"]),
    ("method of a cell's value", "let mut v = vec![1, 2];\nv.pu", ["push"]),
    ("field of a notebook type", "struct P { x: f64 }\nlet p = P { x: 1.0 };\np.", ["x"]),
    ("prelude name", "let t = Ten", ["Tensor"]),
    ("local variable", "let learning_rate = 0.1;\nlet lr2 = learn", ["learning_rate"]),
    ("macro", "printl", ["println!"]),
]
# The Tab, then the documentation request JupyterLab's completer sends for the highlighted match.
DOCS_TAB = "let z = Tensor::zer"
DOCS_REQUEST = "let z = Tensor::zeros"


def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "n": len(xs), "all": xs}


def bench_first_requests(ksm, kernel, runtime, args):
    """tchbook's first requests of fresh kernels: each completion kind, then Tab + documentation
    and the tree's PSS 20 s later. `args.first_starts` fresh kernels for each."""
    kinds = {}
    for kind, code, expected in FIRST_REQUESTS:
        latencies, counts, shown = [], [], 0
        for _ in range(args.first_starts):
            s = Session(ksm, kernel, runtime)
            try:
                s.start(args.timeout)
                t, matches = s.complete(code, len(code), args.timeout)
            finally:
                s.stop()
            latencies.append(t)
            counts.append(len(matches))
            hit = all(e in [m.split("(")[0] for m in matches] for e in expected)
            shown += t < 1.0 and hit
            log(f"{kernel.name}: first request, {kind}: {t * 1000:.0f} ms, {len(matches)} matches"
                f" ({'shown' if t < 1.0 and hit else 'dropped' if hit else 'without ' + ', '.join(expected)})")
        kinds[kind] = {"code": code, "expected": expected, "latency": summary(latencies),
                       "matches": counts, "shown": shown}
    inspects, found, pss, procs, texts = [], 0, [], [], []
    for _ in range(args.first_starts):
        s = Session(ksm, kernel, runtime)
        try:
            s.start(args.timeout)
            s.complete(DOCS_TAB, len(DOCS_TAB), args.timeout)
            t, ok, text = s.inspect(DOCS_REQUEST, len(DOCS_REQUEST), args.timeout)
            inspects.append(t)
            found += bool(ok)
            texts.append(text[:300])
            time.sleep(20)
            total, procs = tree_pss(s.pid)
            pss.append(total)
        finally:
            s.stop()
        log(f"{kernel.name}: first documentation request {t * 1000:.0f} ms ({'found' if ok else 'nothing'}); "
            f"tree PSS 20 s later {total:.0f} MiB")
    return {"starts": args.first_starts, "kinds": kinds, "tab": DOCS_TAB, "inspect_code": DOCS_REQUEST,
            "inspect": summary(inspects), "inspect_found": found, "inspect_text": texts[0] if texts else "",
            "pss_after_tab_and_docs_mib": summary(pss), "pss_processes": procs}


def warmed_session(ksm, kernel, runtime, args):
    """A started kernel that has run its setup and one untimed cell of each kind: the first
    evaluation pays one-off costs that the fresh-kernel measurement reports."""
    s = Session(ksm, kernel, runtime)
    try:
        s.start(args.timeout)
        if kernel.setup:
            s.execute(kernel.setup, args.timeout)
        s.execute("1 + 1", args.timeout)
        s.execute(kernel.tch_cell, args.timeout)
    except BaseException:
        s.stop()
        raise
    return s


def trivial_cell(s, args):
    """`1 + 1` in the session: (seconds to idle, seconds to the reply), its value checked."""
    idle, reply, value, _ = s.execute("1 + 1", args.timeout)
    if value is None or value.strip() != "2":
        raise RuntimeError(f"{s.kernel.name}: `1 + 1` gave {value!r}")
    return idle, reply


def bench_kernel(ksm, kernel, runtime, args):
    res = {"name": kernel.name}
    if kernel.name.startswith("tchbook") and (args.first_requests or args.first_starts):
        res["first_requests"] = bench_first_requests(ksm, kernel, runtime, args)
    if args.first_requests:
        return res
    starts, firsts, first_completes, first_hits, mem_before, mem_after = [], [], [], [], [], []
    code, cursor = kernel.complete
    if not args.in_kernel_only:
        for i in range(args.starts):
            s = Session(ksm, kernel, runtime)
            try:
                t_start = s.start(args.timeout)
                t_idle, _, value, _ = s.execute(kernel.first_tch, args.timeout)
                starts.append(t_start)
                # Launch -> kernel_info_reply, then straight on to the cell's idle: the client's
                # own turn-around between the two is well below a millisecond.
                firsts.append(t_start + t_idle)
                # The first Tab of a fresh kernel: JupyterLab shows the reply only if it comes
                # within its provider timeout (1 s) and offers the expected item.
                time.sleep(1)
                mem_before.append(tree_memory(s.pid)[0])
                t_complete, matches = s.complete(code, cursor, args.timeout)
                first_completes.append(t_complete)
                first_hits.append(t_complete < 1.0 and any(m.split("(")[0].endswith("zeros") for m in matches))
                # What completion costs in memory once it has warmed up (rust-analyzer loaded).
                time.sleep(30)
                mem_after.append(tree_memory(s.pid)[0])
                if i == 0:
                    res["kernel_info"] = {k: s.info.get(k) for k in ("implementation", "implementation_version")}
                    res["first_tch_value"] = value
            finally:
                s.stop()
            log(f"{kernel.name}: fresh kernel {i + 1}/{args.starts}: start {t_start:.3f} s, first tch result "
                f"{firsts[-1]:.3f} s, first completion {t_complete:.3f} s ({'shown' if first_hits[-1] else 'dropped'}), "
                f"memory {mem_before[-1]:.0f} -> {mem_after[-1]:.0f} MiB")
        res["start"] = summary(starts)
        res["first_tch"] = summary(firsts)
        res["first_complete"] = summary(first_completes)
        res["first_complete_shown"] = sum(first_hits)
        res["mem_before_completion"] = summary(mem_before)
        res["mem_after_completion"] = summary(mem_after)
    if args.fresh_only:
        return res

    s = warmed_session(ksm, kernel, runtime, args)
    try:
        trivial, trivial_reply, tch, tch_reply, comp = [], [], [], [], []
        for _ in range(args.reps):
            idle, reply = trivial_cell(s, args)
            trivial.append(idle)
            trivial_reply.append(reply)
        for _ in range(args.reps):
            idle, reply, _, _ = s.execute(kernel.tch_cell, args.timeout)
            tch.append(idle)
            tch_reply.append(reply)
        # Idle memory before anything asks for completions: tchbook starts rust-analyzer only
        # for completions and hover (its type probe is rustc), so it is sampled on both sides.
        time.sleep(2)
        main_before, _, _ = tree_memory(s.pid)
        matches = []
        for _ in range(args.reps):
            t, matches = s.complete(code, cursor, args.timeout)
            comp.append(t)
        res["complete_first"] = comp[0]
        res["trivial"] = summary(trivial)
        res["trivial_reply"] = summary(trivial_reply)
        res["tch_cell"] = summary(tch)
        res["tch_cell_reply"] = summary(tch_reply)
        res["complete"] = summary(comp)
        res["complete_matches"] = len(matches)
        res["complete_has_zeros"] = any(m.split("(")[0].endswith("zeros") for m in matches)
        log(f"{kernel.name}: trivial {res['trivial']['median']:.3f} s, tch cell {res['tch_cell']['median']:.3f} s, "
            f"complete {res['complete']['median']:.3f} s ({len(matches)} matches)")
        if kernel.name.startswith("tchbook") and args.floor_reps:
            # The floor under those cells, on a copy of this kernel's slot as its last trivial
            # cell left it (floor.py): rustc on an empty cell crate, the link, the dlopen.
            s.execute("1 + 1", args.timeout)
            _, _, slot, _ = s.execute(":last_compile_dir", args.timeout)
            res["floor"] = floor.measure(Path(slot.strip().strip('"')), kernel.argv[0], args.floor_reps)
            log(f"{kernel.name}: floor: empty cell crate {res['floor']['empty']['median']:.3f} s "
                f"(link {res['floor']['link']['median']:.3f} s), the trivial cell's rustc "
                f"{res['floor']['cell']['median']:.3f} s, dlopen {res['floor']['dlopen']['median'] * 1000:.2f} ms")

        if args.in_kernel_only:
            return res
        time.sleep(2)  # let allocations from the cells above settle before the idle sample
        main, comp_mib, procs = tree_memory(s.pid)
        res["mem_idle"] = {"main_mib": main, "compiler_mib": comp_mib, "processes": procs,
                           "before_completions_mib": main_before}
        sampler = Sampler(s.pid)
        sampler.start()
        t_idle, _, _, out = s.execute(kernel.cifar, args.timeout * 4)
        sampler.stop.set()
        sampler.join()
        _, _, procs = tree_memory(s.pid)
        res["mem_cifar"] = {
            "peak_main_mib": sampler.peak_main,
            "peak_compiler_mib": sampler.peak_comp,
            "peak_total_mib": sampler.peak_total,
            "hwm_main_mib": sum(p["hwm_mib"] for p in procs if not COMPILER_NAMES.match(p["name"])),
            "processes": procs,
            "cell_seconds": t_idle,
            # Each CIFAR cell times its own loop (data, model and compile excluded).
            "loop_seconds": _loop_seconds(out),
            "cell_output": out[-500:],
        }
        log(f"{kernel.name}: idle {main:.0f} MiB; CIFAR cell {t_idle:.1f} s, peak {sampler.peak_main:.0f} MiB "
            f"(+{sampler.peak_comp:.0f} MiB compiler)")
    finally:
        s.stop()
    return res


def bench_alternated(ksm, kernels, runtime, args):
    """The in-kernel latencies of several kernels side by side: all of them started together, and
    each repetition runs the trivial cell and then the tch cell in every kernel in turn, the first
    kernel of a turn rotating. Run one after the other instead, two builds of one kernel measured
    minutes apart differ by the machine's drift (on a 2-core VM, 93 vs 85 ms in one run and 103 vs
    115 ms in the next for the same two binaries); alternated, the drift falls on each alike."""
    sessions = {}
    try:
        for kernel in kernels:
            sessions[kernel.name] = warmed_session(ksm, kernel, runtime, args)
        times = {k.name: {"trivial": [], "trivial_reply": [], "tch_cell": [], "tch_cell_reply": []}
                 for k in kernels}
        for rep in range(args.reps):
            turn = kernels[rep % len(kernels):] + kernels[:rep % len(kernels)]
            for kernel in turn:
                s, t = sessions[kernel.name], times[kernel.name]
                idle, reply = trivial_cell(s, args)
                t["trivial"].append(idle)
                t["trivial_reply"].append(reply)
                idle, reply, _, _ = s.execute(kernel.tch_cell, args.timeout)
                t["tch_cell"].append(idle)
                t["tch_cell_reply"].append(reply)
    finally:
        for s in sessions.values():
            s.stop()
    results = {name: {"name": name, "alternated_with": [k.name for k in kernels],
                      **{what: summary(xs) for what, xs in t.items()}}
               for name, t in times.items()}
    first = kernels[0].name
    for name, res in results.items():
        ratios = {what: res[what]["median"] / results[first][what]["median"]
                  for what in ("trivial", "tch_cell")}
        res["ratio_to_" + first] = ratios
        log(f"{name}: trivial {res['trivial']['median']:.3f} s, tch cell {res['tch_cell']['median']:.3f} s "
            f"({ratios['trivial']:.2f}x and {ratios['tch_cell']:.2f}x {first}'s, alternated)")
    return results


def _loop_seconds(out):
    m = re.search(r"loop_seconds=([0-9.eE+-]+)", out)
    return float(m.group(1)) if m else None


def evcxr_version(path):
    """evcxr_jupyter has no --version: read what `cargo install --root` recorded beside it."""
    try:
        text = (Path(path).resolve().parent.parent / ".crates.toml").read_text()
    except OSError:
        return None
    m = re.search(r'"evcxr_jupyter (\S+) ', text)
    return f"evcxr_jupyter {m.group(1)}" if m else None


def prewarm_evcxr(ksm, kernels, runtime, args):
    """Builds tch once into the shared EVCXR_TMPDIR (about two minutes on two cores)."""
    k = kernels["evcxr"]
    log(f"evcxr: building tch into {args.evcxr_tmpdir} once (a few minutes the first time)")
    s = Session(ksm, k, runtime)
    try:
        s.start(args.timeout)
        t, _, value, _ = s.execute(k.first_tch, 3600)
        log(f"evcxr: first `:dep tch` cell took {t:.1f} s (value {value})")
    finally:
        s.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--reps", type=int, default=20, help="repetitions of each in-kernel measurement")
    p.add_argument("--starts", type=int, default=None, help="fresh kernels per kernel (default: --reps)")
    p.add_argument("--kernels", default="tchbook,evcxr,ipykernel")
    p.add_argument("--tchbook", type=Path, default=ROOT / "target" / "release" / "tchbook")
    p.add_argument("--tchbook-baseline", type=Path,
                   help="a second tchbook binary, measured as kernel `tchbook-baseline` in the same run "
                        "(add it to --kernels): before and after a change, side by side")
    p.add_argument("--baseline-env", type=environment_setting, action="append", default=[],
                   metavar="NAME=VALUE",
                   help="a variable in the baseline kernel's environment (repeatable): the same binary "
                        "with one setting changed, side by side (TCHBOOK_OPT_LEVEL=1)")
    p.add_argument("--evcxr", type=Path, default=shutil.which("evcxr_jupyter"))
    p.add_argument("--evcxr-tmpdir", type=Path,
                   default=Path.home() / ".cache" / "tchbook" / "bench" / "evcxr-tmpdir")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--in-kernel-only", action="store_true",
                   help="only the in-kernel latencies (trivial cell, tch cell, completion): no fresh "
                        "kernels, no CIFAR memory run")
    p.add_argument("--fresh-only", action="store_true",
                   help="only the fresh-kernel measurements (start, first tch result, first completion, memory)")
    p.add_argument("--first-requests", action="store_true",
                   help="only tchbook's first requests of fresh kernels (each completion kind, the documentation "
                        "request, the tree's PSS after them), --starts kernels for each")
    p.add_argument("--floor-reps", type=int, default=10,
                   help="alternated runs of each floor measurement under tchbook's cells (floor.py; 0: none)")
    p.add_argument("--first-starts", type=int, default=3,
                   help="fresh kernels per first request in a full run (0: none; default 3)")
    p.add_argument("--alternate", action="store_true",
                   help="only the trivial and tch cells' latencies, the kernels alive together and "
                        "alternated cell by cell (before and after a change: --kernels "
                        "tchbook-baseline,tchbook)")
    args = p.parse_args()
    if args.first_requests:
        args.first_starts = args.starts or 3
    args.kernels = [k for k in args.kernels.split(",") if k]
    args.starts = args.starts or args.reps
    if "tchbook-baseline" in args.kernels and not args.tchbook_baseline:
        raise SystemExit("--kernels names tchbook-baseline: pass --tchbook-baseline BINARY")
    if "evcxr" in args.kernels and not args.evcxr:
        raise SystemExit("evcxr_jupyter not found: pass --evcxr or put it on PATH (scripts/bench installs it)")
    args.evcxr_tmpdir.mkdir(parents=True, exist_ok=True)

    results = {"reps": args.reps, "starts": args.starts, "kernels": {},
               "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_before": os.getloadavg()}
    if args.baseline_env:
        results["baseline_env"] = dict(args.baseline_env)
    with tempfile.TemporaryDirectory(prefix="tchbook-bench-") as tmpname:
        tmp = Path(tmpname)
        runtime = tmp / "runtime"
        runtime.mkdir()
        kernels, ksm = kernel_specs(args, tmp)
        if "evcxr" in kernels:
            results["evcxr_version"] = evcxr_version(args.evcxr)
            prewarm_evcxr(ksm, kernels, runtime, args)
        if args.alternate:
            results["kernels"] = bench_alternated(ksm, [kernels[n] for n in args.kernels], runtime, args)
            results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            results["load_after"] = os.getloadavg()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
        for name in [] if args.alternate else args.kernels:
            results["kernels"][name] = bench_kernel(ksm, kernels[name], runtime, args)
            # Written after each kernel, so a run cut short keeps what it measured.
            results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            results["load_after"] = os.getloadavg()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()