"""JupyterLab's debugger on tchbook, over the protocol, as JupyterLab drives it: the debugger
switched on (`initialize`, `attach`, `configurationDone`), a cell dumped and a breakpoint set in
its gutter (`dumpCell`, `setBreakpoints`), the cell run; the `stopped` event on iopub; the
stack, scopes and locals; `next` and `continue`; and what a front end or a user can get wrong.
Functions and stepping are in test_debugger_stepping.py, conditions and hit counts in
test_debugger_breakpoints.py, a stopped cell's tensors in test_debugger_values.py; the client is
tests/debugger_client.py, the `debugger` fixture conftest.py's.

Needs gdb with its Debug Adapter Protocol (scripts/requirements.txt pins gdb-for-pwndbg) and the
tchbook kernelspec (scripts/test installs it)."""
from __future__ import annotations

import signal

from debugger_client import Debugger

LOOP = """let mut total = 0i64;
for step in 1..5i64 {
    let doubled = step * 2;
    total += doubled;
}
total"""


# LOOP with a wait after it: a cell that is still running when the stop button lets it go on
# (LOOP alone may finish before the interrupt's flag is set on resuming).
SLOW_TAIL = LOOP.replace("\ntotal", "\nstd::thread::sleep(std::time::Duration::from_secs(20));\ntotal")



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
