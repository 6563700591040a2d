"""How soon a running training loop sees a widget moved in the front end: a slider's `update`
sent as JupyterLab sends it (comm_msg on shell) while a cell runs a loop that reads `lr.value()`
each step, median of --reps moves.

    python bench/kernel/widget_latency.py [--binary target/release/tchbook] [--reps 20]

The loop steps every millisecond (a small model's training step takes longer: the loop sees the
change at its next step after the time measured here) and prints, when the value changes, the
wall clock at which it saw it; the latency is that time less the time the update was sent, both
read from the same clock (CLOCK_REALTIME) on this machine. Run `tchbook install` first (a warm
build cache).
"""

import json
import statistics
import time

import benchkernel


SETUP = "let lr = IntSlider::new().min(0).max(1000).description(\"lr\");\nshow(&lr);"
LOOP = """let mut seen = lr.value();
let mut steps = 0u64;
while seen < {last} {{
    let now = lr.value();
    if now != seen {{
        let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        println!("saw {{now}} at {{}} after {{steps}} steps", at.as_nanos());
        seen = now;
    }}
    steps += 1;
    interrupt::check();
    std::thread::sleep(std::time::Duration::from_millis(1));
}}"""


def until_idle(client, msg_id, seen=None):
    """The iopub messages of `msg_id` up to its idle; `seen` gets each as it comes."""
    messages = []
    while True:
        msg = client.get_iopub_msg(timeout=300)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if seen:
            seen(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages


def main():
    args = benchkernel.arguments()

    km, client = benchkernel.start(args.binary)
    try:
        setup = client.execute(SETUP)
        opened = [m for m in until_idle(client, setup) if m["msg_type"] == "comm_open"]
        assert opened, "the slider opened no comm: is the prelude's widgets module built?"
        comm_id = opened[-1]["content"]["comm_id"]
        loop = client.execute(LOOP.format(last=args.reps))
        # The loop runs once its first step printed nothing and the cell is past its build:
        # give it a moment, then move the slider once per rep, waiting for the loop to see it.
        sent_at = {}
        latencies = []
        steps_between = []

        def on_message(msg):
            if msg["msg_type"] != "stream":
                return
            for line in msg["content"]["text"].splitlines():
                if line.startswith("saw "):
                    _, value, _, at, _, steps, _ = line.split()
                    latencies.append((int(at) - sent_at[int(value)]) / 1e6)
                    steps_between.append(int(steps))

        pending = iter(range(1, args.reps + 1))
        time.sleep(5)
        value = next(pending)
        while True:
            sent_at[value] = time.time_ns()
            client.session.send(client.shell_channel.socket, "comm_msg", {
                "comm_id": comm_id,
                "data": {"method": "update", "state": {"value": value}, "buffer_paths": []},
            })
            while len(latencies) < value:
                msg = client.get_iopub_msg(timeout=60)
                if msg["parent_header"].get("msg_id") == loop:
                    on_message(msg)
            value = next(pending, None)
            if value is None:
                break
            time.sleep(0.05)
        until_idle(client, loop, on_message)
        result = {
            "reps": args.reps,
            "median_ms": statistics.median(latencies),
            "min_ms": min(latencies),
            "max_ms": max(latencies),
            "latencies_ms": [round(x, 3) for x in latencies],
        }
        print(json.dumps(result, indent=2))
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
