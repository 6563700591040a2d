"""The Rust kernel process behind this Python process: started on first use with jupyter_client,
started again after it died, restarted by `%rust_restart`, and shut down at exit; one cell at a
time (`cell.py` runs it)."""
from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
import uuid
from pathlib import Path

import zmq
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from jupyter_core.paths import jupyter_runtime_dir

from .._locate import LIBTORCH_ENV, binary, kernel_env
from .cell import Cell
from .errors import RustKernelDied
from .value import RustValue
from .usage import ask_usage
from .variables import ask_debug
from .widgets import CommRelay

# kernel_info is answered in ~0.2 s; the first cell, not the start, waits for the prelude.
START_TIMEOUT_S = 60
SPEC_NAME = "tchbook-bridge"

def _encryption() -> dict:
    """The channel to the Rust kernel is encrypted (CurveZMQ) wherever this jupyter_client (8.10
    and later) and pyzmq can: its ports are on loopback, which every user of a shared machine can
    reach. Older ones (hosted runtimes pin their own) start it unencrypted, as before."""
    if "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve"):
        return {"transport_encryption": "auto"}
    return {}


class _OneSpec(KernelSpecManager):
    """A kernelspec made here, so the bridge needs no installed one (kernel.json in a Jupyter
    data folder is what `tchbook install` writes for the native kernel)."""

    def __init__(self, spec: KernelSpec):
        super().__init__()
        self.spec = spec

    def get_kernel_spec(self, kernel_name: str, *args, **kwargs) -> KernelSpec:
        return self.spec


class RustKernel:
    """The Rust kernel of this Python process: started on first use, one cell at a time."""

    def __init__(self):
        self.km: KernelManager | None = None
        self.kc = None
        self.display_ids: dict[str, str] = {}
        self.cells = 0
        self.started = None
        self.info: dict = {}
        self.libtorch: str | None = None
        self.log_path: Path | None = None
        self._lock = threading.Lock()
        self.relay = CommRelay(self)
        atexit.register(self.shutdown)

    # --- life ------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive()

    def start(self) -> None:
        exe = binary()
        spec = KernelSpec(argv=[exe, "kernel", "--connection-file", "{connection_file}"],
                          display_name="Rust (tchbook, %%rust)", language="rust",
                          interrupt_mode="message", env={},
                          metadata={"supported_encryption": ["curve"]})
        km = KernelManager(kernel_name=SPEC_NAME, kernel_spec_manager=_OneSpec(spec),
                           **_encryption())
        # The Rust kernel works where the Python kernel works (relative paths such as data/ are the
        # notebook's) and links the libtorch of this Python's torch.
        env = kernel_env()
        # Its own log (tracing, to stderr) goes to a file: ipykernel forwards whatever reaches the
        # Python process's file descriptors 1 and 2 into the running cell.
        log_dir = Path(jupyter_runtime_dir())
        # Private, as Jupyter keeps its runtime directory: the log names the notebook's paths.
        log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.log_path = log_dir / f"tchbook-bridge-{os.getpid()}.log"
        log = os.fdopen(os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
        try:
            km.start_kernel(env=env, cwd=os.getcwd(), stdout=log, stderr=log)
        finally:
            log.close()  # the child has its own descriptor now
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=START_TIMEOUT_S)
        except RuntimeError as why:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            raise RustKernelDied(f"the Rust kernel ({exe}) did not start: {why}") from None
        self.km, self.kc = km, kc
        self.display_ids.clear()
        self.relay.forget()
        self.relay.start_reading()
        self.cells = 0
        self.started = time.monotonic()
        self.info = self._kernel_info()
        self.libtorch = env.get(LIBTORCH_ENV)

    def _kernel_info(self) -> dict:
        msg_id = self.kc.kernel_info()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            reply = self.kc.get_shell_msg(timeout=deadline - time.monotonic())
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]
        return {}

    def ensure(self) -> None:
        if self.alive():
            return
        if self.km is not None:
            print(f"tchbook: the Rust kernel had exited ({self.exit_status()}); starting a new one, "
                  "without the variables of the old one", file=sys.stderr)
            self._close()
        self.start()

    def restart(self) -> None:
        """A fresh Rust kernel: variables, items and `:dep`s are gone, as after a native restart."""
        with self._lock:
            self._close()
            self.start()

    def shutdown(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        km, kc = self.km, self.kc
        self.km = self.kc = None
        self.relay.forget()
        if kc is not None:
            kc.stop_channels()
        if km is not None:
            try:
                if km.is_alive():
                    # A shutdown_request first: the Rust kernel ends its evaluation process group.
                    km.shutdown_kernel(now=False)
                    # Stopped as asked: its log says nothing worth keeping. The log of a kernel
                    # that died on its own stays, for whoever wonders why.
                    if self.log_path is not None:
                        self.log_path.unlink(missing_ok=True)
                else:
                    km.cleanup_resources()
            except Exception as why:  # at interpreter exit, do what can be done
                print(f"tchbook: stopping the Rust kernel: {why}", file=sys.stderr)

    def _process(self):
        return getattr(self.km.provisioner, "process", None) if self.km and self.km.provisioner else None

    def pid(self) -> int | None:
        process = self._process()
        return process.pid if process is not None else None

    def exit_status(self) -> str:
        process = self._process()
        code = process.poll() if process is not None else None
        if code is None:
            return "status unknown"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def status(self) -> str:
        if self.km is None:
            return "Rust kernel: not running (the next %%rust cell starts one)"
        state = "running" if self.alive() else f"exited ({self.exit_status()})"
        info = self.info
        lines = [
            f"Rust kernel: {state}, pid {self.pid()}, "
            f"{info.get('implementation', 'tchbook')} {info.get('implementation_version', '')}".rstrip(),
            f"binary: {self.km.kernel_spec.argv[0]}",
            f"libtorch: {self.libtorch or 'not found in this Python (the kernel looks on PATH)'}",
            f"cells run: {self.cells}; up {time.monotonic() - self.started:.0f} s",
            f"connection file: {self.km.connection_file}, "
            + ("encrypted (CurveZMQ)" if getattr(self.km, "curve_publickey", None)
               else "not encrypted"),
            f"the Rust kernel's log: {self.log_path}",
        ]
        return "\n".join(lines)

    # --- cells -----------------------------------------------------------------------------

    def run(self, code: str) -> RustValue | None:
        """Runs one Rust cell, forwarding its outputs as they come; returns its value, or raises
        its error."""
        with self._lock:
            self.ensure()
            return Cell(self, code).run()

    def complete(self, code: str, cursor_pos: int, timeout: float) -> dict | None:
        """The Rust kernel's complete_reply content for `code`, or None if it is not running, is
        busy with a cell, or takes longer than `timeout` seconds (a late reply is dropped by the
        next request's filter on msg_id). Never starts a kernel: that is the first cell's job."""
        if not self._lock.acquire(timeout=0.05):
            return None
        try:
            if self.kc is None or not self.alive():
                return None
            msg_id = self.kc.complete(code, cursor_pos)
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                try:
                    reply = self.kc.get_shell_msg(timeout=left)
                except queue.Empty:
                    break
                if reply["parent_header"].get("msg_id") == msg_id:
                    return reply["content"]
            return None
        finally:
            self._lock.release()

    def debug(self, command: str, arguments: dict) -> dict | None:
        """The Rust kernel's answer to a debug request (the Variables panel's), or None when it
        is not running or did not answer in time. Never starts a kernel."""
        if self.kc is None or not self.alive():
            return None
        return ask_debug(self.kc, command, arguments)

    def gpus(self) -> list | None:
        """The `gpus` of the Rust kernel's usage_reply, or None when it is not running, did not
        answer in time or reports none. Never starts a kernel."""
        km = self.km
        if km is None or not self.alive():
            return None
        content = ask_usage(km)
        gpus = (content or {}).get("gpus")
        return gpus if isinstance(gpus, list) else None

    def interrupt(self) -> None:
        if self.km is not None:
            self.km.interrupt_kernel()

    def our_display_id(self, rust_id: str) -> str:
        mapped = self.display_ids.get(rust_id)
        if mapped is None:
            mapped = self.display_ids[rust_id] = f"tchbook-{uuid.uuid4().hex}"
        return mapped
