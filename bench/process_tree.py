"""The memory of a kernel's process tree, from /proc: its RSS split into the kernel's own processes
and the compiler processes a Rust cell spawns, its PSS, and a sampler of their peaks while a cell
runs (for bench/kernels.py and bench/cell_timeline.py)."""

import os
import re
import threading
import time

COMPILER_NAMES = re.compile(r"^(cargo|rustc|cc|c\+\+|ld|ld\.lld|lld|mold|collect2|ld\.bfd|ld\.gold|rustup)$")


def _children_map():
    kids = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses; the fields after the last ')' are fixed.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def process_tree(pid):
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _status(pid):
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
    except OSError:
        return None
    return fields


def tree_memory(pid):
    """(kernel+eval MiB, compiler MiB, per-process list) of the tree's current VmRSS."""
    main = comp = 0.0
    procs = []
    for p in process_tree(pid):
        st = _status(p)
        if not st or "VmRSS" not in st:
            continue
        rss = int(st["VmRSS"].split()[0]) / 1024
        hwm = int(st.get("VmHWM", "0 kB").split()[0]) / 1024
        name = st.get("Name", "?")
        procs.append({"pid": p, "name": name, "rss_mib": round(rss, 1), "hwm_mib": round(hwm, 1)})
        if COMPILER_NAMES.match(name):
            comp += rss
        else:
            main += rss
    return main, comp, procs


def tree_pss(pid):
    """(MiB, per-process list) of the tree's proportional set size: shared pages (libtorch, the
    kernel binary mapped by several of its processes) counted once across the tree."""
    total = 0.0
    procs = []
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                kib = next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            argv = []
        # tchbook's processes are one binary in several roles: its first argument names the role.
        name = " ".join([os.path.basename(argv[0])] + argv[1:2]) if argv else (_status(p) or {}).get("Name", "?")
        procs.append({"pid": p, "name": name, "pss_mib": round(kib / 1024, 1)})
        total += kib / 1024
    return total, procs


class Sampler(threading.Thread):
    def __init__(self, pid, period=0.02):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak_main = self.peak_comp = self.peak_total = 0.0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            main, comp, _ = tree_memory(self.pid)
            self.peak_main = max(self.peak_main, main)
            self.peak_comp = max(self.peak_comp, comp)
            self.peak_total = max(self.peak_total, main + comp)
            time.sleep(self.period)
