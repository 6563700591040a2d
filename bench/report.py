"""Writes bench/RESULTS.md from train.py's and kernels.py's JSON and a description of the machine.

    python bench/report.py --train bench/out/train.json --kernels bench/out/kernels.json \
        --out bench/RESULTS.md --command "scripts/bench"

With --replace-device DEVICE it rewrites only that device's training tables in an existing --out
(what `scripts/gpu-check --apply` does with a CUDA run from another machine), leaving its header,
this machine's tables and the notes as they were.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TITLES = {
    "iris": "Iris model, 100 epochs full batch, Adam",
    "cifar": "CIFAR-10 Net, batch 4, `loss.item()` every step, 3000 steps",
    "fashion": "deeplizard Network, batch 1000, one epoch of 60000",
    "mlp": "Classifier_MLP, batch 64, 5000 steps",
    "loader": "one DataLoader epoch alone: 60000×784, batches of 64, shuffled",
}
# (goal ratio PyTorch ÷ prelude, what the prelude is measured against; CIFAR at batch 4, bound by
# libtorch's own work, was set to 1.6× once that was measured: bench/NOTES.md)
GOALS = {"iris": 2.0, "cifar": 1.6, "mlp": 2.0, "fashion": 1.1, "loader": 5.0}
# The line a report without a CUDA table holds where that table would be; the first CUDA run
# (--replace-device cuda) takes its place.
NO_CUDA_TABLE = ("No CUDA table yet: no GPU has run these workloads. The GPU machine has no Rust toolchain, so "
                 "`scripts/gpu-check` builds its bundle here and `scripts/gpu-check --apply` adds the table from "
                 "the run there; on a GPU machine with Rust, `scripts/bench --only train --device cuda` does.")
KERNEL_NAMES = {"tchbook-baseline": "tchbook, the baseline build (`--tchbook-baseline`)", "tchbook": "tchbook",
                "evcxr": "evcxr_jupyter 0.22", "ipykernel": "ipykernel (PyTorch)"}

# The allocator comparisons a run may hold: the side names of the prelude without the allocator
# and of PyTorch with it (bench/train.py), and what the table says about it.
ALLOCATOR_TABLES = [
    ("prelude-no-cpu-cache", "pytorch-cpu-cache",
     "The CPU caching allocator on its own (the prelude then installed it at start, "
     "`runtime::cache_cpu_allocations`, and PyTorch's side preloaded the same code; removed since, "
     "having bought nothing)."),
    ("prelude-glibc", "pytorch-mimalloc",
     "The kernel's allocator on its own: mimalloc, which the kernel's binary (and the benchmark's) "
     "puts in place of glibc's malloc for every library it loads, libtorch included; the prelude "
     "without it is the benchmark built on glibc's malloc, PyTorch with it preloads the same "
     "mimalloc."),
]


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine(evcxr_version):
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    gpu = sh("nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader") \
        if shutil.which("nvidia-smi") else ""
    lock = (ROOT / "Cargo.lock").read_text()
    tch = re.search(r'name = "tch"\nversion = "([^"]+)"', lock)
    torch = sh(os.environ.get("TCHBOOK_PYTHON", "python3"), "-c", "import torch; print(torch.__version__)")
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory": f"{mem_kib / 1024 / 1024:.0f} GiB",
        "gpu": gpu or "none",
        "os": f"{platform.system()} {platform.release()}",
        "rustc": sh("rustc", "--version"),
        "tch": tch.group(1) if tch else "?",
        "torch": torch or "?",
        "python": platform.python_version(),
        "evcxr": evcxr_version or "not measured",
        "commit": sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"),
    }


def fmt_s(x):
    if x is None:
        return "–"
    if x < 1:
        return f"{x * 1000:.0f} ms" if x >= 0.01 else f"{x * 1000:.1f} ms"
    return f"{x:.2f} s"


def fmt_side(x):
    """min / median of one side, marking runs that hit train.py's time limit."""
    mark = "≥ " if x.get("timed_out") else ""
    return f"{mark}{fmt_s(x['min'])} / {mark}{fmt_s(x['median'])}" + (
        f" ({x['timed_out']} of {len(x['all'])} runs hit the limit)" if x.get("timed_out") else "")


def train_section(train, dated=False):
    """One training table. `dated` puts the run's start in the heading, for a report holding two runs
    on one device; a run's note (why it differs from a plain run) comes first, where it is read."""
    out = []
    dev = train["device"]
    when = f", {train['started']}" if dated and "started" in train else ""
    out.append(f"## Training loops ({dev}{when}): the prelude vs PyTorch eager\n")
    if train.get("note"):
        out.append(f"{train['note']}\n")
    if "started" in train:
        out.append(f"Measured {train['started']} – {train.get('ended', '?')[-9:]}.\n")
    out.append(f"Each cell: min / median of {train['runs']} runs per side, the sides alternated run by "
               "run (A B A B …), each run a fresh process timing the whole loop after a 5-step warm-up "
               "on throwaway state. Ratio = PyTorch time ÷ prelude time (above 1: the prelude is faster), "
               "of the medians, and of the minimums in brackets. Plain tch is the same loop without the "
               "prelude (tch's layers and `tch::data::Iter2`): the prelude should not fall below it "
               "(tch ÷ prelude ≥ 1 means the prelude is at least as fast).\n")
    out.append("| workload | threads | prelude min / median | PyTorch min / median | PyTorch ÷ prelude (min) | goal | | PyTorch − prelude per step | plain tch min / median | tch ÷ prelude |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    extra = []
    for row in train["rows"]:
        w, s = row["workload"], row["sides"]
        a, b = s["prelude"], s["pytorch"]
        ratio, ratio_min = b["median"] / a["median"], b["min"] / a["min"]
        goal = GOALS.get(w)
        met = "met" if goal and ratio >= goal else "**missed**"
        out.append(f"| {TITLES[w]} | {row['threads']} | {fmt_side(a)} | "
                   f"{fmt_side(b)} | **{ratio:.2f}×** ({ratio_min:.2f}×) | "
                   f"≥ {goal}× | {met} | {(b['median'] - a['median']) / row['steps'] * 1e6:.0f} µs | " + (
                       f"{fmt_side(s['tch'])} | {s['tch']['median'] / a['median']:.2f}× |"
                       if "tch" in s else "– | – |"))
        if "pytorch-tuned-malloc" in s:
            c = s["pytorch-tuned-malloc"]
            extra.append(f"| {TITLES[w]} | {row['threads']} | {fmt_side(a)} | "
                         f"{fmt_side(c)} | {c['median'] / a['median']:.2f}× "
                         f"({c['min'] / a['min']:.2f}×) |")
    for without, withit, text in ALLOCATOR_TABLES:
        rows = []
        for row in train["rows"]:
            s = row["sides"]
            if without in s and withit in s:
                a, a0, b, b1 = s["prelude"], s[without], s["pytorch"], s[withit]
                rows.append(
                    f"| {TITLES[row['workload']]} | {row['threads']} | {fmt_side(a0)} | {fmt_side(a)} | "
                    f"{a0['median'] / a['median']:.2f}× | {fmt_side(b)} | {fmt_side(b1)} | "
                    f"{b['median'] / b1['median']:.2f}× | {b['median'] / a0['median']:.2f}× | "
                    f"**{b['median'] / a['median']:.2f}×** | {b1['median'] / a['median']:.2f}× |")
        if rows:
            out.append("\n" + text + " Each side without and with it, and PyTorch ÷ prelude without it on "
                       "either side, as shipped (prelude with, PyTorch without), and with it on both — the "
                       "last is what is language, the difference what is allocator.\n")
            out.append("| workload | threads | prelude without | prelude with | gain | PyTorch without | "
                       "PyTorch with | gain | ratio, neither | ratio, as shipped | ratio, both |")
            out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            out.extend(rows)
    if extra:
        out.append("\nThe same, with PyTorch given the malloc settings the prelude applies at start-up "
                   "(`MALLOC_MMAP_THRESHOLD_`, `MALLOC_MMAP_MAX_`, `MALLOC_TRIM_THRESHOLD_`, `MALLOC_TOP_PAD_`): "
                   "what is left of the lead once both sides avoid the per-step mmap/munmap.\n")
        out.append("| workload | threads | prelude min / median | PyTorch (tuned malloc) min / median | ratio (min) |")
        out.append("| --- | ---: | ---: | ---: | ---: |")
        out.extend(extra)
    loads = [v for r in train["rows"] for s in r["sides"].values() for v in s["load1"]]
    if loads:
        out.append(f"\n1-minute load average at the start of the runs: {min(loads):.2f}–{max(loads):.2f}.")
    return out


def kernel_section(k):
    names = [n for n in KERNEL_NAMES if n in k["kernels"]]
    ks = k["kernels"]
    fresh = any("start" in r for r in ks.values())
    when = f"{k['started'][:10]}, " if "started" in k else ""
    out = [f"## Kernels, through jupyter_client ({when}medians of {k['reps']}, "
           + (f"fresh kernels: {k['starts']})\n" if fresh else "in one kernel)\n")]
    if "started" in k:
        lb, la = k["load_before"], k["load_after"]
        out.append(f"Measured {k['started']} – {k['ended'][-9:]}; 1-minute load average {lb[0]:.2f} before, "
                   f"{la[0]:.2f} after.\n")
    alternated = [n for n in names if "alternated_with" in ks[n]]
    out.append("A cell's time runs from sending `execute_request` to the iopub `status: idle` that ends "
               "it (everything shown). Min in brackets."
               + (" The kernels were alive together and each repetition ran the cell in every one of "
                  "them in turn (`kernels.py --alternate`), so drift over the run reaches them alike."
                  if alternated else "") + "\n")
    out.append("| measure | " + " | ".join(KERNEL_NAMES[n] for n in names) + " |")
    out.append("| --- |" + " ---: |" * len(names))

    def row(label, key):
        cells = []
        for n in names:
            v = ks[n].get(key)
            cells.append(f"{fmt_s(v['median'])} ({fmt_s(v['min'])})" if v else "–")
        out.append(f"| {label} | " + " | ".join(cells) + " |")

    row("start → `kernel_info_reply`", "start")
    row("first tch result in a fresh kernel (start included)", "first_tch")
    row("trivial cell `1 + 1`", "trivial")
    row("small tch cell (64×64 randn, matmul, sum)", "tch_cell")
    if alternated:
        first = ks[alternated[0]]["alternated_with"][0]
        for label, key in (("trivial cell", "trivial"), ("small tch cell", "tch_cell")):
            out.append(f"| … {label} ÷ {first}'s | " + " | ".join(
                f"{ks[n][f'ratio_to_{first}'][key]:.2f}×" if f"ratio_to_{first}" in ks[n] else "–"
                for n in names) + " |")
    row("completion request", "complete")
    out.append("| … the kernel's first completion request | " + " | ".join(
        fmt_s(ks[n]["complete_first"]) if "complete_first" in ks[n] else "–" for n in names) + " |")
    out.append("| completion matches | " + " | ".join(str(ks[n].get("complete_matches", "–")) for n in names) + " |")
    row("first completion of each fresh kernel", "first_complete")
    out.append("| … shown by JupyterLab (answered in < 1 s with the expected item), of the fresh kernels | "
               + " | ".join(f"{ks[n]['first_complete_shown']} of {k['starts']}" if "first_complete_shown" in ks[n]
                            else "–" for n in names) + " |")
    for label, key in (("fresh kernel's memory before its first completion", "mem_before_completion"),
                       ("… 30 s after it", "mem_after_completion")):
        out.append(f"| {label} | " + " | ".join(
            f"{ks[n][key]['median']:.0f} MiB" if key in ks[n] else "–" for n in names) + " |")

    def mem(label, f):
        out.append(f"| {label} | " + " | ".join(f(ks[n]) for n in names) + " |")

    mem("memory idle, tch/torch loaded (kernel + evaluation process)",
        lambda r: f"{r['mem_idle']['before_completions_mib']:.0f} MiB"
        if "before_completions_mib" in r.get("mem_idle", {}) else "–")
    mem("… after the completion requests",
        lambda r: f"{r['mem_idle']['main_mib']:.0f} MiB" if "mem_idle" in r else "–")
    mem("memory peak during the CIFAR cell (kernel + evaluation process)",
        lambda r: f"{r['mem_cifar']['peak_main_mib']:.0f} MiB" if "mem_cifar" in r else "–")
    mem("… plus the cell's compiler processes at their peak",
        lambda r: f"{r['mem_cifar']['peak_compiler_mib']:.0f} MiB" if "mem_cifar" in r else "–")
    mem("CIFAR cell (3000 steps, batch 4, 1 thread), compile included",
        lambda r: fmt_s(r["mem_cifar"]["cell_seconds"]) if "mem_cifar" in r else "–")
    mem("… its training loop alone, timed inside the cell",
        lambda r: fmt_s(r["mem_cifar"].get("loop_seconds")) if "mem_cifar" in r else "–")
    # A measure this run did not take (kernels.py gained it later) is left out, not shown as dashes.
    out = [line for line in out if not (line.startswith("| ") and line.endswith(" |") and all(
        cell.strip() == "–" for cell in line[2:-2].split(" | ")[1:]))]
    if "tchbook" in ks and "evcxr" in ks:
        a, b = ks["tchbook"]["trivial"]["median"], ks["evcxr"]["trivial"]["median"]
        out.append(f"\nGoal, trivial cell ≤ ½ evcxr's: tchbook {fmt_s(a)} vs evcxr {fmt_s(b)} = "
                   f"{a / b:.2f} of evcxr's — {'met' if a <= b / 2 else '**missed**'}.")
    if "tchbook" in ks:
        t = ks["tchbook"]
        targets = [(label, t[key]["median"], goal, "s") for label, key, goal in (
            ("trivial cell", "trivial", 0.08), ("small tch cell", "tch_cell", 0.12),
            ("first tch result, fresh kernel", "first_tch", 3.0)) if key in t]
        if "before_completions_mib" in t.get("mem_idle", {}):
            targets.append(("idle memory", t["mem_idle"]["before_completions_mib"], 400, "MiB"))
        out.append("\nTargets for tchbook (medians on a quiet machine): " + "; ".join(
            f"{label} {fmt_s(value)} (target ≤ {fmt_s(goal)}: {'met' if value <= goal else '**missed**'})"
            if unit == "s" else
            f"{label} {value:.0f} {unit} (target ≤ {goal:g} {unit}: {'met' if value <= goal else '**missed**'})"
            for label, value, goal, unit in targets) + ".")
        if "floor" in t:
            out.extend(floor_section(t))
    return out


def floor_section(t):
    """The floor under tchbook's cells (kernels.py via floor.py), beside the kernel's own times."""
    f = t["floor"]
    ms = lambda v: f"{v * 1e6:.0f} µs" if v < 0.001 else f"{v * 1000:.1f} ms" if v < 0.01 else f"{v * 1000:.0f} ms"
    cell = lambda key: f"{ms(f[key]['median'])} ({ms(f[key]['min'])})"
    around = t["trivial"]["median"] - f["cell"]["median"] - f["dlopen"]["median"]
    # Whether the cell carried the variable store's code: older kernels loaded every variable
    # into every cell; a cell now loads only those it names.
    store = ("it loads that variable through the store" if "take_variable" in f.get("cell_source", "take_variable")
             else "it names no variable, so it has no store code")
    least = f["empty"]["median"] + f["dlopen"]["median"]
    out = ["", f"### The floor under a tchbook cell (same run, {f['empty']['n']} alternated runs each)\n",
           "floor.py replays the kernel's own rustc command (the cargo front end's record, linked through "
           "the dependencies' shared library as every cell is) on a copy of the kernel's build slot, right "
           "after the cells above. Median (min).\n",
           "| what | time |", "| --- | ---: |",
           f"| rustc: a one-function cdylib that names no dependency (rustc's start, one function, a link) | {cell('bare')} |",
           f"| rustc: an empty cell crate (the prelude's names in scope, the entry point only) | {cell('empty')} |",
           f"| … of which the link (against `-Z no-link`) | {cell('link')} |",
           f"| dlopen of that library beside the dependencies' | {cell('dlopen')} |",
           f"| rustc: the trivial cell's own crate (`1 + 1` as the kernel generates it in that notebook, "
           f"whose tch cell stored a variable: {store}) | {cell('cell')} |",
           f"| the trivial cell through the kernel (table above) | {ms(t['trivial']['median'])} |",
           f"| … so evcxr, the cargo front end, the kernel and the client around rustc | {ms(around)} |",
           "",
           f"The least a cell can cost here is the empty crate and its dlopen: {ms(least)}, "
           f"{'under' if least <= 0.08 else 'over'} the 80 ms trivial-cell target, before evcxr and the kernel "
           f"add their {ms(around)} and the cell its own code ({ms(f['cell']['median'] - f['empty']['median'])} "
           "for `1 + 1` and its display" + (", and the variable store" if "take_variable" in
                                             f.get("cell_source", "take_variable") else "") + ")."]
    return out


def dep_section(d):
    """`:dep` in the kernels next to `cargo build` (dep.py)."""
    sides = [n for n in ("tchbook", "evcxr", "cargo build")
             if any(n in row for row in d["crates"].values())]
    names = {"tchbook": "tchbook", "evcxr": "evcxr_jupyter 0.22", "cargo build": "`cargo build`"}
    lb, la = d["load_before"], d["load_after"]
    out = [f"## Adding a crate: `:dep` next to `cargo build` (warm: median of {d['reps']})\n",
           f"Measured {d['started']} – {d['ended'][-9:]}; 1-minute load average {lb[0]:.2f} before, {la[0]:.2f} "
           "after. Each crate's sources were downloaded before anything was timed. A kernel's time is its "
           "`:dep` cell (the `:dep` line and one expression using the crate), from sending it to its idle, in "
           "a fresh kernel; cargo's is `cargo build` (dev profile) of a package that prints the same "
           "expression. Cold: the first time (tchbook's build cache, evcxr's `EVCXR_TMPDIR` and cargo's "
           "target directory without the crate built); warm: again, in a new kernel, or a second package in "
           "the same target directory.\n",
           "| crate | | " + " | ".join(names[n] for n in sides) + " |",
           "| --- | --- |" + " ---: |" * len(sides)]
    for crate, row in d["crates"].items():
        for when in ("cold", "warm"):
            cells = []
            for n in sides:
                v = row.get(n, {}).get(when)
                cells.append("–" if v is None else fmt_s(v["median"] if isinstance(v, dict) else v))
            out.append(f"| `{crate}` | {when} | " + " | ".join(cells) + " |")
    return out


def first_build_section(d):
    """From a fresh machine to executed notebooks: the README's main command on a clean clone with
    nothing made before it (first_build.py)."""
    s = d["steps"]
    secs = lambda x: "–" if x is None else f"{x:.0f} s"
    torch = "downloaded" if d["pip_cache"] == "fresh" else "from pip's cache"
    lb = d["load_before"]
    out = [f"## From a fresh machine to executed notebooks ({d['started']}, commit {d['commit']})\n",
           f"`{d['command']}` (the README's main command) on a clean clone, with nothing made before it: a new "
           f"cargo home (every crate downloaded), target directory, Python environment (torch's wheel {torch}) "
           f"and build cache; {d['cores']} cores, 1-minute load average {lb[0]:.2f} before. Each step is timed "
           "from the lines the command prints; CPU time is that of every process it waited for.\n",
           "| step | wall time |", "| --- | ---: |",
           f"| the kernel's build (`cargo build --release`), the Python environment made beside it "
           f"(ready after {secs(s['venv_ready_s'])}) | {secs(s['kernel_build_s'])} |",
           f"| `tchbook install`: tch and the prelude built into the build cache"
           + (", the completion index beside them" if s["index_beside_build"] else ", then the completion index")
           + f" | {secs(s['install_s'])} |"]
    if s["template_built_s"] is not None:
        out.append(f"| … tch and the prelude built | {secs(s['template_built_s'])} |")
    if s["index_s"] is not None:
        failed = s["index_attempts_failed"]
        out.append(f"| … the completion index, {'beside the build' if s['index_beside_build'] else 'after it'}"
                   + (f" ({failed} attempt{'s' if failed > 1 else ''} beside it failed and {'were' if failed > 1 else 'was'} "
                      "made again)" if failed else "") + f" | {secs(s['index_s'])} |")
    each = ", ".join(f"{name.split('-')[0]} {t:.0f} s" for name, t in s["notebooks"].items())
    out.append(f"| the notebooks ({each}) | {secs(s['notebooks_s'])} |")
    out.append(f"| **in all** | **{secs(d['wall_s'])} ({d['wall_s'] / 60:.1f} minutes)**, {d['cpu_s']:.0f} s of CPU |")
    out.append(f"\nThe goal is 10 minutes on two cores: {'met' if d['wall_s'] <= 600 else 'missed'} "
               f"by {abs(600 - d['wall_s']):.0f} s. On {d['cores']} cores the CPU time alone needs at least "
               f"{d['cpu_s'] / d['cores']:.0f} s.")
    return out


def first_requests_section(k):
    """tchbook's first requests of fresh kernels (kernels.py's FIRST_REQUESTS), from any kernels.py
    run that measured them."""
    runs = [(n, r["first_requests"]) for n, r in k["kernels"].items() if "first_requests" in r]
    out = []
    for name, f in runs:
        if out:
            out.append("")
        out.append(f"## {name}: the first request of a fresh kernel ({f['starts']} fresh kernels each)\n")
        if "started" in k:
            lb, la = k["load_before"], k["load_after"]
            out.append(f"Measured {k['started']} – {k['ended'][-9:]}; 1-minute load average {lb[0]:.2f} before, "
                       f"{la[0]:.2f} after. Each completion is the very first request of its kernel; "
                       "JupyterLab shows a reply that comes within its 1 s provider timeout.\n")
        out.append("| first request | code | latency, median (max) | matches | shown by JupyterLab |")
        out.append("| --- | --- | ---: | ---: | ---: |")
        for kind, r in f["kinds"].items():
            code = r["code"].replace("\n", "⏎ ").replace("|", "\\|")
            out.append(f"| {kind} | `{code}` | {fmt_s(r['latency']['median'])} ({fmt_s(max(r['latency']['all']))}) | "
                       f"{round(sum(r['matches']) / len(r['matches']))} | {r['shown']} of {f['starts']} |")
        out.append(f"| documentation of the highlighted match (`{f['inspect_code']}` after a Tab) | | "
                   f"{fmt_s(f['inspect']['median'])} ({fmt_s(max(f['inspect']['all']))}) | | "
                   f"found {f['inspect_found']} of {f['starts']} |")
        pss = f["pss_after_tab_and_docs_mib"]
        out.append(f"\nThe kernel's process tree 20 s after that Tab and its documentation: {pss['median']:.0f} MiB PSS "
                   f"(median; max {max(pss['all']):.0f} MiB): " + ", ".join(
                       f"{p['name']} {p['pss_mib']:.0f} MiB" for p in f["pss_processes"]) + ".")
    return out


def replace_device(out: Path, device: str, train_files: list[Path], notes: Path | None):
    """Swaps DEVICE's training tables in `out` for those rendered from `train_files`, in the place the
    old ones held, or before the first kernels table (taking the place of the note that says no such
    table exists yet) where there were none; and the notes for `notes`, which speak of those tables."""
    if not out.exists():
        raise SystemExit(f"bench/report.py: --replace-device rewrites an existing report, and {out} does not exist; "
                         "write it first without --replace-device")
    trains = sorted((t for t in (json.loads(f.read_text()) for f in train_files if f.exists())
                     if t["device"] == device), key=lambda t: t.get("started", ""))
    if not trains:
        raise SystemExit(f"bench/report.py: none of the --train files is a {device} run, so nothing would replace "
                         f"the {device} tables in {out}")
    new = []
    for train in trains:
        new.extend(train_section(train, dated=len(trains) > 1))
        new.append("")
    text = out.read_text()
    sections = re.split(r"(?m)^(?=## )", text)
    heading = f"## Training loops ({device}"
    mine = [i for i, s in enumerate(sections) if s.startswith(heading)]
    if mine:
        at = mine[0]
        kept = [s for i, s in enumerate(sections) if i not in mine]
    else:
        kept = [re.sub(re.escape(NO_CUDA_TABLE) + r"\n\n?", "", s) if device == "cuda" else s for s in sections]
        at = next((i for i, s in enumerate(kept) if s.startswith("## Kernels")), len(kept))
    kept.insert(at, "\n".join(new) + "\n")
    if notes and notes.exists():
        text = notes.read_text().rstrip() + "\n"
        first = text.split("\n", 1)[0]
        kept = [s for s in kept if not s.startswith(first + "\n")] + [text]
    out.write_text("".join(kept))
    print(f"rewrote the {device} tables in {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=Path, nargs="*", default=[])
    p.add_argument("--kernels", type=Path)
    p.add_argument("--kernels-later", type=Path, nargs="*", default=[],
                   help="later kernels.py runs (say, tchbook alone after a change), each a table of its own "
                        "after --kernels's")
    p.add_argument("--first-requests", type=Path,
                   help="kernels.py --first-requests JSON: tchbook's first requests of fresh kernels")
    p.add_argument("--dep", type=Path, help="dep.py JSON: `:dep` next to `cargo build`")
    p.add_argument("--first-build", type=Path,
                   help="first_build.py JSON: the main command from a fresh machine to executed notebooks")
    p.add_argument("--notes", type=Path, help="markdown appended as the Notes section")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--command", default="scripts/bench")
    p.add_argument("--load", default="", help="load averages seen before/after, for the header")
    p.add_argument("--replace-device", metavar="DEVICE",
                   help="rewrite only DEVICE's training tables (from --train) in the existing --out")
    args = p.parse_args()
    if args.replace_device:
        replace_device(args.out, args.replace_device, args.train, args.notes)
        return

    kernels = json.loads(args.kernels.read_text()) if args.kernels and args.kernels.exists() else None
    m = machine(kernels.get("evcxr_version") if kernels else None)
    if kernels and "tchbook" in kernels["kernels"]:
        info = kernels["kernels"]["tchbook"].get("kernel_info") or {}
        m["tchbook"] = f"{info.get('implementation', 'tchbook')} {info.get('implementation_version', '')}".strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    lines = ["# tchbook benchmarks\n",
             f"Written by `{args.command}` on {now} (commit {m['commit']}). Benchmarks, not tests: "
             "the numbers depend on the machine and on whatever else runs on it.\n",
             "| machine | |", "| --- | --- |",
             f"| CPU | {m['cpu']}, {m['cores']} cores |",
             f"| memory | {m['memory']} |",
             f"| GPU | {m['gpu']} |",
             f"| OS | {m['os']} |",
             f"| rustc | {m['rustc']} |",
             f"| tch | {m['tch']} (libtorch from the torch wheel) |",
             f"| torch | {m['torch']} (Python {m['python']}) |",
             f"| evcxr_jupyter | {m['evcxr']} |"]
    if "tchbook" in m:
        lines.append(f"| tchbook | {m['tchbook']} |")
    if args.load:
        lines.append(f"| load average | {args.load} |")
    lines.append("")
    # CPU before CUDA, and each device's runs oldest first, however the files were named or listed.
    trains = sorted((json.loads(t.read_text()) for t in args.train if t.exists()),
                    key=lambda t: (t["device"] != "cpu", t["device"], t.get("started", "")))
    devices = {t["device"] for t in trains}
    for train in trains:
        dated = sum(t["device"] == train["device"] for t in trains) > 1
        lines.extend(train_section(train, dated))
        lines.append("")
    if kernels:
        lines.extend(kernel_section(kernels))
        lines.append("")
    for later in args.kernels_later:
        if later.exists():
            lines.extend(kernel_section(json.loads(later.read_text())))
            lines.append("")
    firsts = json.loads(args.first_requests.read_text()) \
        if args.first_requests and args.first_requests.exists() else kernels
    if firsts and any("first_requests" in r for r in firsts["kernels"].values()):
        lines.extend(first_requests_section(firsts))
        lines.append("")
    if args.dep and args.dep.exists():
        lines.extend(dep_section(json.loads(args.dep.read_text())))
        lines.append("")
    if args.first_build and args.first_build.exists():
        lines.extend(first_build_section(json.loads(args.first_build.read_text())))
        lines.append("")
    # A CUDA table measured elsewhere (scripts/gpu-check --apply) names its machine in its note.
    if m["gpu"] == "none" and "cuda" not in devices:
        lines.append(NO_CUDA_TABLE + "\n")
    if args.notes and args.notes.exists():
        lines.append(args.notes.read_text().rstrip() + "\n")
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
