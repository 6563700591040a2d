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


# LOOP with a wait after it: a cell that is still running when the stop button lets it go on
# (LOOP alone may finish before the interrupt's flag is set on resuming).
SLOW_TAIL = LOOP.replace("\ntotal", "\nstd::thread::sleep(std::time::Duration::from_secs(20));\ntotal")


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
    # JupyterLab's breakpoint list names each breakpoint by its source (and draws nothing for
    # any of them if one has none).
    assert placed[0]["source"]["path"] == path, placed
    msg_id = debugger.start(LOOP)

    stopped = debugger.event("stopped")
    thread = stopped["body"]["threadId"]
    assert stopped["body"]["reason"] == "breakpoint", stopped
    frame = debugger.top_frame(thread)
    assert (frame["source"]["path"], frame["line"], frame["name"]) == (path, 4, "cell"), frame
    local = debugger.locals(frame["id"])
    assert (local["step"], local["doubled"], local["total"]) == ("1", "2", "0"), local
    # Every frame has a source (JupyterLab's call stack draws nothing if one has none); the
    # stack ends at the cell's outermost line, above the evaluation process's own frames. A
    # frame's file reads back through `source`; no other file does.
    frames = debugger.ok("stackTrace", {"threadId": thread})["stackFrames"]
    assert all("source" in f for f in frames), frames
    assert frames[-1]["source"]["path"] == path and frames[-1]["line"] <= LOOP.count("\n") + 1, frames
    assert not any(f["name"] in ("main", "load_and_run") for f in frames), frames
    assert debugger.ok("source", {"source": {"path": path}})["content"] == LOOP
    refused = debugger.request("source", {"source": {"path": "/etc/passwd"}})
    assert refused["success"] is False and "source" in refused["message"], refused
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


def test_bad_requests_get_dap_errors_and_the_kernel_keeps_its_variables(debugger):
    assert debugger.run("let kept = 41;")["status"] == "ok"
    debugger.switch_on()
    path, _ = debugger.breakpoint(SLOW_TAIL, [4])
    msg_id = debugger.start(SLOW_TAIL)
    thread = debugger.event("stopped")["body"]["threadId"]
    frame = debugger.top_frame(thread)

    # Ids gdb never gave, and a reference from before: errors naming the request.
    for command, arguments in [("stackTrace", {"threadId": 999}), ("scopes", {"frameId": 999}),
                               ("variables", {"variablesReference": 99999}),
                               ("next", {"threadId": 999})]:
        response = debugger.request(command, arguments)
        assert response["success"] is False, (command, response)
        assert command in response["message"], response
    # An expression: gdb's Rust evaluates it in the stopped frame; one that does not parse fails.
    value = debugger.ok("evaluate", {"expression": "doubled * 10", "frameId": frame["id"], "context": "watch"})
    assert value["result"] == "20", value
    broken = debugger.request("evaluate", {"expression": "doubled +", "frameId": frame["id"], "context": "watch"})
    assert broken["success"] is False and broken["message"], broken

    # A line past the end of a cell that was built: unverified, saying why.
    past = debugger.ok("setBreakpoints", {"source": {"path": path}, "breakpoints": [{"line": 4}, {"line": 40}]})
    assert past["breakpoints"][0]["verified"] is True, past
    assert past["breakpoints"][1]["verified"] is False and "line 40" in past["breakpoints"][1]["message"]
    # A cell edited since it ran has another file: its breakpoint waits for it to run.
    _, edited = debugger.breakpoint(SLOW_TAIL + "\n", [4])
    assert edited[0]["verified"] is False and "edited" in edited[0]["message"], edited

    # The stop button ends the stopped cell: it runs on to its interrupt check.
    debugger.km.interrupt_kernel()
    reply = debugger.reply(msg_id)
    assert reply["status"] == "error" and "KeyboardInterrupt" in reply["ename"] + reply["evalue"], reply
    assert debugger.run("kept")["status"] == "ok"
    assert debugger.ok("debugInfo")["stoppedThreads"] == []


def test_gdb_dying_while_a_cell_is_stopped_leaves_the_cell_running_on(debugger):
    import psutil

    assert debugger.run("let kept = 41;")["status"] == "ok"
    debugger.switch_on()
    debugger.breakpoint(LOOP, [4])
    msg_id = debugger.start(LOOP)
    thread = debugger.event("stopped")["body"]["threadId"]
    kernel = psutil.Process(debugger.km.provisioner.process.pid)
    # gdb-for-pwndbg's gdb runs through its own copy of the loader: known by its arguments.
    gdbs = [p for p in kernel.children() if "-i=dap" in p.cmdline()]
    assert len(gdbs) == 1, kernel.children()
    gdbs[0].send_signal(signal.SIGKILL)

    # The traced process is let go and finishes the cell; the kernel says what happened.
    reply = debugger.reply(msg_id)
    assert reply["status"] == "ok", reply
    # (gdb's own lines, such as its "[Switching to thread ...]" when the cells' thread stops,
    # come as output events too.)
    output = debugger.event("output")
    while "gdb ended" not in output["body"]["output"]:
        output = debugger.event("output")
    assert debugger.ok("stackTrace", {"threadId": thread})["stackFrames"] == []
    response = debugger.request("next", {"threadId": thread})
    assert response["success"] is False and "switch it on" in response["message"], response
    kept = debugger.run("kept + 1")
    assert kept["status"] == "ok", kept
    # Switched on again, it attaches a new gdb, and breakpoints stop again.
    debugger.switch_on()
    debugger.breakpoint(LOOP, [4])
    msg_id = debugger.start(LOOP)
    thread = debugger.event("stopped")["body"]["threadId"]
    assert debugger.top_frame(thread)["line"] == 4
    debugger.ok("setBreakpoints", {"source": {"path": debugger.ok("dumpCell", {"code": LOOP})["sourcePath"]},
                                   "breakpoints": []})
    debugger.ok("continue", {"threadId": thread})
    assert debugger.reply(msg_id)["status"] == "ok"


def test_without_gdb_breakpoints_say_how_to_install_it_and_the_variables_panel_works():
    d = Debugger(env={"TCHBOOK_GDB": "/nonexistent/gdb"})
    try:
        assert d.run("let kept = 41;")["status"] == "ok"
        d.switch_on()
        _, placed = d.breakpoint(LOOP, [4])
        assert "gdb-for-pwndbg" in placed[0]["message"], placed
        assert [v["name"] for v in d.ok("inspectVariables")["variables"]] == ["kept"]
        assert d.run(LOOP)["status"] == "ok"
    finally:
        d.close()


def test_a_breakpoint_set_while_the_cell_runs_stops_it(debugger):
    code = """let mut n = 0u64;
for i in 0..500u64 {
    n += i;
    std::thread::sleep(std::time::Duration::from_millis(20));
}
n"""
    debugger.switch_on()
    path = debugger.ok("dumpCell", {"code": code})["sourcePath"]
    msg_id = debugger.start(code)
    debugger.wait_until_running()
    placed = debugger.ok("setBreakpoints", {"source": {"path": path}, "breakpoints": [{"line": 3}]})
    assert placed["breakpoints"][0]["verified"] is True, placed
    thread = debugger.event("stopped")["body"]["threadId"]
    frame = debugger.top_frame(thread)
    assert (frame["source"]["path"], frame["line"]) == (path, 3), frame
    debugger.ok("setBreakpoints", {"source": {"path": path}, "breakpoints": []})
    debugger.ok("continue", {"threadId": thread})
    assert debugger.reply(msg_id)["status"] == "ok"


TRAIN = """fn train(n: i64) -> i64 {
    let mut s = 0;
    for i in 0..n {
        s += i;
    }
    s
}"""


def test_a_breakpoint_in_a_function_an_earlier_cell_defined_stops_there(debugger):
    # The function's cell ran before the debugger was switched on (no debug information of its
    # own); evcxr builds `train` again into the calling cell, whose copy is traced back to it.
    assert debugger.run(TRAIN)["status"] == "ok"
    debugger.switch_on()
    train_path, placed = debugger.breakpoint(TRAIN, [4])
    assert placed[0]["verified"] is False, placed
    call = "let r = train(5);\nr"
    call_path = debugger.ok("dumpCell", {"code": call})["sourcePath"]
    msg_id = debugger.start(call)

    thread = debugger.event("stopped")["body"]["threadId"]
    frames = debugger.ok("stackTrace", {"threadId": thread})["stackFrames"]
    top, caller = frames[0], frames[1]
    assert (top["source"]["path"], top["line"]) == (train_path, 4), frames
    assert "train" in top["name"], top
    assert (caller["source"]["path"], caller["line"], caller["name"]) == (call_path, 1, "cell"), frames
    local = debugger.locals(top["id"])
    assert (local["i"], local["s"], local["n"]) == ("0", "0", "5"), local

    # Round the loop: stopped there again, one step on.
    debugger.ok("continue", {"threadId": thread})
    debugger.event("stopped")
    top = debugger.top_frame(thread)
    assert (top["source"]["path"], top["line"]) == (train_path, 4), top
    assert debugger.locals(top["id"])["i"] == "1"

    debugger.ok("setBreakpoints", {"source": {"path": train_path}, "breakpoints": []})
    debugger.ok("continue", {"threadId": thread})
    assert debugger.reply(msg_id)["status"] == "ok"
    result = debugger.kc.execute_interactive("r", timeout=CELL_TIMEOUT_S)
    assert result["content"]["status"] == "ok"


DOUBLE = """fn double(x: i64) -> i64 {
    let y = x * 2;
    y
}"""


def test_step_in_enters_a_function_and_step_out_returns_to_the_cell(debugger):
    assert debugger.run(DOUBLE)["status"] == "ok"
    debugger.switch_on()
    double_path = debugger.ok("dumpCell", {"code": DOUBLE})["sourcePath"]
    call = "let a = double(3);\nlet b = a + 1;\nb"
    call_path, _ = debugger.breakpoint(call, [1])
    msg_id = debugger.start(call)
    thread = debugger.event("stopped")["body"]["threadId"]
    assert debugger.top_frame(thread)["line"] == 1

    # Step In: into `double`, shown in the cell that defined it.
    debugger.ok("stepIn", {"threadId": thread})
    assert debugger.event("stopped")["body"]["reason"] == "step"
    frame = debugger.top_frame(thread)
    assert frame["source"]["path"] == double_path and frame["line"] in (1, 2), frame
    assert "double" in frame["name"], frame
    assert debugger.locals(frame["id"])["x"] == "3"

    # Step Out: back in the calling cell, on its first line, `double` done.
    debugger.ok("stepOut", {"threadId": thread})
    assert debugger.event("stopped")["body"]["reason"] == "step"
    frame = debugger.top_frame(thread)
    assert (frame["source"]["path"], frame["line"]) == (call_path, 1), frame

    debugger.ok("setBreakpoints", {"source": {"path": call_path}, "breakpoints": []})
    debugger.ok("continue", {"threadId": thread})
    assert debugger.reply(msg_id)["status"] == "ok"


def test_pause_stops_a_running_loop_and_continue_runs_it_on(debugger):
    assert debugger.run("let kept = 41;")["status"] == "ok"
    spin = """let mut k = 0u64;
loop {
    k = std::hint::black_box(k.wrapping_add(1));
    if k == 0 { break; }
}
k"""
    debugger.switch_on()
    path = debugger.ok("dumpCell", {"code": spin})["sourcePath"]
    msg_id = debugger.start(spin)
    debugger.wait_until_running()

    # JupyterLab pauses thread 1 (its default thread while none is stopped).
    debugger.ok("pause", {"threadId": 1})
    stopped = debugger.event("stopped", timeout=60)
    assert stopped["body"]["reason"] == "pause", stopped
    frames = debugger.ok("stackTrace", {"threadId": stopped["body"]["threadId"]})["stackFrames"]
    assert any(f["source"].get("path") == path for f in frames), frames
    assert debugger.ok("debugInfo")["stoppedThreads"] == [stopped["body"]["threadId"]]

    # Continue: it loops on (no reply), until the stop button ends it with variables kept.
    debugger.ok("continue", {"threadId": stopped["body"]["threadId"]})
    with pytest.raises(queue.Empty):
        debugger.kc.get_shell_msg(timeout=2)
    assert debugger.ok("debugInfo")["stoppedThreads"] == []
    debugger.km.interrupt_kernel()
    reply = debugger.reply(msg_id)
    assert reply["status"] == "error" and "KeyboardInterrupt" in reply["ename"] + reply["evalue"], reply
    assert debugger.run("kept")["status"] == "ok"


SQUARES = """let mut total = 0i64;
for i in 0..10i64 {
    let sq = i * i;
    total += sq;
}
total"""


def test_a_conditional_breakpoint_stops_only_when_its_condition_holds(debugger):
    debugger.switch_on()
    path = debugger.ok("dumpCell", {"code": SQUARES})["sourcePath"]
    debugger.ok("setBreakpoints", {"source": {"path": path},
                                   "breakpoints": [{"line": 3, "condition": "i == 3"}]})
    msg_id = debugger.start(SQUARES)
    thread = debugger.event("stopped")["body"]["threadId"]
    frame = debugger.top_frame(thread)
    assert frame["line"] == 3
    assert (debugger.locals(frame["id"])["i"], debugger.locals(frame["id"])["total"]) == ("3", "5")
    debugger.ok("continue", {"threadId": thread})
    reply = debugger.reply(msg_id)
    assert reply["status"] == "ok", "the condition held once: the cell ran on to its end"


def test_a_hit_count_stops_on_that_hit_only_and_every_nth_as_debugpy_reads_it(debugger):
    debugger.switch_on()
    path = debugger.ok("dumpCell", {"code": SQUARES})["sourcePath"]
    # A form debugpy does not read is refused, saying which it reads.
    refused = debugger.ok("setBreakpoints", {"source": {"path": path},
                                             "breakpoints": [{"line": 3, "hitCondition": "=> 2"}]})
    assert refused["breakpoints"][0]["verified"] is False, refused
    assert "hit count `=> 2`" in refused["breakpoints"][0]["message"], refused
    placed = debugger.ok("setBreakpoints", {"source": {"path": path},
                                            "breakpoints": [{"line": 3, "hitCondition": "4"}]})
    assert placed["breakpoints"][0]["line"] == 3, placed
    msg_id = debugger.start(SQUARES)
    thread = debugger.event("stopped")["body"]["threadId"]
    frame = debugger.top_frame(thread)
    # The fourth time round: i = 3; and never again (gdb's own count would stop at every hit
    # after it).
    assert (frame["line"], debugger.locals(frame["id"])["i"]) == (3, "3"), frame
    debugger.ok("continue", {"threadId": thread})
    assert debugger.reply(msg_id)["status"] == "ok"

    # Every third hit, set again: counting starts anew (i = 2, 5, 8).
    debugger.ok("setBreakpoints", {"source": {"path": path},
                                   "breakpoints": [{"line": 3, "hitCondition": "% 3"}]})
    msg_id = debugger.start(SQUARES)
    seen = []
    for _ in range(3):
        thread = debugger.event("stopped")["body"]["threadId"]
        seen.append(debugger.locals(debugger.top_frame(thread)["id"])["i"])
        debugger.ok("continue", {"threadId": thread})
    assert seen == ["2", "5", "8"], seen
    assert debugger.reply(msg_id)["status"] == "ok"


def test_gdb_dying_while_a_cell_runs_takes_its_breakpoints_out(debugger):
    import psutil

    assert debugger.run("let kept = 41;")["status"] == "ok"
    code = """let mut n = 0u64;
for i in 0..200u64 {
    if i == 150 {
        n += 1000;
    }
    n += i;
    std::thread::sleep(std::time::Duration::from_millis(20));
}
n"""
    debugger.switch_on()
    debugger.breakpoint(code, [4])
    msg_id = debugger.start(code)
    # Placed once the cell's library loaded: gdb's int3 is in the running cell's code, at the
    # address gdb reports.
    placed = debugger.event("breakpoint")["body"]["breakpoint"]
    assert placed["verified"] is True, placed
    evaluation = psutil.Process(debugger.km.provisioner.process.pid).children()
    evaluation = [p for p in evaluation if "-i=dap" not in p.cmdline()]
    address = int(placed["instructionReference"], 16)
    debugger.wait_until_running()
    with open(f"/proc/{evaluation[0].pid}/mem", "rb") as mem:
        mem.seek(address)
        assert mem.read(1) == b"\xcc", "gdb's breakpoint is in the code"

    kernel = psutil.Process(debugger.km.provisioner.process.pid)
    [gdb] = [p for p in kernel.children() if "-i=dap" in p.cmdline()]
    gdb.send_signal(signal.SIGKILL)
    output = debugger.event("output")
    assert "taken out" in output["body"]["output"], output

    # The loop passes the line (i = 150, three seconds in) and the cell ends with its value.
    reply = debugger.reply(msg_id)
    assert reply["status"] == "ok", reply
    # Its value (1000 added at the line) and the earlier variable, kept.
    kept = debugger.run("assert_eq!(n, 19900 + 1000); assert_eq!(kept, 41);")
    assert kept["status"] == "ok", kept
    assert debugger.ok("debugInfo")["stoppedThreads"] == []
