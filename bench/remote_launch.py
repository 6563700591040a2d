"""How much a kernel start costs through Jupyter Enterprise Gateway over a local start.

Both sides run one binary (a private copy of TCHBOOK_BIN) on one machine, alternated round by
round (local, gateway, local, gateway, ...), each timed as a front end sees it:

- ready: from the start request to the first kernel_info reply (jupyter_client's
  wait_for_ready); locally jupyter_client starts `tchbook kernel`, through the gateway
  jupyter_server's gateway client asks Enterprise Gateway (tests/gateway_harness.py), whose
  DistributedProcessProxy runs `tchbook launch` on `localhost` and waits for its encrypted
  connection information;
- first cell: from then to the reply of `1 + 1` (the evaluation process and the cell's build,
  the same work on both sides).

    python bench/remote_launch.py [--rounds 5] [--out bench/results/remote-launch.json]

Needs a warm build cache (`tchbook install`). The gateway's venv is made on first use.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import gateway_harness as harness  # noqa: E402


async def timed_start(km) -> dict:
    started = time.monotonic()
    await km.start_kernel()
    kc = km.client()
    started_channels = kc.start_channels()
    if asyncio.iscoroutine(started_channels):
        await started_channels
    try:
        await kc.wait_for_ready(timeout=300)
        ready = time.monotonic()
        reply = await kc.execute("1 + 1", reply=True, timeout=300)
        assert reply["content"]["status"] == "ok", reply["content"]
        done = time.monotonic()
    finally:
        kc.stop_channels()
        await km.shutdown_kernel()
    return {"ready_s": ready - started, "first_cell_s": done - ready}


def local_manager(binary: Path, spec_root: Path):
    from jupyter_client.manager import AsyncKernelManager

    spec_dir = spec_root / "kernels" / "tchbook_local"
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(binary), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "tchbook (local)", "language": "rust", "interrupt_mode": "message",
    }))
    os.environ["JUPYTER_PATH"] = str(spec_root)
    return AsyncKernelManager(kernel_name="tchbook_local")


async def measure(rounds: int, workdir: Path) -> dict:
    gateway = harness.Gateway(workdir / "gateway")
    gateway.install_specs()
    gateway.start()
    runs = {"local": [], "gateway": []}
    try:
        for _ in range(rounds):
            km = local_manager(gateway.binary, workdir / "local-spec")
            runs["local"].append(await timed_start(km))
            km = harness.gateway_kernel_manager(gateway.url, "tchbook_distributed")
            runs["gateway"].append(await timed_start(km))
    finally:
        gateway.stop()
    summary = {
        side: {key: statistics.median(run[key] for run in side_runs)
               for key in ("ready_s", "first_cell_s")}
        for side, side_runs in runs.items()
    }
    return {"rounds": rounds, "median": summary, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tchbook-remote-launch-") as workdir:
        result = asyncio.run(measure(args.rounds, Path(workdir)))
    for side in ("local", "gateway"):
        m = result["median"][side]
        print(f"{side:8} ready {m['ready_s']:6.2f} s   first cell {m['first_cell_s']:6.2f} s "
              f"(median of {args.rounds})")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
