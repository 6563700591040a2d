"""What the evaluation process's own `syscall` (src/evaluation/futex.rs) costs a cell that waits
on futexes all the time: two kernels, a baseline binary and this one, alive together, alternated
cell by cell, each cell timing itself (a channel ping-pong between the cell's thread and a
worker: every round trip is a futex wake and a futex wait on each side; and a Mutex contended by
four threads). The figures are the median and the fastest of each cell's own timing, and their
ratios: on a busy machine the medians move with the load, the fastest runs much less.

    python bench/kernel/futex_cost.py --baseline /path/to/old/tchbook \\
        [--baseline-cache DIR] [--reps 10] [--out bench/results/futex-cost.json]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import kernel_session as ks  # noqa: E402

CELLS = {
    "channel ping-pong, 20,000 round trips":
        "let (to_worker, work) = std::sync::mpsc::channel::<u32>();\n"
        "let (to_cell, answers) = std::sync::mpsc::channel::<u32>();\n"
        "let worker = std::thread::spawn(move || { for n in work { to_cell.send(n + 1).unwrap(); } });\n"
        "let started = std::time::Instant::now();\n"
        "let mut n = 0u32;\n"
        "for _ in 0..20_000 { to_worker.send(n).unwrap(); n = answers.recv().unwrap(); }\n"
        "drop(to_worker);\n"
        "worker.join().unwrap();\n"
        "println!(\"{} {}\", n, started.elapsed().as_secs_f64());",
    "Mutex shared by 4 threads, 4 x 100,000 locks":
        "let counter = std::sync::Arc::new(std::sync::Mutex::new(0u64));\n"
        "let started = std::time::Instant::now();\n"
        "let threads: Vec<_> = (0..4).map(|_| { let c = counter.clone();\n"
        "    std::thread::spawn(move || { for _ in 0..100_000 { *c.lock().unwrap() += 1; } }) }).collect();\n"
        "for t in threads { t.join().unwrap(); }\n"
        "println!(\"{} {}\", *counter.lock().unwrap(), started.elapsed().as_secs_f64());",
}


def timed(session, code, timeout):
    _, _, _, stdout = session.execute(code, timeout)
    return float(stdout.split()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", type=Path, required=True)
    p.add_argument("--baseline-cache", type=Path, help="TCHBOOK_CACHE_DIR of the baseline kernel")
    p.add_argument("--tchbook", type=Path, default=ks.ROOT / "target" / "release" / "tchbook")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    results = {"reps": args.reps, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cells": {}}
    with ks.bench_dirs() as (tmp, runtime):
        base_env = {"TCHBOOK_CACHE_DIR": str(args.baseline_cache)} if args.baseline_cache else {}
        specs = {
            "baseline": ks.tchbook_kernel("baseline", args.baseline, base_env, tmp),
            "tchbook": ks.tchbook_kernel("tchbook", args.tchbook, {}, tmp),
        }
        ksm = ks.write_specs(tmp / "kernels", specs)
        sessions = {name: ks.Session(ksm, spec, runtime) for name, spec in specs.items()}
        try:
            for session in sessions.values():
                session.start(args.timeout)
            for name, code in CELLS.items():
                for session in sessions.values():  # built once, outside the timing
                    timed(session, code, args.timeout)
                times = {kernel: [] for kernel in sessions}
                for _ in range(args.reps):
                    for kernel, session in sessions.items():
                        times[kernel].append(timed(session, code, args.timeout))
                row = {kernel: statistics.median(t) for kernel, t in times.items()}
                row["ratio"] = row["tchbook"] / row["baseline"]
                # The fastest of each: what the code costs when nothing else runs on the cores.
                row["min"] = {kernel: min(t) for kernel, t in times.items()}
                row["min_ratio"] = row["min"]["tchbook"] / row["min"]["baseline"]
                row["all"] = times
                results["cells"][name] = row
                ks.log(f"{name}: baseline {row['baseline'] * 1000:.1f} ms, this {row['tchbook'] * 1000:.1f} ms, "
                       f"{row['ratio']:.3f}x")
        finally:
            for session in sessions.values():
                session.stop()
    results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
    print("| cell | baseline | this binary | ratio | fastest: baseline | this binary | ratio |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in results["cells"].items():
        fastest = row["min"]
        print(f"| {name} | {row['baseline'] * 1000:.1f} ms | {row['tchbook'] * 1000:.1f} ms | {row['ratio']:.3f} "
              f"| {fastest['baseline'] * 1000:.1f} ms | {fastest['tchbook'] * 1000:.1f} ms | {row['min_ratio']:.3f} |")


if __name__ == "__main__":
    main()
