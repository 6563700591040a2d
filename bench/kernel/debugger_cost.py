"""What JupyterLab's debugger (breakpoints through gdb) costs a cell: the same cells with the
debugger off and on, alternated in one kernel, median of --reps each.

    python bench/kernel/debugger_cost.py [--binary target/release/tchbook] [--reps 10]

"On" is the debugger switched on as JupyterLab does it (`initialize`: gdb started and attached
to the evaluation process), with no breakpoint set: each cell is then built with full debug
information under its own file name, and gdb stops the process briefly when the cell's library
loads. "Off" is after `disconnect` (gdb gone): the kernel as without the debugger. The switching
itself is not timed. Times are from execute_request to the cell's `idle`. Needs gdb with its
Debug Adapter Protocol where the kernel finds it (scripts/requirements.txt) and a warm build
cache (`tchbook install`).
"""

import json
import statistics
import time

import benchkernel

SETUP = "let x = Tensor::randn([64, 10], (Kind::Float, Device::Cpu));"
CELLS = {
    "trivial": "1 + 1",
    "tch": "let y = (&x * 2.0).sum(Kind::Float);\ny.double_value(&[])",
}


def debug(client, command, arguments=None):
    msg = client.session.msg("debug_request", {"type": "request", "seq": 1, "command": command,
                                               "arguments": arguments or {}})
    client.control_channel.send(msg)
    while True:
        reply = client.get_control_msg(timeout=120)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            assert reply["content"]["success"], reply["content"]
            return reply["content"]


def run(client, code):
    start = time.perf_counter()
    msg_id = client.execute(code)
    while True:
        msg = client.get_iopub_msg(timeout=300)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            break
    elapsed = time.perf_counter() - start
    reply = client.get_shell_msg(timeout=300)
    assert reply["content"]["status"] == "ok", reply["content"]
    return elapsed


def main():
    args = benchkernel.arguments(reps=10)
    with benchkernel.running(args.binary, {"debugger": True}) as client:
        run(client, SETUP)
        for code in CELLS.values():
            for _ in range(3):  # warm: the cell's build is replayed from here on
                run(client, code)
        times = {(name, on): [] for name in CELLS for on in (False, True)}
        for _ in range(args.reps):
            for on in (False, True):
                if on:
                    debug(client, "initialize", {"clientID": "bench", "adapterID": "tchbook"})
                    debug(client, "attach")
                for name, code in CELLS.items():
                    times[(name, on)].append(run(client, code))
                if on:
                    debug(client, "disconnect")
    result = {"reps": args.reps}
    for name in CELLS:
        off = statistics.median(times[(name, False)])
        on = statistics.median(times[(name, True)])
        result[name] = {"off_ms": round(1000 * off), "on_ms": round(1000 * on),
                        "on_over_off": round(on / off, 2)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
