"""A tchbook kernel and a client that speaks JupyterLab's debug protocol to it, for the
tests/test_debugger*.py files (their `debugger` fixture: conftest.py): the requests JupyterLab
sends (`initialize`, `attach`, `configurationDone`, `dumpCell`, `setBreakpoints`...), the events
on iopub, and the gdb the kernel will find.

Needs gdb with its Debug Adapter Protocol (scripts/requirements.txt pins gdb-for-pwndbg) and the
tchbook kernelspec (scripts/test installs it)."""
from __future__ import annotations

import os
import queue
import shutil
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

CELL_TIMEOUT_S = 300


def gdb_dir() -> str:
    """The folder of the gdb the kernel will find: the venv's (the kernel looks beside the
    environment's Python) or PATH's."""
    import sys

    beside = Path(sys.executable).parent / "gdb"
    found = str(beside) if beside.exists() else shutil.which("gdb")
    assert found, "gdb not found: `pip install -r scripts/requirements.txt` installs it"
    return str(Path(found).parent)


class Debugger:
    """A tchbook kernel and a client that speaks JupyterLab's debug protocol to it."""

    def __init__(self, env: dict | None = None):
        env = dict(os.environ, **(env or {}))
        self.km, self.kc = start_new_kernel(kernel_name="tchbook", env=env, startup_timeout=CELL_TIMEOUT_S)
        self.seq = 0
        self.events: list[dict] = []

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def request(self, command: str, arguments: dict | None = None, timeout: float = 60) -> dict:
        self.seq += 1
        msg = self.kc.session.msg("debug_request", {"type": "request", "seq": self.seq,
                                                   "command": command, "arguments": arguments or {}})
        self.kc.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.kc.get_control_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]

    def ok(self, command: str, arguments: dict | None = None, timeout: float = 60) -> dict:
        response = self.request(command, arguments, timeout)
        assert response["success"], (command, response)
        return response["body"]

    def switch_on(self):
        self.ok("debugInfo")
        self.ok("initialize", {"clientID": "jupyterlab", "adapterID": "tchbook",
                               "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
        self.ok("attach", {})
        self.ok("configurationDone", {})

    def start(self, code: str) -> str:
        """Sends an execute_request without waiting for its reply."""
        return self.kc.execute(code)

    def wait_until_running(self):
        """Until the cell started is running (its library loaded): JupyterLab's Variables panel
        says so."""
        deadline = time.monotonic() + CELL_TIMEOUT_S
        while not any(v["name"] == "(cell running)" for v in self.ok("inspectVariables")["variables"]):
            assert time.monotonic() < deadline, "the cell never ran"
            time.sleep(0.2)

    def event(self, name: str, timeout: float = CELL_TIMEOUT_S) -> dict:
        """The next `debug_event` called `name` on iopub (others are kept in `events`)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no `{name}` event within {timeout} s; saw {self.events}")
            if msg["msg_type"] == "debug_event":
                self.events.append(msg["content"])
                if msg["content"].get("event") == name:
                    return msg["content"]

    def reply(self, msg_id: str, timeout: float = CELL_TIMEOUT_S) -> dict:
        while True:
            reply = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]

    def run(self, code: str) -> dict:
        return self.reply(self.start(code))

    def breakpoint(self, code: str, lines: list[int]) -> tuple[str, list[dict]]:
        path = self.ok("dumpCell", {"code": code})["sourcePath"]
        body = self.ok("setBreakpoints", {"source": {"path": path},
                                          "breakpoints": [{"line": line} for line in lines],
                                          "sourceModified": False})
        return path, body["breakpoints"]

    def top_frame(self, thread: int) -> dict:
        return self.ok("stackTrace", {"threadId": thread})["stackFrames"][0]

    def locals(self, frame: int) -> dict[str, str]:
        return {name: variable["value"] for name, variable in self.local_variables(frame).items()}

    def local_variables(self, frame: int) -> dict[str, dict]:
        """The frame's locals as gdb lists them (`value`, `variablesReference`), by name."""
        scopes = self.ok("scopes", {"frameId": frame})["scopes"]
        found = {}
        for scope in scopes:
            found.update(self.expand(scope))
        return found

    def expand(self, variable: dict) -> dict[str, dict]:
        """What `variable` (or a scope) expands into, as the Variables panel asks for it: a
        `variables` request on its reference, each child by name."""
        reference = variable["variablesReference"]
        assert reference, ("nothing to expand", variable)
        return {child["name"]: child
                for child in self.ok("variables", {"variablesReference": reference})["variables"]}
