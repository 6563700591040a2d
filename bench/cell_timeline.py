"""Where a Rust kernel's cell time goes: a timeline of the processes a cell spawns.

Starts a kernel as kernels.py does, runs its setup, then runs a cell a few times under
`strace -f -e trace=execve,exit_group` attached to the kernel's process tree, and prints, per run,
when each spawned program (cargo, rustc, the linker, ...) started and ended relative to sending
execute_request, plus the time before the first spawn and after the last exit (the kernel's own
work: preparing the code, loading the library, sending the result).

    python bench/cell_timeline.py --kernel tchbook --code '1 + 1' [--runs 3]
    python bench/cell_timeline.py --kernel evcxr --code '1 + 1'
    python bench/cell_timeline.py --kernel tchbook --first
"""

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_session as ks  # noqa: E402
from process_tree import process_tree  # noqa: E402

LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\d+\.\d+) (.*)$")


def parse(trace_file, t_send_wall):
    """(name, start, end) relative to t_send for each process exec'd after t_send."""
    procs = {}
    for line in Path(trace_file).read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if not m:
            continue
        pid, t, rest = int(m.group(1)), float(m.group(2)), m.group(3)
        if rest.startswith("execve(") and "= 0" in rest.split(")")[-1] + rest[-6:]:
            name = Path(rest.split('"')[1]).name
            procs.setdefault(pid, {"name": name, "start": t, "end": None})
            procs[pid]["name"] = name
        elif rest.startswith("+++ exited") and pid in procs:
            procs[pid]["end"] = t
    rows = [(p["name"], p["start"] - t_send_wall, (p["end"] or p["start"]) - t_send_wall)
            for p in procs.values() if p["start"] >= t_send_wall]
    return sorted(rows, key=lambda r: r[1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", choices=["tchbook", "evcxr"], required=True)
    p.add_argument("--code", default="1 + 1")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--first", action="store_true",
                   help="trace the first tch cell of a fresh kernel instead of --code")
    p.add_argument("--tchbook", type=Path, default=ks.ROOT / "target" / "release" / "tchbook")
    p.add_argument("--evcxr", type=Path, default=Path.home() / ".cache/tchbook/evcxr/bin/evcxr_jupyter")
    p.add_argument("--evcxr-tmpdir", type=Path,
                   default=Path.home() / ".cache" / "tchbook" / "bench" / "evcxr-tmpdir")
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args()
    args.kernels = [args.kernel]

    with tempfile.TemporaryDirectory(prefix="tchbook-timeline-") as tmpname:
        tmp = Path(tmpname)
        runtime = tmp / "runtime"
        runtime.mkdir()
        kernels, ksm = ks.kernel_specs(args, tmp)
        k = kernels[args.kernel]
        s = ks.Session(ksm, k, runtime)
        try:
            s.start(args.timeout)
            if args.first:
                # The fresh kernel's first cell (evcxr's carries `:dep tch`), traced as it is.
                args.code, args.runs = k.first_tch, 1
            else:
                if k.setup:
                    s.execute(k.setup, args.timeout)
                s.execute(args.code, args.timeout)
            for run in range(args.runs):
                trace = tmp / f"trace-{run}"
                pids = process_tree(s.pid)
                st = subprocess.Popen(["strace", "-f", "-ttt", "-e", "trace=execve,exit_group",
                                       "-o", str(trace)] + sum((["-p", str(x)] for x in pids), []),
                                      stderr=subprocess.DEVNULL)
                time.sleep(1.0)  # strace attaches asynchronously
                t_send = time.time()
                idle, reply, _, _ = s.execute(args.code, args.timeout)
                st.terminate()
                st.wait()
                rows = parse(trace, t_send)
                print(f"run {run + 1}: idle at {idle * 1000:.0f} ms (reply {reply * 1000:.0f} ms)")
                for name, a, b in rows:
                    print(f"  {a * 1000:7.0f} – {b * 1000:7.0f} ms  {b * 1000 - a * 1000:6.0f} ms  {name}")
                if rows:
                    print(f"  before the first spawn {rows[0][1] * 1000:.0f} ms; after the last exit "
                          f"{(idle - max(r[2] for r in rows)) * 1000:.0f} ms")
        finally:
            s.stop()


if __name__ == "__main__":
    main()
