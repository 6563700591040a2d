"""Writes bench/RESULTS.md from train.py's and kernels.py's JSON and a description of the machine.

    python bench/report.py --train bench/out/train.json --kernels bench/out/kernels.json \
        --out bench/RESULTS.md --command "scripts/bench"

With --replace-device DEVICE it rewrites only that device's training tables in an existing --out
(what `scripts/gpu-check --apply` does with a CUDA run from another machine), leaving its header,
this machine's tables and the notes as they were.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from report_kernels import (dep_section, first_build_section, first_requests_section,  # noqa: E402
                            kernel_section)
from report_training import train_section  # noqa: E402

# The line a report without a CUDA table holds where that table would be; the first CUDA run
# (--replace-device cuda) takes its place.
NO_CUDA_TABLE = ("No CUDA table yet: no GPU has run these workloads. The GPU machine has no Rust toolchain, so "
                 "`scripts/gpu-check` builds its bundle here and `scripts/gpu-check --apply` adds the table from "
                 "the run there; on a GPU machine with Rust, `scripts/bench --only train --device cuda` does.")


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine(evcxr_version):
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    gpu = sh("nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader") \
        if shutil.which("nvidia-smi") else ""
    lock = (ROOT / "Cargo.lock").read_text()
    tch = re.search(r'name = "tch"\nversion = "([^"]+)"', lock)
    torch = sh(os.environ.get("TCHBOOK_PYTHON", "python3"), "-c", "import torch; print(torch.__version__)")
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory": f"{mem_kib / 1024 / 1024:.0f} GiB",
        "gpu": gpu or "none",
        "os": f"{platform.system()} {platform.release()}",
        "rustc": sh("rustc", "--version"),
        "tch": tch.group(1) if tch else "?",
        "torch": torch or "?",
        "python": platform.python_version(),
        "evcxr": evcxr_version or "not measured",
        "commit": sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"),
    }


def replace_device(out: Path, device: str, train_files: list[Path], notes: Path | None):
    """Swaps DEVICE's training tables in `out` for those rendered from `train_files`, in the place the
    old ones held, or before the first kernels table (taking the place of the note that says no such
    table exists yet) where there were none; and the notes for `notes`, which speak of those tables."""
    if not out.exists():
        raise SystemExit(f"bench/report.py: --replace-device rewrites an existing report, and {out} does not exist; "
                         "write it first without --replace-device")
    trains = sorted((t for t in (json.loads(f.read_text()) for f in train_files if f.exists())
                     if t["device"] == device), key=lambda t: t.get("started", ""))
    if not trains:
        raise SystemExit(f"bench/report.py: none of the --train files is a {device} run, so nothing would replace "
                         f"the {device} tables in {out}")
    new = []
    for train in trains:
        new.extend(train_section(train, dated=len(trains) > 1))
        new.append("")
    text = out.read_text()
    sections = re.split(r"(?m)^(?=## )", text)
    heading = f"## Training loops ({device}"
    mine = [i for i, s in enumerate(sections) if s.startswith(heading)]
    if mine:
        at = mine[0]
        kept = [s for i, s in enumerate(sections) if i not in mine]
    else:
        kept = [re.sub(re.escape(NO_CUDA_TABLE) + r"\n\n?", "", s) if device == "cuda" else s for s in sections]
        at = next((i for i, s in enumerate(kept) if s.startswith("## Kernels")), len(kept))
    kept.insert(at, "\n".join(new) + "\n")
    if notes and notes.exists():
        text = notes.read_text().rstrip() + "\n"
        first = text.split("\n", 1)[0]
        kept = [s for s in kept if not s.startswith(first + "\n")] + [text]
    out.write_text("".join(kept))
    print(f"rewrote the {device} tables in {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=Path, nargs="*", default=[])
    p.add_argument("--kernels", type=Path)
    p.add_argument("--kernels-later", type=Path, nargs="*", default=[],
                   help="later kernels.py runs (say, tchbook alone after a change), each a table of its own "
                        "after --kernels's")
    p.add_argument("--first-requests", type=Path,
                   help="kernels.py --first-requests JSON: tchbook's first requests of fresh kernels")
    p.add_argument("--dep", type=Path, help="dep.py JSON: `:dep` next to `cargo build`")
    p.add_argument("--first-build", type=Path,
                   help="first_build.py JSON: the main command from a fresh machine to executed notebooks")
    p.add_argument("--notes", type=Path, help="markdown appended as the Notes section")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--command", default="scripts/bench")
    p.add_argument("--load", default="", help="load averages seen before/after, for the header")
    p.add_argument("--replace-device", metavar="DEVICE",
                   help="rewrite only DEVICE's training tables (from --train) in the existing --out")
    args = p.parse_args()
    if args.replace_device:
        replace_device(args.out, args.replace_device, args.train, args.notes)
        return

    kernels = json.loads(args.kernels.read_text()) if args.kernels and args.kernels.exists() else None
    m = machine(kernels.get("evcxr_version") if kernels else None)
    if kernels and "tchbook" in kernels["kernels"]:
        info = kernels["kernels"]["tchbook"].get("kernel_info") or {}
        m["tchbook"] = f"{info.get('implementation', 'tchbook')} {info.get('implementation_version', '')}".strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    lines = ["# tchbook benchmarks\n",
             f"Written by `{args.command}` on {now} (commit {m['commit']}). Benchmarks, not tests: "
             "the numbers depend on the machine and on whatever else runs on it.\n",
             "| machine | |", "| --- | --- |",
             f"| CPU | {m['cpu']}, {m['cores']} cores |",
             f"| memory | {m['memory']} |",
             f"| GPU | {m['gpu']} |",
             f"| OS | {m['os']} |",
             f"| rustc | {m['rustc']} |",
             f"| tch | {m['tch']} (libtorch from the torch wheel) |",
             f"| torch | {m['torch']} (Python {m['python']}) |",
             f"| evcxr_jupyter | {m['evcxr']} |"]
    if "tchbook" in m:
        lines.append(f"| tchbook | {m['tchbook']} |")
    if args.load:
        lines.append(f"| load average | {args.load} |")
    lines.append("")
    # CPU before CUDA, and each device's runs oldest first, however the files were named or listed.
    trains = sorted((json.loads(t.read_text()) for t in args.train if t.exists()),
                    key=lambda t: (t["device"] != "cpu", t["device"], t.get("started", "")))
    devices = {t["device"] for t in trains}
    for train in trains:
        dated = sum(t["device"] == train["device"] for t in trains) > 1
        lines.extend(train_section(train, dated))
        lines.append("")
    if kernels:
        lines.extend(kernel_section(kernels))
        lines.append("")
    for later in args.kernels_later:
        if later.exists():
            lines.extend(kernel_section(json.loads(later.read_text())))
            lines.append("")
    firsts = json.loads(args.first_requests.read_text()) \
        if args.first_requests and args.first_requests.exists() else kernels
    if firsts and any("first_requests" in r for r in firsts["kernels"].values()):
        lines.extend(first_requests_section(firsts))
        lines.append("")
    if args.dep and args.dep.exists():
        lines.extend(dep_section(json.loads(args.dep.read_text())))
        lines.append("")
    if args.first_build and args.first_build.exists():
        lines.extend(first_build_section(json.loads(args.first_build.read_text())))
        lines.append("")
    # A CUDA table measured elsewhere (scripts/gpu-check --apply) names its machine in its note.
    if m["gpu"] == "none" and "cuda" not in devices:
        lines.append(NO_CUDA_TABLE + "\n")
    if args.notes and args.notes.exists():
        lines.append(args.notes.read_text().rstrip() + "\n")
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()