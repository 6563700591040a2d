"""tchbook's own latency and memory numbers (a quick check of the kernel alone; the full
side-by-side comparison is bench/kernels.py).

    python bench/kernel/kernel_latency.py [--binary target/release/tchbook] [--reps 20]

Measures, with a warm build cache (run `tchbook install` first):
- start -> kernel_info_reply;
- first tch result in a fresh kernel: start -> the result of a small tch cell;
- trivial cell `1 + 1`, median of --reps (send execute_request -> iopub idle);
- small tch cell, median of --reps;
- idle memory: RSS of the kernel plus its evaluation process, after the tch cells.
"""

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[2]
TCH_CELL = "let t = Tensor::ones(&[64, 64], (Kind::Float, Device::Cpu));\n(&t + 1.0).sum(Kind::Float).double_value(&[])"


def rss_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            found.append(int(child))
            found.extend(descendants(int(child)))
    return found


def run_cell(client, code, timeout=300):
    start = time.perf_counter()
    msg_id = client.execute(code)
    result = None
    status = None
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "execute_result":
            result = msg["content"]["data"].get("text/plain")
        if kind == "error":
            status = "error: " + msg["content"]["evalue"]
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            break
    elapsed = time.perf_counter() - start
    reply = client.get_shell_msg(timeout=timeout)
    status = status or reply["content"]["status"]
    return elapsed, result, status


def start(ksm, name):
    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
    t0 = time.perf_counter()
    km.start_kernel()
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    return km, client, time.perf_counter() - t0, t0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / "target" / "release" / "tchbook"))
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()

    spec_root = Path(tempfile.mkdtemp(prefix="tchbook-bench-"))
    spec = spec_root / "kernels" / "tchbook-bench"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [args.binary, "kernel", "--connection-file", "{connection_file}"],
        "display_name": "tchbook (bench)", "language": "rust", "interrupt_mode": "message",
    }))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])

    results = {}
    # Fresh kernel: kernel_info, then the first tch result.
    km, client, info_s, t0 = start(ksm, "tchbook-bench")
    results["start_to_kernel_info_reply_s"] = round(info_s, 3)
    _, value, status = run_cell(client, TCH_CELL)
    results["first_tch_result_s"] = round(time.perf_counter() - t0, 3)
    assert status == "ok", status

    trivial = [run_cell(client, "1 + 1")[0] for _ in range(args.reps)]
    results["trivial_cell_median_s"] = round(statistics.median(trivial), 3)
    tch = [run_cell(client, TCH_CELL)[0] for _ in range(args.reps)]
    results["tch_cell_median_s"] = round(statistics.median(tch), 3)

    time.sleep(2)
    pid = km.provisioner.process.pid
    tree = [pid] + descendants(pid)
    results["idle_rss_mib"] = {
        "kernel": round(rss_kib(pid) / 1024, 1),
        "evaluation_process": round(sum(rss_kib(p) for p in tree[1:]) / 1024, 1),
    }
    results["idle_rss_mib"]["total"] = round(
        results["idle_rss_mib"]["kernel"] + results["idle_rss_mib"]["evaluation_process"], 1)
    client.stop_channels()
    km.shutdown_kernel(now=False)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
