"""The training tables of bench/RESULTS.md (bench/report.py): each workload's prelude and PyTorch
sides from train.py's JSON, min / median and their ratio against the workload's goal; and how a
time reads in every table of the report (`fmt_s`)."""

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
