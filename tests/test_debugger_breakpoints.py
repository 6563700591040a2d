"""JupyterLab's debugger on tchbook, over the protocol: breakpoints with a condition or a hit count
(as debugpy reads them), and a gdb that dies while a cell with breakpoints runs. The client is
tests/debugger_client.py, the `debugger` fixture conftest.py's."""
from __future__ import annotations

import signal


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
