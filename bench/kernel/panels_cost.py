"""What JupyterLab's Variables panel costs a cell: the same cell with the panel off and on,
alternated in one kernel, median of --reps each.

    python bench/kernel/panels_cost.py [--binary target/release/tchbook] [--reps 20]

"On" does what JupyterLab does with the debugger on: an `inspectVariables` debug_request on
control after every iopub message of the cell (busy, execute_input, stream, idle), each waited
for. Two times per cell, from execute_request: to the cell's `idle` (what the notebook shows),
and to the reply of the `inspectVariables` sent after `idle` (the panel showing the cell's
variables). The notebook holds a few tensors, a var store, a Vec and numbers, as a tutorial's
does. Run `tchbook install` first (a warm build cache).
"""

import json
import statistics
import time

import benchkernel


SETUP = """let x = Tensor::randn([64, 10], (Kind::Float, Device::Cpu));
let images = Tensor::zeros([256, 3, 32, 32], (Kind::Float, Device::Cpu));
let labels = Tensor::zeros([256], (Kind::Int64, Device::Cpu));
let vs = nn::VarStore::new(Device::Cpu);
let net = Net::new(&vs.root());
let losses: Vec<f64> = (0..100).map(|i| 1.0 / (i as f64 + 1.0)).collect();
let lr = 0.01;
let epochs = 2;"""
CELL = 'println!("step");\nlet y = (&x * 2.0).sum(Kind::Float);'


def debug(client, seq, command, arguments=None):
    msg = client.session.msg(
        "debug_request",
        {"type": "request", "seq": seq, "command": command, "arguments": arguments or {}},
    )
    client.control_channel.send(msg)
    while True:
        reply = client.get_control_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"]


def run(client, code, panel, seq):
    start = time.perf_counter()
    msg_id = client.execute(code)
    idle = None
    while idle is None:
        msg = client.get_iopub_msg(timeout=300)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle = time.perf_counter() - start
        if panel:
            seq += 1
            reply = debug(client, seq, "inspectVariables")
            assert reply["success"], reply
    shown = time.perf_counter() - start
    reply = client.get_shell_msg(timeout=300)
    assert reply["content"]["status"] == "ok", reply["content"]
    return idle, shown, seq


def main():
    args = benchkernel.arguments()

    km, client = benchkernel.start(args.binary, {"debugger": True})
    try:
        seq = 0
        run(client, SETUP, False, seq)
        for _ in range(3):  # warm: the cell's build is replayed from here on
            run(client, CELL, False, seq)
        seq += 1
        debug(client, seq, "initialize", {"clientID": "bench", "adapterID": "tchbook"})
        times = {False: ([], []), True: ([], [])}
        for _ in range(args.reps):
            for panel in (False, True):
                idle, shown, seq = run(client, CELL, panel, seq)
                times[panel][0].append(idle)
                times[panel][1].append(shown)
        seq += 1
        variables = debug(client, seq, "inspectVariables")["body"]["variables"]
        result = {
            "reps": args.reps,
            "variables": len(variables),
            "off_idle_ms": 1000 * statistics.median(times[False][0]),
            "on_idle_ms": 1000 * statistics.median(times[True][0]),
            "on_panel_shown_ms": 1000 * statistics.median(times[True][1]),
        }
        print(json.dumps(result, indent=2))
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
