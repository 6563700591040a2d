"""What a `%%rust` cell costs over the same cell in the native kernel, side by side in one run.

Two kernels run at once, both on the same tchbook binary and build cache: the native kernel
(`tchbook kernel`, as JupyterLab starts it) and an ipykernel with `%load_ext tchbook` (the bridge,
python/), whose Rust kernel is that binary too. Each repetition sends the same Rust cell to both,
alternating which goes first, and times it as a front end sees it: from sending execute_request
to the kernel's `idle` on iopub, every output received. Cells:

- `trivial`: `1 + 1`;
- `live-plot`: a LossPlot redrawn while the cell runs (80 points, 10 ms apart: the plot's
  display_data and its update_display_data messages, PNGs included, all forwarded).

Beside them, in the same alternation, a Python `1 + 1` on the bridge's ipykernel: what ipykernel
itself costs per cell, part of the difference before the bridge forwards anything.

    python bench/hosted_overhead.py [--binary target/release/tchbook] [--reps 15] [--out FILE]

Prints one JSON line per cell kind (medians and minimums, the median of the paired differences,
the ratio of medians, the messages per cell on each side) and writes them all to --out. The binary is copied to a temporary folder first,
so a rebuild during the run cannot pull it away from the kernels.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

ROOT = Path(__file__).resolve().parent.parent
CELLS = {
    "trivial": "1 + 1",
    "live-plot": (
        'let mut plot = LossPlot::new("bench");\n'
        "for step in 1..=80 {\n"
        "    plot.push(step as f64, 1.0 / step as f64);\n"
        "    std::thread::sleep(std::time::Duration::from_millis(10));\n"
        "}\n"
        "plot.finish();"
    ),
}


def timed(kc, code: str, timeout: float = 600) -> tuple[float, int, str]:
    """Seconds from execute_request to idle, iopub messages between, the reply's status."""
    start = time.perf_counter()
    msg_id = kc.execute(code, allow_stdin=False)
    count = 0
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        count += 1
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            elapsed = time.perf_counter() - start
            break
    reply = kc.get_shell_msg(timeout=timeout)
    return elapsed, count, reply["content"]["status"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    parser.add_argument("--binary", default=str(target / "release" / "tchbook"))
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="tchbook-hosted-bench-"))
    binary = scratch / "tchbook"
    shutil.copy2(args.binary, binary)
    specs = scratch / "jupyter-path" / "kernels" / "tchbook-bench"
    specs.mkdir(parents=True)
    (specs / "kernel.json").write_text(json.dumps({
        "argv": [str(binary), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "tchbook (bench)", "language": "rust", "interrupt_mode": "message"}))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in [str(scratch / "jupyter-path"), os.environ.get("JUPYTER_PATH", "")] if p)
    env = dict(os.environ, TCHBOOK_BIN=str(binary),
               PYTHONPATH=os.pathsep.join(p for p in [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")] if p))

    native = start_new_kernel(kernel_name="tchbook-bench", env=env)
    bridged = start_new_kernel(kernel_name="python3", env=env)
    kernels = {"native": native[1], "bridge": bridged[1]}
    try:
        assert timed(kernels["bridge"], "%load_ext tchbook")[2] == "ok"
        # Warm both: the first cell of a kernel waits for the prelude to load.
        for code in CELLS.values():
            assert timed(kernels["native"], code)[2] == "ok"
            assert timed(kernels["bridge"], "%%rust\n" + code)[2] == "ok"
        results = []
        for name, code in CELLS.items():
            # "python": a Python `1 + 1` on the bridge's ipykernel, what ipykernel itself costs a
            # cell (its share of the difference, before the bridge forwards anything).
            times = {"native": [], "bridge": [], "python": []}
            messages = {}
            cells = {"native": code, "bridge": "%%rust\n" + code, "python": "1 + 1"}
            for rep in range(args.reps):
                order = ["native", "bridge", "python"] if rep % 2 == 0 else ["python", "bridge", "native"]
                for side in order:
                    elapsed, count, status = timed(kernels["native" if side == "native" else "bridge"], cells[side])
                    assert status == "ok", f"{side} {name}: {status}"
                    times[side].append(elapsed)
                    messages[side] = count
            native_s = statistics.median(times["native"])
            bridge_s = statistics.median(times["bridge"])
            diffs = [b - a for a, b in zip(times["native"], times["bridge"])]
            result = {
                "cell": name, "reps": args.reps,
                "native_median_s": round(native_s, 4), "bridge_median_s": round(bridge_s, 4),
                # The fastest runs: least disturbed by whatever else the machine runs.
                "native_min_s": round(min(times["native"]), 4), "bridge_min_s": round(min(times["bridge"]), 4),
                "overhead_median_s": round(statistics.median(diffs), 4),
                "ratio": round(bridge_s / native_s, 3),
                "python_cell_median_s": round(statistics.median(times["python"]), 4),
                "iopub_messages": messages, "load_average": os.getloadavg()[0],
            }
            results.append(result)
            print(json.dumps(result), flush=True)
        if args.out:
            args.out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        for km, kc in (native, bridged):
            kc.stop_channels()
            km.shutdown_kernel(now=False)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
