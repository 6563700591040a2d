"""What the interrupt check in every loop of a cell costs: two kernels of one binary side by side,
one with the checks (the default) and one without (TCHBOOK_INTERRUPT_CHECKS=0), each running the
same loops in turn, the first kernel of a turn rotating, so the machine's drift falls on both alike.

The loops, each timed inside its cell (the build and the kernel's overhead left out):
- `integer`: 10^8 iterations of a tight integer loop, the worst case for a check per iteration;
- `cifar`: the CIFAR-10 tutorial's training loop (bench/cells/tchbook_cifar.rs), tensor work
  behind every iteration, as notebook 03 writes it;
- `integer-opt2`: the integer loop again under `:opt 2` (the check's cost where nothing else is
  left to hide it), measured in kernels of their own after the others.

    python bench/interrupt_checks.py --out bench/results/interrupt-checks.json [--reps 5]
"""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kernel_session as ks  # noqa: E402

INTEGER_LOOP = """{
    let start = std::time::Instant::now();
    let mut s = 0u64;
    for i in 0..100_000_000u64 {
        s = s.wrapping_add(i ^ (s >> 3));
    }
    println!("loop_seconds={} ({s})", start.elapsed().as_secs_f64());
}"""

SIDES = {"checks": {}, "no-checks": {"TCHBOOK_INTERRUPT_CHECKS": "0"}}


def loop_seconds(session, code, timeout):
    _, _, _, out = session.execute(code, timeout)
    match = re.search(r"loop_seconds=([0-9.eE+-]+)", out)
    if not match:
        raise RuntimeError(f"{session.kernel.name}: no loop_seconds in {out[-300:]!r}")
    return float(match.group(1))


def alternated(ksm, specs, runtime, cells, args, setup=None):
    """Runs each of `cells` (name -> code) in every kernel of `specs`, `args.reps` turns."""
    names = list(specs)
    sessions = {}
    times = {name: {cell: [] for cell in cells} for name in names}
    try:
        for name in names:
            s = ks.Session(ksm, specs[name], runtime)
            sessions[name] = s
            s.start(args.timeout)
            if setup:
                s.execute(setup, args.timeout)
            for code in cells.values():  # untimed: the first build of each cell
                loop_seconds(s, code, args.timeout)
        for rep in range(args.reps):
            turn = names[rep % len(names):] + names[:rep % len(names)]
            for name in turn:
                for cell, code in cells.items():
                    times[name][cell].append(loop_seconds(sessions[name], code, args.timeout))
            ks.log(f"turn {rep + 1}/{args.reps}: " + ", ".join(
                f"{name} {cell} {times[name][cell][-1]:.3f} s" for name in names for cell in cells))
    finally:
        for s in sessions.values():
            s.stop()
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--tchbook", type=Path, default=ks.ROOT / "target" / "release" / "tchbook")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--no-cifar", action="store_true", help="the integer loops only")
    args = p.parse_args()
    results = {"reps": args.reps, "binary": str(args.tchbook),
               "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="tchbook-bench-") as tmpname:
        tmp = Path(tmpname)
        runtime = tmp / "runtime"
        runtime.mkdir()
        specs = {name: ks.tchbook_kernel(name, args.tchbook, env, tmp) for name, env in SIDES.items()}
        ksm = ks.write_specs(tmp / "kernels", specs)
        names = list(SIDES)
        cells = {"integer": INTEGER_LOOP}
        if not args.no_cifar:
            cells["cifar"] = (ks.CELLS / "tchbook_cifar.rs").read_text()
        times = alternated(ksm, specs, runtime, cells, args)
        times_opt = alternated(ksm, specs, runtime, {"integer-opt2": INTEGER_LOOP}, args, setup=":opt 2")
        for name in names:
            times[name].update(times_opt[name])
    rows = {}
    for cell in times["checks"]:
        with_checks = statistics.median(times["checks"][cell])
        without = statistics.median(times["no-checks"][cell])
        rows[cell] = {"checks": with_checks, "no_checks": without, "ratio": with_checks / without,
                      "all": {name: times[name][cell] for name in names}}
    results["loops"] = rows
    results["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print("| loop | with checks | without | ratio |\n| --- | ---: | ---: | ---: |")
    for cell, row in rows.items():
        print(f"| {cell} | {row['checks']:.3f} s | {row['no_checks']:.3f} s | {row['ratio']:.3f} |")
    ks.log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
