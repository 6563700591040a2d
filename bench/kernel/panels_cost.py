"""What JupyterLab's panels cost a cell: the same cell with a panel off and on, alternated in one
kernel, median of --reps each.

    python bench/kernel/panels_cost.py [--panel variables|gpus] [--binary target/release/tchbook] [--reps N]

`--panel variables` (the default), JupyterLab's Variables panel: "on" does what JupyterLab does
with the debugger on, an `inspectVariables` debug_request on control after every iopub message
of the cell (busy, execute_input, stream, idle), each waited for. Two times per cell, from
execute_request: to the cell's `idle` (what the notebook shows), and to the reply of the
`inspectVariables` sent after `idle` (the panel showing the cell's variables). The notebook holds
a few tensors, a var store, a Vec and numbers, as a tutorial's does.

`--panel gpus`, tchbook's GPU panel (labextension/) asking every `--every` seconds (1; the panel
itself asks every 2): a client of its own sends `usage_request` on control, as a front end does,
each reply waited for, all through the "on" blocks of cells and never in the "off" ones; blocks of
BLOCK cells alternate, --reps of each. Time from execute_request to `idle`, for the short cell and
for a cell of about a second of tensor arithmetic, as median and mean (a poll lands in some cells
only: the mean is what polling costs on average). Also the CPU time the kernel's processes spend
on one reply, from 50 asked back to back between cells. The kernel's NVML is the driver's where there is one,
else the stand-in (tests/nvml/, one scripted GPU): then the time is the kernel's whole path
(control, the evaluation process's socket, the prelude, each NVML call) with the stand-in's
answers in place of the driver's.

Run `tchbook install` first (a warm build cache).
"""

import ctypes.util
import os
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import zmq

import benchkernel

ROOT = Path(__file__).resolve().parents[2]

SETUP = """let x = Tensor::randn([64, 10], (Kind::Float, Device::Cpu));
let images = Tensor::zeros([256, 3, 32, 32], (Kind::Float, Device::Cpu));
let labels = Tensor::zeros([256], (Kind::Int64, Device::Cpu));
let vs = nn::VarStore::new(Device::Cpu);
let net = Net::new(&vs.root());
let losses: Vec<f64> = (0..100).map(|i| 1.0 / (i as f64 + 1.0)).collect();
let lr = 0.01;
let epochs = 2;"""
CELL = 'println!("step");\nlet y = (&x * 2.0).sum(Kind::Float);'
# Cells per block of the GPU panel's comparison.
BLOCK = 5
# About a second of arithmetic on two cores.
COMPUTE = """let big = Tensor::randn([384, 384], (Kind::Float, Device::Cpu));
let mut acc = 0.0;
for _ in 0..200 { acc += big.matmul(&big).sum(Kind::Float).double_value(&[]); }
acc"""


def debug(client, seq, command, arguments=None):
    msg = client.session.msg(
        "debug_request",
        {"type": "request", "seq": seq, "command": command, "arguments": arguments or {}},
    )
    client.control_channel.send(msg)
    while True:
        reply = client.get_control_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"]


def run(client, code, panel, seq):
    start = time.perf_counter()
    msg_id = client.execute(code)
    idle = None
    while idle is None:
        msg = client.get_iopub_msg(timeout=300)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle = time.perf_counter() - start
        if panel:
            seq += 1
            reply = debug(client, seq, "inspectVariables")
            assert reply["success"], reply
    shown = time.perf_counter() - start
    reply = client.get_shell_msg(timeout=300)
    assert reply["content"]["status"] == "ok", reply["content"]
    return idle, shown, seq


class ControlSocket:
    """A front end's control connection to the kernel: a plain pyzmq DEALER with the kernel's
    session (jupyter_client's blocking client loses replies when used from a second thread)."""

    def __init__(self, km):
        info = km.get_connection_info()
        self.session = km.session
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        self.socket.connect(f"{info['transport']}://{info['ip']}:{info['control_port']}")

    def ask_usage(self) -> dict:
        msg = self.session.send(self.socket, "usage_request", {})
        while True:
            if not self.socket.poll(60_000):
                raise TimeoutError("no usage_reply in 60 s")
            _, parts = self.session.feed_identities(self.socket.recv_multipart())
            reply = self.session.deserialize(parts)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]

    def close(self):
        self.socket.close(linger=0)


class Poller(threading.Thread):
    """A GPU panel: usage_request on control from a client of its own every `every` s while
    `asking` is set, each reply waited for, with its round trip kept. It runs from the first cell
    to the last, so its requests fall anywhere in a cell, as a panel's do."""

    def __init__(self, km, every: float):
        super().__init__(daemon=True)
        self.km = km
        self.every = every
        self.asking = threading.Event()
        self.stopping = threading.Event()
        self.round_trips = []
        self.last = None

    def run(self):
        control = ControlSocket(self.km)
        try:
            while not self.stopping.is_set():
                if self.asking.wait(0.05):
                    start = time.perf_counter()
                    self.last = control.ask_usage()
                    self.round_trips.append(time.perf_counter() - start)
                    self.stopping.wait(self.every)
        finally:
            control.close()

    def stop(self):
        self.stopping.set()
        self.join()


def nvml_env() -> dict:
    """The stand-in NVML's environment where the machine has no driver's, else nothing."""
    if ctypes.util.find_library("nvidia-ml"):
        return {}
    sys.path.insert(0, str(ROOT / "tests"))
    from nvml_stand_in import StandIn, gpu_line

    nvml = StandIn(Path(tempfile.mkdtemp(prefix="tchbook-bench-nvml-")))
    nvml.script(gpu_line(3, 42))
    return nvml.env()


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a process and every process below it."""
    import psutil

    root = psutil.Process(pid)
    return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])


def gpus(args):
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    env = nvml_env()
    km, client = benchkernel.start(args.binary, env=env)
    poller = Poller(km, args.every)
    poller.start()
    try:
        run(client, SETUP, False, 0)
        for _ in range(3):  # warm: the cells' builds are replayed from here on
            run(client, CELL, False, 0)
            run(client, COMPUTE, False, 0)
        times = {(cell, on): [] for cell in ("short", "compute") for on in (False, True)}
        # Blocks of cells with the panel off, then on (asking all through the block, as a panel
        # does, whatever the cells do), alternated.
        for _ in range(args.reps):
            for on in (False, True):
                (poller.asking.set if on else poller.asking.clear)()
                for cell, code in (("short", CELL), ("compute", COMPUTE)):
                    for _ in range(BLOCK):
                        times[(cell, on)].append(run(client, code, False, 0)[0])
        poller.stop()
        # What one reply costs the kernel's processes, asked back to back while no cell runs.
        pid = km.provisioner.process.pid
        control = ControlSocket(km)
        before = tree_cpu_s(pid)
        for _ in range(50):
            control.ask_usage()
        cpu_ms = 1000 * (tree_cpu_s(pid) - before) / 50
        control.close()
        # Other work on the machine shows here (the load average over the last minute).
        result = {"panel": "gpus", "started": started, "load_before_after": [load_before, os.getloadavg()[0]],
                  "blocks": args.reps, "cells_per_block": BLOCK, "every_s": args.every,
                  "nvml": "stand-in" if env else "driver", "polls": len(poller.round_trips),
                  "usage_reply_median_ms": round(1000 * statistics.median(poller.round_trips), 1),
                  "kernel_cpu_per_reply_ms": round(cpu_ms, 2),
                  "gpus": (poller.last or {}).get("gpus")}
        for cell in ("short", "compute"):
            summary = {}
            for stat in ("median", "mean"):
                off = 1000 * getattr(statistics, stat)(times[(cell, False)])
                on = 1000 * getattr(statistics, stat)(times[(cell, True)])
                summary.update({f"off_{stat}_ms": round(off, 1), f"on_{stat}_ms": round(on, 1),
                                f"on_over_off_{stat}": round(on / off, 3)})
            for on in (False, True):
                summary[f"{'on' if on else 'off'}_all_ms"] = [round(1000 * t, 1) for t in times[(cell, on)]]
            result[cell] = summary
        print(json.dumps(result, indent=2))
    finally:
        if poller.is_alive():
            poller.stop()
        client.stop_channels()
        km.shutdown_kernel(now=True)


def variables(args):
    km, client = benchkernel.start(args.binary, {"debugger": True})
    try:
        seq = 0
        run(client, SETUP, False, seq)
        for _ in range(3):  # warm: the cell's build is replayed from here on
            run(client, CELL, False, seq)
        seq += 1
        debug(client, seq, "initialize", {"clientID": "bench", "adapterID": "tchbook"})
        times = {False: ([], []), True: ([], [])}
        for _ in range(args.reps):
            for panel in (False, True):
                idle, shown, seq = run(client, CELL, panel, seq)
                times[panel][0].append(idle)
                times[panel][1].append(shown)
        seq += 1
        variables = debug(client, seq, "inspectVariables")["body"]["variables"]
        result = {
            "reps": args.reps,
            "variables": len(variables),
            "off_idle_ms": 1000 * statistics.median(times[False][0]),
            "on_idle_ms": 1000 * statistics.median(times[True][0]),
            "on_panel_shown_ms": 1000 * statistics.median(times[True][1]),
        }
        print(json.dumps(result, indent=2))
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


def main():
    def more(parser):
        parser.add_argument("--panel", choices=["variables", "gpus"], default="variables")
        parser.add_argument("--every", type=float, default=1.0, help="seconds between GPU polls")

    # --reps: cells per side (variables), or blocks of cells per side (gpus).
    args = benchkernel.arguments(more)
    (gpus if args.panel == "gpus" else variables)(args)


if __name__ == "__main__":
    main()
