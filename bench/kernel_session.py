"""Kernels under test for the benchmarks (bench/kernels.py and the scripts beside it): their specs
in a temporary kernels/ directory, and a started kernel (`Session`) driven through jupyter_client
with a poller over shell and iopub, timing each request to its reply and to the `idle` that ends it.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import zmq
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from process_tree import process_tree  # noqa: E402
ROOT = HERE.parent
CELLS = HERE / "cells"

TCH_DEP = ':dep tch = "=0.24.0"'
RUST_USE = "use tch::{Device, Kind, Tensor};"
RUST_TCH_CELL = (
    "let t = Tensor::randn([64, 64], (Kind::Float, Device::Cpu));\n"
    "t.matmul(&t).sum(Kind::Float).double_value(&[])"
)
PY_TCH_CELL = "t = torch.randn(64, 64)\nt.matmul(t).sum().item()"

# The Python kernel's CIFAR cell runs torch_loops.py's loop itself, so the memory row and the
# training table measure one and the same PyTorch code.
IPYKERNEL_CIFAR = """import sys
sys.dont_write_bytecode = True
sys.path.insert(0, {bench!r})
import torch, torch_loops
torch.set_num_threads(1)  # as in the 1-thread rows of the training table
seconds, steps, loss = torch_loops.cifar(torch.device("cpu"), timed=True)
print(f"loop_seconds={{seconds}}")
"""


def log(*args):
    print("[kernels]", *args, file=sys.stderr, flush=True)


class Kernel:
    """One kernel under test: how to launch it and what its cells look like."""

    def __init__(self, name, argv, env, setup, first_tch, tch_cell, complete, cifar, language,
                 interrupt_mode="signal"):
        self.name = name
        self.interrupt_mode = interrupt_mode
        self.argv = argv
        self.env = env
        self.setup = setup  # run once in the latency kernel before anything is timed
        self.first_tch = first_tch  # the whole first cell of a fresh kernel
        self.tch_cell = tch_cell
        self.complete = complete  # (code, cursor_pos)
        self.cifar = cifar
        self.language = language


def environment_setting(text):
    """NAME=VALUE, for --baseline-env."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def tchbook_kernel(name, binary, env, tmp):
    """A tchbook binary's kernel, from the spec `tchbook install --prefix` writes for it."""
    prefix = tmp / f"{name}-prefix"
    log(f"{binary} install --prefix {prefix} (also pre-builds the prelude in the build cache)")
    subprocess.run([str(binary), "install", "--prefix", str(prefix)], check=True,
                   stdout=sys.stderr, env={**os.environ, **env})
    found = list(prefix.rglob("kernel.json"))
    if not found:
        raise SystemExit(f"{binary} install --prefix {prefix} wrote no kernel.json")
    spec = json.loads(found[0].read_text())
    return Kernel(
        name, spec["argv"], {**spec.get("env", {}), **env}, setup=None,
        first_tch=RUST_TCH_CELL, tch_cell=RUST_TCH_CELL,
        complete=("let z = Tensor::zer", len("let z = Tensor::zer")),
        cifar=(CELLS / "tchbook_cifar.rs").read_text(), language="rust",
        interrupt_mode=spec.get("interrupt_mode", "signal"))


def kernel_specs(args, tmp):
    """Builds the three kernels' specs in a temporary kernels/ directory."""
    kernels = {}
    py = sys.executable
    if "tchbook" in args.kernels:
        kernels["tchbook"] = tchbook_kernel("tchbook", args.tchbook, {}, tmp)
    if "tchbook-baseline" in args.kernels:
        # Another build of tchbook (say, the commit before a change) beside this one in the same
        # run. Its own build cache: the two binaries embed different prelude sources, and in one
        # cache each would find the other's template out of date and rebuild it.
        cache = Path.home() / ".cache" / "tchbook" / "bench" / "baseline-cache"
        kernels["tchbook-baseline"] = tchbook_kernel(
            "tchbook-baseline", args.tchbook_baseline,
            {"TCHBOOK_CACHE_DIR": str(cache), **dict(args.baseline_env)}, tmp)
    if "evcxr" in args.kernels:
        # evcxr builds cells with -Cprefer-dynamic and finds libstd-*.so through a relative
        # rpath that cargo computes for target/.../deps/ but that the uplifted copy one level
        # up, which evcxr loads, also carries. It resolves only when the build folder and the
        # toolchain share no directory but `/` (extra `..` at the root are harmless): with
        # EVCXR_TMPDIR under ~/.cache and rustup under ~/.rustup, every cell fails with
        # "dlopen failed". Putting the toolchain's library folder on the loader path fixes it
        # wherever the folder is.
        libdir = subprocess.run(["rustc", "--print", "target-libdir"], cwd=args.evcxr_tmpdir,
                                capture_output=True, text=True, check=True).stdout.strip()
        env = {
            # Persistent and shared by every evcxr kernel of the run, so tch is built once
            # (before timing starts) and `:dep tch` then costs what it costs a returning user.
            "EVCXR_TMPDIR": str(args.evcxr_tmpdir),
            "LIBTORCH": os.environ["LIBTORCH"],
            "LD_LIBRARY_PATH": ":".join(p for p in (libdir, os.environ.get("LD_LIBRARY_PATH")) if p),
        }
        kernels["evcxr"] = Kernel(
            "evcxr", [str(args.evcxr), "--control_file", "{connection_file}"], env,
            setup=f"{TCH_DEP}\n{RUST_USE}",
            first_tch=f"{TCH_DEP}\n{RUST_USE}\n{RUST_TCH_CELL}", tch_cell=RUST_TCH_CELL,
            complete=("let z = Tensor::zer", len("let z = Tensor::zer")),
            cifar=(CELLS / "evcxr_cifar.rs").read_text(), language="rust")
    if "ipykernel" in args.kernels:
        kernels["ipykernel"] = Kernel(
            "ipykernel", [py, "-m", "ipykernel_launcher", "-f", "{connection_file}"], {},
            setup="import torch", first_tch=f"import torch\n{PY_TCH_CELL}", tch_cell=PY_TCH_CELL,
            complete=("z = torch.zer", len("z = torch.zer")),
            cifar=IPYKERNEL_CIFAR.format(bench=str(HERE)), language="python")
    return kernels, write_specs(tmp / "kernels", kernels)


@contextlib.contextmanager
def bench_dirs(prefix="tchbook-bench-"):
    """A temporary folder for a benchmark's kernel specs, and its `runtime` folder for their
    connection files: (folder, runtime)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as name:
        tmp = Path(name)
        (tmp / "runtime").mkdir()
        yield tmp, tmp / "runtime"


def write_specs(kdir, kernels):
    """A KernelSpecManager over the specs of `kernels`, written under `kdir`."""
    for k in kernels.values():
        d = kdir / k.name
        d.mkdir(parents=True)
        (d / "kernel.json").write_text(json.dumps({
            "argv": k.argv, "display_name": f"bench {k.name}", "language": k.language,
            "env": k.env, "interrupt_mode": k.interrupt_mode}))
    return KernelSpecManager(kernel_dirs=[str(kdir)])


# --- talking to a kernel ----------------------------------------------------------------------

class Session:
    """A started kernel with a blocking client and a poller over shell and iopub."""

    def __init__(self, ksm, kernel, runtime):
        self.kernel = kernel
        self.km = KernelManager(kernel_name=kernel.name, kernel_spec_manager=ksm)
        self.km.connection_file = str(runtime / f"kernel-{uuid.uuid4()}.json")
        self.kc = None
        self.pid = None

    def start(self, timeout):
        """Starts the kernel; returns seconds from launch to kernel_info_reply."""
        # The kernel's own stdout/stderr go to a log beside its connection file, shown when
        # something fails, instead of into the benchmark's output.
        self.log = open(Path(self.km.connection_file).with_suffix(".log"), "ab")
        t0 = time.perf_counter()
        self.km.start_kernel(stdout=self.log, stderr=self.log)
        self.pid = self.km.provisioner.pid
        self.kc = self.km.client()
        self.kc.start_channels()
        self.poller = zmq.Poller()
        self.poller.register(self.kc.shell_channel.socket, zmq.POLLIN)
        self.poller.register(self.kc.iopub_channel.socket, zmq.POLLIN)
        # A DEALER queues the request until the kernel binds, so one send is enough; resend
        # only as a guard against a kernel that drops requests while starting.
        msg_id = self.kc.kernel_info()
        deadline = t0 + timeout
        last_send = t0
        while True:
            now = time.perf_counter()
            if now > deadline:
                raise TimeoutError(f"{self.kernel.name}: no kernel_info_reply in {timeout} s\n{self.log_tail()}")
            if not self.km.is_alive():
                raise RuntimeError(f"{self.kernel.name}: the kernel died while starting\n{self.log_tail()}")
            if now - last_send > 10:
                msg_id, last_send = self.kc.kernel_info(), now
            for msg, where, _t in self._recv(0.5):
                if where == "shell" and msg["parent_header"].get("msg_id") == msg_id:
                    self.info = msg["content"]
                    return time.perf_counter() - t0

    def log_tail(self):
        self.log.flush()
        text = Path(self.log.name).read_bytes()[-3000:].decode(errors="replace")
        return f"--- {self.kernel.name}'s log ({self.log.name}) ends:\n{text}"

    def _recv(self, timeout):
        """Yields (msg, 'shell'|'iopub', arrival time) for what arrives within timeout."""
        events = dict(self.poller.poll(int(timeout * 1000)))
        t = time.perf_counter()
        out = []
        if self.kc.shell_channel.socket in events:
            out.append((self.kc.shell_channel.get_msg(timeout=0), "shell", t))
        if self.kc.iopub_channel.socket in events:
            out.append((self.kc.iopub_channel.get_msg(timeout=0), "iopub", t))
        return out

    def execute(self, code, timeout):
        """Runs a cell; returns (seconds to idle, seconds to reply, result text, stdout)."""
        t0 = time.perf_counter()
        msg_id = self.kc.execute(code, store_history=True)
        reply = idle = None
        result, stream, error = None, [], None
        while reply is None or idle is None:
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{self.kernel.name}: cell did not finish in {timeout} s:\n{code}\n{self.log_tail()}")
            for msg, where, t in self._recv(0.5):
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                mt = msg["msg_type"]
                if where == "shell" and mt == "execute_reply":
                    reply = t - t0
                    if msg["content"]["status"] != "ok":
                        error = msg["content"]
                elif mt == "status" and msg["content"]["execution_state"] == "idle":
                    idle = t - t0
                elif mt == "execute_result":
                    result = msg["content"]["data"].get("text/plain")
                elif mt == "stream":
                    stream.append(msg["content"]["text"])
                elif mt == "error":
                    error = msg["content"]
        if error is not None:
            detail = "\n".join(error.get("traceback", [])) or error.get("evalue", "") or str(error)
            raise RuntimeError(f"{self.kernel.name}: cell failed:\n{code}\n---\n{detail}\n{''.join(stream)}\n{self.log_tail()}")
        return idle, reply, result, "".join(stream)

    def complete(self, code, cursor, timeout):
        t0 = time.perf_counter()
        msg_id = self.kc.complete(code, cursor)
        while True:
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{self.kernel.name}: no complete_reply in {timeout} s")
            for msg, where, t in self._recv(0.5):
                if where == "shell" and msg["parent_header"].get("msg_id") == msg_id:
                    return t - t0, msg["content"].get("matches", [])

    def inspect(self, code, cursor, timeout):
        """Sends an inspect_request; returns (seconds to its reply, found, text/plain)."""
        t0 = time.perf_counter()
        msg_id = self.kc.inspect(code, cursor, detail_level=0)
        while True:
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{self.kernel.name}: no inspect_reply in {timeout} s")
            for msg, where, t in self._recv(0.5):
                if where == "shell" and msg["parent_header"].get("msg_id") == msg_id:
                    content = msg["content"]
                    return t - t0, content.get("found", False), content.get("data", {}).get("text/plain", "")

    def stop(self):
        tree = process_tree(self.pid) if self.pid else []
        try:
            if self.kc:
                self.kc.stop_channels()
            self.km.shutdown_kernel(now=False)
        except Exception as e:  # a kernel that will not shut down cleanly is killed below
            log(f"{self.kernel.name}: shutdown: {e}")
        # The processes this kernel started (evcxr's child, tchbook's evaluation process) must
        # not outlive it and skew the next measurement.
        for p in tree:
            try:
                os.kill(p, 9)
            except OSError:
                pass
        try:
            self.km.cleanup_resources()
        except Exception:
            pass
        if getattr(self, "log", None):
            self.log.close()
