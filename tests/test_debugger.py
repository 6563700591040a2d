"""JupyterLab's debugger on tchbook, over the protocol, as JupyterLab drives it: the debugger
switched on (`initialize`, `attach`, `configurationDone`), a cell dumped and a breakpoint set in
its gutter (`dumpCell`, `setBreakpoints`), the cell run; the `stopped` event on iopub; the
stack, scopes and locals; `next` and `continue`; and what a front end or a user can get wrong.

Needs gdb with its Debug Adapter Protocol (scripts/requirements.txt pins gdb-for-pwndbg) and the
tchbook kernelspec (scripts/test installs it)."""
from __future__ import annotations

import os
import queue
import shutil
import signal
import time
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

CELL_TIMEOUT_S = 300
ROOT = Path(__file__).resolve().parents[1]

LOOP = """let mut total = 0i64;
for step in 1..5i64 {
    let doubled = step * 2;
    total += doubled;
}
total"""


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
        scopes = self.ok("scopes", {"frameId": frame})["scopes"]
        found = {}
        for scope in scopes:
            reference = scope["variablesReference"]
            for variable in self.ok("variables", {"variablesReference": reference})["variables"]:
                found[variable["name"]] = variable["value"]
        return found


@pytest.fixture
def debugger():
    d = Debugger(env={"PATH": gdb_dir() + os.pathsep + os.environ["PATH"]})
    try:
        reply = d.run("1")
        assert reply["status"] == "ok", reply
        yield d
    finally:
        d.close()


def test_a_breakpoint_in_a_loop_stops_shows_the_cell_line_and_locals_and_steps(debugger):
    debugger.switch_on()
    path, placed = debugger.breakpoint(LOOP, [4])
    assert placed[0]["line"] == 4
    assert placed[0]["verified"] is False and "has not run" in placed[0]["message"]
    msg_id = debugger.start(LOOP)

    stopped = debugger.event("stopped")
    thread = stopped["body"]["threadId"]
    assert stopped["body"]["reason"] == "breakpoint", stopped
    frame = debugger.top_frame(thread)
    assert (frame["source"]["path"], frame["line"], frame["name"]) == (path, 4, "cell"), frame
    local = debugger.locals(frame["id"])
    assert (local["step"], local["doubled"], local["total"]) == ("1", "2", "0"), local
    info = debugger.ok("debugInfo")
    assert info["stoppedThreads"] == [thread]
    assert info["breakpoints"] == [{"source": path, "breakpoints": [{"line": 4}]}]

    # `next` runs line 4 and stops on the next line of the cell: the loop's head.
    debugger.ok("next", {"threadId": thread})
    assert debugger.event("stopped")["body"]["reason"] == "step"
    frame = debugger.top_frame(thread)
    assert frame["line"] == 2, frame
    assert debugger.locals(frame["id"])["total"] == "2"

    # `continue` stops on the breakpoint again, next time round the loop.
    debugger.ok("continue", {"threadId": thread})
    debugger.event("stopped")
    frame = debugger.top_frame(thread)
    assert frame["line"] == 4
    assert debugger.locals(frame["id"])["step"] == "2"

    # Breakpoints cleared, `continue`: the cell finishes with its value.
    debugger.ok("setBreakpoints", {"source": {"path": path}, "breakpoints": []})
    debugger.ok("continue", {"threadId": thread})
    reply = debugger.reply(msg_id)
    assert reply["status"] == "ok", reply
    assert debugger.ok("debugInfo")["stoppedThreads"] == []
    assert debugger.run("total")["status"] == "ok"
