"""The kernel tables of bench/RESULTS.md (bench/report.py), from kernels.py's, floor.py's,
dep.py's and first_build.py's JSON: the kernels side by side, the floor under a cell, `:dep`
cells, a fresh machine's first build and a fresh kernel's first requests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_training import fmt_s  # noqa: E402

KERNEL_NAMES = {"tchbook-baseline": "tchbook, the baseline build (`--tchbook-baseline`)", "tchbook": "tchbook",
                "evcxr": "evcxr_jupyter 0.22", "ipykernel": "ipykernel (PyTorch)"}


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
