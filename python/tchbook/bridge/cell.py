"""One Rust cell: its execute_request, and everything the Rust kernel sends back for it re-published
through IPython while it runs (iopub), its input requests asked in the front end (stdin), and its
pager payloads shown, until the Rust kernel's `idle`."""
from __future__ import annotations

import getpass
import sys
import time

import zmq

from .errors import RustKernelDied, error_for
from .interrupts import Interrupts
from .session import Session
from .value import RustValue
from .widgets import COMM_MESSAGES

POLL_MS = 100
ALIVE_CHECK_S = 1.0


class Cell:
    """One execute_request to the Rust kernel and everything it sends back."""

    def __init__(self, kernel: Session, code: str):
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
        with Interrupts() as interrupts:
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
        if msg["msg_type"] in COMM_MESSAGES:
            # A widget's, whichever request caused it (this cell, or a front end's message).
            self.kernel.relay.from_rust(msg)
            return
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
            publish_display_data(self.kernel.relay.view(content.get("data", {})),
                                 content.get("metadata", {}),
                                 transient=transient or None, update=kind == "update_display_data")
        elif kind == "clear_output":
            clear_output(wait=bool(content.get("wait")))
        elif kind == "execute_result":
            self.value = RustValue(self.kernel.relay.view(content.get("data", {})),
                                   content.get("metadata", {}))
        elif kind == "error":
            self.error = content
        elif kind == "status" and content.get("execution_state") == "idle":
            self.idle = True

    def on_stdin(self, msg: dict, interrupts: Interrupts) -> None:
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
