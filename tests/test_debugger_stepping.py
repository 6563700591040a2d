"""JupyterLab's debugger on tchbook, over the protocol, in functions: a breakpoint in a function an
earlier cell defined, stepping into a function and out of it, and the pause button on a running
loop. The client is tests/debugger_client.py, the `debugger` fixture conftest.py's."""
from __future__ import annotations

import queue

import pytest

from debugger_client import CELL_TIMEOUT_S


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
