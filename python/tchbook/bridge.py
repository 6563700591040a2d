"""One tchbook kernel behind a Python kernel: what `%%rust` cells run on.

The Rust kernel is the native one (`tchbook kernel`), started with jupyter_client on loopback as a
child of this Python process; everything it sends for a cell is re-published through IPython's own
machinery while the cell runs, so a front end sees what the native kernel would have shown:

- `stream` is written to `sys.stdout`/`sys.stderr` and flushed at once, partial lines included
  (a progress line redrawn with `\\r` moves in place);
- `display_data`, `update_display_data` and `clear_output` go through
  `IPython.display.publish_display_data` / `clear_output`, with the same bundle and metadata.
  Display ids are global to a front end, so each Rust id is mapped to an id of our own
  (`tchbook-<uuid>`), kept across cells (a run table shown in one cell may be updated by a later
  one) and forgotten when the Rust kernel restarts;
- `execute_result` becomes the magic's return value (a `RustValue`), which IPython shows as the
  cell's `Out[n]` with the same bundle;
- `error` is raised as a Python exception (`RustError`, or `KeyboardInterrupt` for an interrupt)
  whose `ename`, `evalue` and traceback are the native kernel's, so the cell fails and "run all"
  stops where a Python error would stop it;
- `input_request` on the Rust kernel's stdin is asked through `input()`/`getpass()`, which
  ipykernel turns into the front end's own input box (or an error when the front end has none:
  the Rust cell then reads an empty line, as in the native kernel without stdin).

Interrupts: while a Rust cell runs, SIGINT (what the front end's interrupt delivers to ipykernel)
only sets a flag that the message loop turns into an `interrupt_request` to the Rust kernel, so no
message is lost to a KeyboardInterrupt raised between two receives. The Rust kernel interrupts its
cell cooperatively, as natively (its variables live on; after a grace period it restarts the
evaluation process and says which variables were lost), and its `KeyboardInterrupt` error ends the
Python cell. The loop waits for the Rust kernel's `idle`, so every output of a Rust cell reaches
the front end before the Python cell's own `idle`.

The Rust kernel is shut down when the Python process exits (atexit), when the extension is
unloaded, and by `%rust_restart`; should the Python process die without running atexit, the Rust
kernel notices its parent is gone and exits by itself (it polls its parent, as ipykernel does).
"""
from __future__ import annotations

import atexit
import getpass
import os
import queue
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import zmq
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from jupyter_core.paths import jupyter_runtime_dir

from ._locate import LIBTORCH_ENV, binary, kernel_env

# kernel_info is answered in ~0.2 s; the first cell, not the start, waits for the prelude.
START_TIMEOUT_S = 60
POLL_MS = 100
ALIVE_CHECK_S = 1.0
SPEC_NAME = "tchbook-bridge"


class RustError(Exception):
    """A Rust cell failed: `ename`, `evalue` and `traceback` are the native kernel's own (the
    compiler's diagnostics, or the panic's message and place). IPython shows `traceback` as it
    is, colours included; `str(error)` is `evalue`. Each `ename` gets a subclass of this name
    (`CompilationError`, `panic`, `TorchError`, ...), so the error reads as natively."""

    def __init__(self, ename: str, evalue: str, traceback: list[str]):
        super().__init__(evalue)
        self.ename = ename
        self.evalue = evalue
        self.traceback = list(traceback)

    def _render_traceback_(self) -> list[str]:
        return self.traceback or [f"{self.ename}: {self.evalue}"]


class RustInterrupt(KeyboardInterrupt):
    """A Rust cell ended by an interrupt. A KeyboardInterrupt (so it stops "run all" and is not
    caught by `except Exception`), reported under the native kernel's name and traceback."""

    def __init__(self, evalue: str, traceback: list[str]):
        super().__init__(evalue)
        self.ename = "KeyboardInterrupt"
        self.evalue = evalue
        self.traceback = list(traceback)

    def _render_traceback_(self) -> list[str]:
        return self.traceback or [f"KeyboardInterrupt: {self.evalue}"]


# ipykernel reports `type(error).__name__` as the error's ename: make it the native one.
RustInterrupt.__name__ = "KeyboardInterrupt"


class RustKernelDied(RuntimeError):
    """The Rust kernel process exited (it was killed, or crashed) while a cell waited on it."""


_error_classes: dict[str, type] = {}


def error_for(content: dict) -> BaseException:
    """The Python exception for a Rust `error` message's content."""
    ename = content.get("ename") or "RustError"
    evalue = content.get("evalue") or ""
    traceback = content.get("traceback") or []
    if ename == "KeyboardInterrupt":
        return RustInterrupt(evalue, traceback)
    if not ename.isidentifier():
        return RustError(ename, evalue, traceback)
    cls = _error_classes.get(ename)
    if cls is None:
        cls = type(ename, (RustError,), {"__module__": __name__, "__doc__": f"The Rust kernel's {ename} error."})
        _error_classes[ename] = cls
    return cls(ename, evalue, traceback)


class RustValue:
    """A Rust cell's final value, as the Rust kernel displayed it: `data` is its MIME bundle
    (`text/plain` always; HTML or images for rich values) and `metadata` its metadata. IPython shows
    it with that bundle; `str(value)` is the text form."""

    def __init__(self, data: dict, metadata: dict):
        self.data = dict(data)
        self.metadata = dict(metadata)

    @property
    def text(self) -> str:
        return self.data.get("text/plain", "")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return dict(self.data), dict(self.metadata)

    def __repr__(self) -> str:
        return self.data.get("text/plain") or f"<Rust value: {', '.join(self.data)}>"

    __str__ = __repr__


class _OneSpec(KernelSpecManager):
    """A kernelspec made here, so the bridge needs no installed one (kernel.json in a Jupyter
    data folder is what `tchbook install` writes for the native kernel)."""

    def __init__(self, spec: KernelSpec):
        super().__init__()
        self.spec = spec

    def get_kernel_spec(self, kernel_name: str, *args, **kwargs) -> KernelSpec:
        return self.spec


class _Interrupts:
    """While a Rust cell runs in the main thread: SIGINT counts instead of raising."""

    def __init__(self):
        self.pending = 0
        self._previous = None
        self._installed = False

    def _count(self, signum, frame) -> None:
        self.pending += 1

    def __enter__(self) -> "_Interrupts":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._count)
            self._installed = True
        return self

    def __exit__(self, *exc) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def take(self) -> bool:
        taken, self.pending = self.pending > 0, 0
        return taken

    def pause(self) -> None:
        """Back to the handler outside (a KeyboardInterrupt), while `input()` waits."""
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)

    def resume(self) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._count)


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
        atexit.register(self.shutdown)

    # --- life ------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive()

    def start(self) -> None:
        exe = binary()
        spec = KernelSpec(argv=[exe, "kernel", "--connection-file", "{connection_file}"],
                          display_name="Rust (tchbook, %%rust)", language="rust",
                          interrupt_mode="message", env={})
        km = KernelManager(kernel_name=SPEC_NAME, kernel_spec_manager=_OneSpec(spec))
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
            f"connection file: {self.km.connection_file}",
            f"the Rust kernel's log: {self.log_path}",
        ]
        return "\n".join(lines)

    # --- cells -----------------------------------------------------------------------------

    def run(self, code: str) -> RustValue | None:
        """Runs one Rust cell, forwarding its outputs as they come; returns its value, or raises
        its error."""
        with self._lock:
            self.ensure()
            return _Cell(self, code).run()

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

    def interrupt(self) -> None:
        if self.km is not None:
            self.km.interrupt_kernel()

    def our_display_id(self, rust_id: str) -> str:
        mapped = self.display_ids.get(rust_id)
        if mapped is None:
            mapped = self.display_ids[rust_id] = f"tchbook-{uuid.uuid4().hex}"
        return mapped


class _Cell:
    """One execute_request to the Rust kernel and everything it sends back."""

    def __init__(self, kernel: RustKernel, code: str):
        self.kernel = kernel
        self.kc = kernel.kc
        self.code = code
        self.msg_id = None
        self.reply = None
        self.idle = False
        self.error = None
        self.value = None

    def run(self) -> RustValue | None:
        kc = self.kc
        poller = zmq.Poller()
        for channel in (kc.iopub_channel, kc.shell_channel, kc.stdin_channel):
            poller.register(channel.socket, zmq.POLLIN)
        checked = time.monotonic()
        # From before the request is sent: an interrupt can no longer end the Python side alone.
        with _Interrupts() as interrupts:
            # stop_on_error=False: the bridge sends one request at a time, there is never a queue.
            self.msg_id = kc.execute(self.code, silent=False, store_history=True, allow_stdin=True,
                                     stop_on_error=False)
            while self.reply is None or not self.idle:
                if interrupts.take():
                    self.kernel.interrupt()
                ready = dict(poller.poll(POLL_MS))
                if kc.iopub_channel.socket in ready:
                    while kc.iopub_channel.msg_ready():
                        self.on_iopub(kc.iopub_channel.get_msg(timeout=0))
                if kc.stdin_channel.socket in ready:
                    while kc.stdin_channel.msg_ready():
                        self.on_stdin(kc.stdin_channel.get_msg(timeout=0), interrupts)
                if kc.shell_channel.socket in ready:
                    while kc.shell_channel.msg_ready():
                        msg = kc.shell_channel.get_msg(timeout=0)
                        if msg["parent_header"].get("msg_id") == self.msg_id:
                            self.reply = msg
                if not ready and time.monotonic() - checked > ALIVE_CHECK_S:
                    checked = time.monotonic()
                    if not self.kernel.alive():
                        raise RustKernelDied(
                            f"the Rust kernel exited ({self.kernel.exit_status()}) "
                            "while this cell ran; the next %%rust cell starts a new one (run "
                            "%rust_restart to start it now)")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.kernel.cells += 1
        self.payloads(self.reply["content"].get("payload") or [])
        if self.error is not None:
            raise error_for(self.error)
        if self.reply["content"].get("status") == "error":
            raise error_for(self.reply["content"])
        return self.value

    def on_iopub(self, msg: dict) -> None:
        if msg["parent_header"].get("msg_id") != self.msg_id:
            return
        from IPython.display import clear_output, publish_display_data

        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            stream = sys.stderr if content.get("name") == "stderr" else sys.stdout
            stream.write(content.get("text", ""))
            stream.flush()
        elif kind in ("display_data", "update_display_data"):
            transient = dict(content.get("transient") or {})
            rust_id = transient.get("display_id")
            if rust_id is not None:
                transient["display_id"] = self.kernel.our_display_id(rust_id)
            publish_display_data(content.get("data", {}), content.get("metadata", {}),
                                 transient=transient or None, update=kind == "update_display_data")
        elif kind == "clear_output":
            clear_output(wait=bool(content.get("wait")))
        elif kind == "execute_result":
            self.value = RustValue(content.get("data", {}), content.get("metadata", {}))
        elif kind == "error":
            self.error = content
        elif kind == "status" and content.get("execution_state") == "idle":
            self.idle = True

    def on_stdin(self, msg: dict, interrupts: _Interrupts) -> None:
        if msg["msg_type"] != "input_request":
            return
        from IPython.core.error import StdinNotImplementedError

        content = msg["content"]
        prompt = content.get("prompt", "")
        interrupts.pause()
        try:
            value = getpass.getpass(prompt) if content.get("password") else input(prompt)
        except (StdinNotImplementedError, EOFError):
            value = ""  # what the native kernel reads when its front end has no stdin
        except KeyboardInterrupt:
            # The Rust kernel stops waiting for a reply once interrupted: none is sent, or a
            # later input() in the same kernel would read it.
            self.kernel.interrupt()
            return
        finally:
            interrupts.resume()
        self.kc.input(value)

    def payloads(self, payloads: list) -> None:
        """`?name` in a Rust cell answers with a pager payload: show it in IPython's pager."""
        for payload in payloads:
            if payload.get("source") == "page" and payload.get("data"):
                from IPython.core import page

                page.page(payload["data"])
