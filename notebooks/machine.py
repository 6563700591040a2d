#!/usr/bin/env python3
"""This machine, in words: what notebooks/provenance.py says a kernel run's outputs ran on where
the run showed no device card of its own.

    python notebooks/machine.py    # prints the description of this machine

Set LIBTORCH (the torch package's folder) for the libtorch version.
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path


def machine_description() -> str:
    """What the committed outputs ran on, in words: CPU model, cores, RAM, GPU if any."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f", {int(line.split()[1]) / 2**20:.0f} GiB RAM"
                break
    except OSError:
        pass
    gpu = os.environ.get("TCHBOOK_GPU_NAME", "")
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            gpu = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    cores = os.cpu_count() or 0
    where = f"a {cores}-core {platform.system()} {platform.machine()} machine ({cpu}{ram})"
    torch = torch_version()
    lib = f" (libtorch {torch})" if torch else ""
    if gpu:
        return f"{where} with an {gpu}; device `cuda:0`{lib}"
    return f"{where} with no GPU; device `cpu`{lib}"


def torch_version() -> str:
    """The libtorch the kernel runs with: the torch wheel's version file under $LIBTORCH."""
    libtorch = os.environ.get("LIBTORCH")
    if not libtorch:
        return ""
    try:
        text = (Path(libtorch) / "version.py").read_text()
    except OSError:
        return ""
    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text)
    return m.group(1) if m else ""


if __name__ == "__main__":
    print(machine_description())
