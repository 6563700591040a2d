"""What transport encryption (CurveZMQ) costs: two kernels of one binary, one started with
jupyter_client's `transport_encryption="required"` and one without, the same cells alternated
between them, median of --reps each; and the handshake of a new connection to each.

    python bench/kernel/encryption_cost.py [--binary target/release/tchbook] [--reps 20]

Cells, timed from execute_request to the cell's `idle` on iopub (what the notebook shows):
a trivial cell, and one printing 50 MB (50,000 lines of 1,000 characters, every byte of which
crosses iopub to the client). Handshake: a new DEALER (libzmq, as every Jupyter front end has)
connecting to the shell port, from `connect` to libzmq's "handshake succeeded" event, median of
--reps * 5 connections. Run `tchbook install` first (a warm build cache).
"""

import json
import statistics
import time

import benchkernel
import zmq
from zmq.utils.monitor import recv_monitor_message


CELLS = {
    "trivial": "let _one = 1;",
    "print_50mb": 'let line = "x".repeat(1000);\nfor _ in 0..50_000 { println!("{line}"); }',
}


def run(client, code):
    start = time.perf_counter()
    msg_id = client.execute(code)
    received = 0
    while True:
        msg = client.get_iopub_msg(timeout=300)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            received += len(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            elapsed = time.perf_counter() - start
            break
    reply = client.get_shell_msg(timeout=300)
    assert reply["content"]["status"] == "ok", reply["content"]
    return elapsed, received


def handshake(km, encrypted):
    """Seconds from connect to libzmq's handshake-succeeded event, one new connection."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    if encrypted:
        sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
        sock.curve_serverkey = km.curve_publickey
    monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    start = time.perf_counter()
    sock.connect(f"tcp://127.0.0.1:{km.shell_port}")
    recv_monitor_message(monitor)
    elapsed = time.perf_counter() - start
    sock.disable_monitor()
    monitor.close()
    sock.close()
    return elapsed


def main():
    args = benchkernel.arguments()

    kernels = {mode: benchkernel.start(args.binary, encryption=mode)
               for mode in ("disabled", "required")}
    try:
        assert kernels["required"][0].curve_publickey is not None
        for _, client in kernels.values():
            for code in CELLS.values():  # warm: each cell's build is replayed from here on
                run(client, code)
        times = {(mode, cell): [] for mode in kernels for cell in CELLS}
        for _ in range(args.reps):
            for cell, code in CELLS.items():
                for mode, (_, client) in kernels.items():
                    elapsed, received = run(client, code)
                    if cell == "print_50mb":
                        assert received == 50_000 * 1001, received
                    times[mode, cell].append(elapsed)
        shakes = {mode: [] for mode in kernels}
        for _ in range(args.reps * 5):
            for mode, (km, _) in kernels.items():
                shakes[mode].append(handshake(km, mode == "required"))
        result = {"reps": args.reps}
        for cell in CELLS:
            off = statistics.median(times["disabled", cell])
            on = statistics.median(times["required", cell])
            result[cell] = {"plain_ms": round(1000 * off, 1), "encrypted_ms": round(1000 * on, 1),
                            "ratio": round(on / off, 3)}
        off, on = (statistics.median(shakes[m]) for m in ("disabled", "required"))
        result["handshake"] = {"plain_ms": round(1000 * off, 2),
                               "encrypted_ms": round(1000 * on, 2), "ratio": round(on / off, 2)}
        print(json.dumps(result, indent=2))
    finally:
        for km, client in kernels.values():
            client.stop_channels()
            km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
