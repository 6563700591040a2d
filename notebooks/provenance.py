#!/usr/bin/env python3
"""How a notebook's committed outputs were made, and the first-cell sentence that says so.

The tool that writes a notebook's outputs also writes, from what its run recorded, how they were
made into the notebook's metadata, `metadata.tchbook.provenance`:

- `notebooks/run.py --save` (a run through the tchbook kernel): `for_kernel_run` reads the run's
  own device card (CPU, cores, RAM, GPU, libtorch; this machine as /proc and nvidia-smi see it
  where the outputs hold none), the kernel's cell opt-level, the time and the checkout's commit;
- `tchbook export --merge` (an exported program's `--record`, as `scripts/gpu-check --apply`
  merges the GPU machine's run): the record's `ran` (the runner's time, CPU, cores, GPU, build
  profile, and the commit `tchbook export` saw), written by the kernel's src/export/merge.rs.

notebooks/build.py puts `sentence(provenance)` where a source says {{PROVENANCE}} (and `times`,
which build printed the times, where it says {{TIMES}}), and
`--keep-outputs` keeps the metadata with the outputs, so no one writes the sentence by hand.
Standard library only: build.py imports it.

    python notebooks/provenance.py NOTEBOOK.ipynb    # prints the sentence for a notebook
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

KEY = "provenance"
CARD_MIME = "application/vnd.tchbook.device-card+json"
# The kernel compiles cells at $TCHBOOK_OPT_LEVEL, 0 unless set (src/cellbuild/env.rs), and the
# prelude, tch and other dependencies optimised (src/cellbuild/cache/cargo-config.toml).
KERNEL_OPT_LEVEL_VAR = "TCHBOOK_OPT_LEVEL"
# Without outputs, a built notebook says where they come from.
NO_OUTPUTS = ("**This notebook has no committed outputs**: `scripts/run-notebooks --save` runs it "
              "through the tchbook kernel and writes them, with a sentence here saying how.")


def of(nb) -> dict | None:
    """The notebook's provenance, if its outputs have one."""
    found = nb.get("metadata", {}).get("tchbook", {}).get(KEY)
    return found if isinstance(found, dict) else None


def set_on(nb, provenance: dict) -> None:
    nb.setdefault("metadata", {}).setdefault("tchbook", {})[KEY] = provenance


def device(provenance: dict) -> str:
    """The device the notebook chose: the first CUDA device where the run saw a GPU."""
    return "cuda:0" if provenance.get("gpu") else "cpu"


def where(p: dict) -> str:
    """The machine in words: `a 16-core Linux x86_64 machine (CPU, RAM) with an NVIDIA H200;
    device `cuda:0` (libtorch 2.11.0)` (a test reads `device ...` there)."""
    details = ", ".join(x for x in (p.get("cpu"), f"{p['ram_gib']} GiB RAM" if p.get("ram_gib") else "") if x)
    system = f" {p['system']}" if p.get("system") else ""
    gpu = f"with an {p['gpu']}" if p.get("gpu") else "with no GPU"
    torch = f" (libtorch {p['libtorch']})" if p.get("libtorch") else ""
    return f"a {p.get('cores', '?')}-core{system} machine ({details}) {gpu}; device `{device(p)}`{torch}"


def sentence(p: dict | None) -> str:
    """The first cell's sentence about the committed outputs."""
    if p is None:
        return NO_OUTPUTS
    if p.get("program") == "kernel":
        level = p.get("opt_level", "0")
        how = ("were produced by a run through the tchbook kernel (`notebooks/run.py --save`), its cells "
               f"compiled as the kernel compiles them: at opt-level {level}, the prelude and tch optimised")
    else:
        built = ("`cargo build --release`: its cells at opt-level 3, where the kernel compiles cells at "
                 "opt-level 0, so the times it prints are the compiled program's, not a kernel run's"
                 if p.get("profile") == "release" else f"cargo's `{p.get('profile')}` profile")
        how = ("were produced by the notebook's exported program (`tchbook export`, built with "
               f"{built}), run with `--record` and merged back with `tchbook export --merge`")
        if p.get("completed") is False:
            how += " (the run stopped before its last cell)"
    commit = p.get("commit") or "an unknown commit"
    return (f"**The outputs committed with this notebook** {how}, on {where(p)}, on {p.get('at', '?')} "
            f"from commit {commit}.")


def times(p: dict | None) -> str:
    """Where a notebook prints times ({{TIMES}} in a source): which build printed them."""
    if p is None:
        return ""
    if p.get("program") == "kernel":
        return (f"The times in the committed outputs were printed by a run through the tchbook kernel, its "
                f"cells built at opt-level {p.get('opt_level', '0')}, as a notebook's cells are.")
    return ("The times in the committed outputs were printed by the notebook's exported program, its "
            "cells built at opt-level 3 (`cargo build --release`); the kernel builds a notebook's cells "
            "at opt-level 0, so a run in the kernel may print other times.")


def for_kernel_run(nb, started: datetime.datetime) -> dict:
    """The provenance of outputs a run through the kernel just wrote into `nb` (run.py --save):
    the machine as the run's own device card showed it (the last one in the notebook), else as
    `this_machine` sees it."""
    cards = [o["data"][CARD_MIME] for c in nb.get("cells", []) for o in c.get("outputs", [])
             if CARD_MIME in o.get("data", {})]
    p: dict = {"program": "kernel", "opt_level": os.environ.get(KERNEL_OPT_LEVEL_VAR, "0"),
               "at": started.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "commit": checkout_commit(), "system": f"{platform.system()} {platform.machine()}"}
    if cards:
        card = cards[-1] if isinstance(cards[-1], dict) else json.loads(cards[-1])
        cpu = card.get("cpu", {})
        p.update(cpu=cpu.get("model"), cores=cpu.get("cores"),
                 ram_gib=round(cpu["ram_bytes"] / 2**30) if cpu.get("ram_bytes") else None,
                 libtorch=card.get("torch_version"))
        gpus = [d["name"] for d in card.get("devices", []) if str(d.get("device", "")).startswith("cuda")]
        p["gpu"] = gpus[0] if card.get("cuda_available") and gpus else None
    else:
        p.update(this_machine())
    return {k: v for k, v in p.items() if v is not None}


def this_machine() -> dict:
    """This machine as provenance fields, for a kernel run whose outputs hold no device card:
    the CPU model, cores, RAM, the GPU nvidia-smi names, the libtorch under $LIBTORCH."""
    found: dict = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count() or 0}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                found["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                found["ram_gib"] = round(int(line.split()[1]) / 2**20)
                break
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            found["gpu"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        version = (Path(os.environ["LIBTORCH"]) / "version.py").read_text()
        found["libtorch"] = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", version).group(1)
    except (KeyError, OSError, AttributeError):
        pass
    return found


def checkout_commit() -> str | None:
    """This checkout's commit, as `tchbook export` records it (src/export/notebook.rs)."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True)
        except OSError:
            return None

    head = git("rev-parse", "--short=7", "HEAD")
    if head is None or head.returncode != 0 or not head.stdout.strip():
        return None
    # The notebooks being written and their pages are what this run makes, not what made it.
    diff = git("diff", "--quiet", "HEAD", "--", ":/", ":(exclude,top)notebooks/*.ipynb",
               ":(exclude,top)notebooks/*.html")
    clean = diff is not None and diff.returncode == 0
    return head.stdout.strip() + ("" if clean else " (with uncommitted changes)")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(sentence(of(json.loads(Path(name).read_text()))))
