"""How long the stop button takes: from `interrupt_request` to the interrupted cell's
`execute_reply`, for each kind of cell the interrupt ends without the kill (a loop of the cell's
own, a sleep, a pipe read, a child wait, an accept, a join; a channel, mutex and condition
variable wait, whose thread is left in it after 0.25 s), in one tchbook kernel through
jupyter_client, with the variables checked after each. The grace period is set to 60 s, so a cell that was killed
instead shows as a time near 60 s and a lost variable.

    python bench/interrupt_latency.py --out bench/results/interrupt-latency.json [--reps 5]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kernel_session as ks  # noqa: E402

CELLS = {
    "loop": "let mut n = 0u64;\nloop { n = n.wrapping_add(1); }",
    "tensor loop": "let w = Tensor::zeros(&[64, 64], (Kind::Float, Device::Cpu));\n"
                   "for step in 0.. { let _ = (&w + step as f64).matmul(&w).sum(Kind::Float); }",
    "sleep": "std::thread::sleep(std::time::Duration::from_secs(600));",
    "pipe read": "let mut child = std::process::Command::new(\"sleep\").arg(\"600\")\n"
                 "    .stdout(std::process::Stdio::piped()).spawn().unwrap();\n"
                 "let mut text = String::new();\n"
                 "std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut text).unwrap();",
    "child wait": "std::process::Command::new(\"sleep\").arg(\"600\").spawn().unwrap().wait().unwrap();",
    "accept": "let listener = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();\n"
              "let _ = listener.accept().unwrap();",
    "join": "std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(600))).join().unwrap();",
    "channel recv": "let (tx, rx) = std::sync::mpsc::channel::<u8>();\n"
                    "std::thread::spawn(move || { let _tx = tx; std::thread::sleep(std::time::Duration::from_secs(600)); });\n"
                    "let _ = rx.recv();",
    "mutex": "let lock = std::sync::Arc::new(std::sync::Mutex::new(0u8));\n"
             "let held = lock.clone();\n"
             "std::thread::spawn(move || { let _g = held.lock().unwrap(); std::thread::sleep(std::time::Duration::from_secs(600)); });\n"
             "std::thread::sleep(std::time::Duration::from_millis(50));\n"
             "let _ = *lock.lock().unwrap();",
    "condvar": "let pair = (std::sync::Mutex::new(false), std::sync::Condvar::new());\n"
               "{ let mut ready = pair.0.lock().unwrap();\n"
               "  while !*ready { ready = pair.1.wait(ready).unwrap(); } }",
}


def interrupted(session, code, timeout):
    """Seconds from interrupt_request to the cell's execute_reply, and the reply's ename."""
    kc = session.kc
    msg_id = kc.execute(f'println!("started");\n{code}')
    while True:  # the cell runs once its first line is printed
        for msg, where, _ in session._recv(0.5):
            if (where == "iopub" and msg["parent_header"].get("msg_id") == msg_id
                    and msg["msg_type"] == "stream" and "started" in msg["content"]["text"]):
                break
        else:
            continue
        break
    time.sleep(0.3)  # into its loop or its wait
    asked = time.perf_counter()
    session.km.interrupt_kernel()
    while True:
        for msg, where, t in session._recv(0.5):
            if where == "shell" and msg["parent_header"].get("msg_id") == msg_id:
                return t - asked, msg["content"].get("ename")
        if time.perf_counter() - asked > timeout:
            raise TimeoutError(f"no reply {timeout} s after the interrupt:\n{code}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--tchbook", type=Path, default=ks.ROOT / "target" / "release" / "tchbook")
    p.add_argument("--timeout", type=float, default=120)
    args = p.parse_args()
    results = {"reps": args.reps, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cells": {}}
    with ks.bench_dirs() as (tmp, runtime):
        spec = ks.tchbook_kernel("tchbook", args.tchbook, {"TCHBOOK_INTERRUPT_GRACE": "60"}, tmp)
        ksm = ks.write_specs(tmp / "kernels", {"tchbook": spec})
        session = ks.Session(ksm, spec, runtime)
        try:
            session.start(args.timeout)
            session.execute("let kept = 41;", args.timeout)
            for name, code in CELLS.items():
                times = []
                for _ in range(args.reps):
                    took, ename = interrupted(session, code, args.timeout)
                    _, _, value, _ = session.execute("kept + 1", args.timeout)
                    if ename != "KeyboardInterrupt" or (value or "").strip() != "42":
                        raise RuntimeError(f"{name}: {ename}, kept + 1 = {value!r}")
                    times.append(took)
                results["cells"][name] = {"median": statistics.median(times), "max": max(times), "all": times}
                ks.log(f"{name}: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")
        finally:
            session.stop()
    results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print("| interrupted cell | median | max |\n| --- | ---: | ---: |")
    for name, row in results["cells"].items():
        print(f"| {name} | {row['median'] * 1000:.0f} ms | {row['max'] * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
