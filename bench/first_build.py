"""From a fresh machine to executed notebooks: the README's main command (`./scripts/run-notebooks`)
on a clean clone of this repository's HEAD, with nothing made before it, each step timed from the
command's own output as it prints it.

Nothing the command makes is shared with this machine's own: it runs with a new cargo home (every
crate downloaded), target directory, Python environment (`TCHBOOK_VENV`), build cache
(`TCHBOOK_CACHE_DIR`) and, unless --keep-pip-cache, pip cache (torch's wheel downloaded too), all
under one temporary folder removed afterwards. The toolchain (rustup's) and the system's Python
are the machine's, as on a fresh machine.

The steps, from the lines the command prints: the kernel's build (cargo's `Finished` line; the
Python environment is made beside it, and its stamp file says when it was ready), `tchbook
install` (from its first line to the notebooks' first: the build template, with the completion
index beside it, and its `Built in` and `Indexed in` lines), each notebook (notebooks/run.py's
`==>` and `ran in` lines). CPU time is that of every process the command waited for (rustc, the
kernels, pip, ...), from getrusage. The JSON keeps the lines, each with its time (cargo's line
per crate left out).

    python bench/first_build.py --out bench/results/first-build.json [--keep-pip-cache] [--workdir DIR]

A run that fails is not a measurement: the script exits 1 with the log's end, and writes nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["./scripts/run-notebooks"]

# What the command prints where a step ends or begins (scripts/run-notebooks, src/install.rs,
# notebooks/run.py).
BUILD_DONE = re.compile(r"^\s*Finished `release` profile")
INSTALL_START = re.compile(r"^Installed the tchbook kernelspec")
TEMPLATE_BUILT = re.compile(r"^Built in ")
# How long the index took, as install says: it says so after the build, however early it ended.
INDEXED = re.compile(r"^Indexed in ([0-9.]+)(ms|s)\b")
INDEX_RETRIED = re.compile(r"^The index beside the build failed")
NOTEBOOK_START = re.compile(r"^==> notebooks/(\S+\.ipynb) on ")
NOTEBOOK_DONE = re.compile(r"^    ran in \d+ s")
# Cargo's line per crate, left out of the log the results keep (the rest is what the steps are
# read from, so that they can be read again).
CARGO_PROGRESS = re.compile(r"^\s*(Compiling|Downloaded|Downloading|Updating|Locking|Adding|Blocking) ")


def log(*args):
    print("[first-build]", *args, file=sys.stderr, flush=True)


def fresh_environment(work: Path, keep_pip_cache: bool) -> dict[str, str]:
    """This process's environment with everything a fresh machine would not have taken out: the
    project's Python environment (on PATH, in LD_LIBRARY_PATH, `LIBTORCH`), its build cache and
    target directory, and the variables scripts/bench and scripts/env.sh export."""
    env = dict(os.environ)
    old_venv = env.get("TCHBOOK_VENV") or env.get("VIRTUAL_ENV")
    for name in list(env):
        if name.startswith("TCHBOOK_") or name in (
                "LIBTORCH", "VIRTUAL_ENV", "CARGO_TARGET_DIR", "CARGO_HOME", "PYTHONDONTWRITEBYTECODE",
                "PYTHONPATH", "PIP_CACHE_DIR", "JUPYTER_PATH"):
            del env[name]

    def without_old(value: str) -> str:
        keep = [p for p in value.split(os.pathsep) if p and not (old_venv and p.startswith(old_venv))
                and "site-packages/torch" not in p]
        return os.pathsep.join(keep)

    env["PATH"] = without_old(env.get("PATH", ""))
    cargo = shutil.which("cargo", path=env["PATH"]) or shutil.which("cargo")
    if not cargo:
        raise SystemExit("first_build.py: no cargo on PATH; a fresh machine has the Rust toolchain (rustup)")
    if Path(cargo).parent.as_posix() not in env["PATH"].split(os.pathsep):
        env["PATH"] = f"{Path(cargo).parent}{os.pathsep}{env['PATH']}"
    library_path = without_old(env.get("LD_LIBRARY_PATH", ""))
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    else:
        env.pop("LD_LIBRARY_PATH", None)
    env.update(CARGO_HOME=str(work / "cargo-home"), TCHBOOK_VENV=str(work / "venv"),
               TCHBOOK_CACHE_DIR=str(work / "build-cache"))
    if not keep_pip_cache:
        env["PIP_CACHE_DIR"] = str(work / "pip-cache")
    return env


def run_timed(clone: Path, env: dict[str, str], log_path: Path) -> tuple[int, float, float, list]:
    """Runs the main command in `clone`; returns its exit status, wall and CPU seconds, and each
    line it printed with the seconds since its start."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    lines = []
    with open(log_path, "w", encoding="utf-8") as log_file:
        process = subprocess.Popen(COMMAND, cwd=clone, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
        for line in process.stdout:
            at = time.monotonic() - started
            line = line.rstrip("\n")
            lines.append((round(at, 2), line))
            log_file.write(f"{at:8.1f} {line}\n")
            log_file.flush()
        status = process.wait()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return status, wall, cpu, lines


def first(lines: list, pattern: re.Pattern) -> float | None:
    return next((at for at, line in lines if pattern.search(line)), None)


def steps(lines: list, wall: float, venv_ready: float | None) -> dict:
    """The steps' times, from the lines the command printed."""
    build = first(lines, BUILD_DONE)
    install = first(lines, INSTALL_START)
    notebooks_start = first(lines, NOTEBOOK_START)
    missing = [name for name, at in (("cargo's Finished line", build), ("install's first line", install),
                                     ("the first notebook's line", notebooks_start)) if at is None]
    if missing:
        raise SystemExit(f"first_build.py: the command's output lacks {', '.join(missing)}: its format changed; "
                         "update the patterns at the top of this script")
    notebooks = {}
    current = None
    for at, line in lines:
        if m := NOTEBOOK_START.search(line):
            current = (m.group(1), at)
        elif current and NOTEBOOK_DONE.search(line):
            notebooks[current[0]] = round(at - current[1], 1)
            current = None
    template = first(lines, TEMPLATE_BUILT)
    indexed = [m for _, line in lines if (m := INDEXED.search(line))]
    index_s = float(indexed[-1].group(1)) / (1000 if indexed[-1].group(2) == "ms" else 1) if indexed else None
    return {
        "kernel_build_s": round(build, 1),
        "venv_ready_s": None if venv_ready is None else round(venv_ready, 1),
        # From the build's end: waiting for the Python environment where it was not ready yet.
        "install_s": round(notebooks_start - build, 1),
        "template_built_s": None if template is None else round(template - install, 1),
        "index_s": index_s,
        "index_beside_build": any("beside the build." in line for _, line in lines if INDEXED.search(line)),
        "index_attempts_failed": sum(1 for _, line in lines if INDEX_RETRIED.search(line)),
        "notebooks_s": round(wall - notebooks_start, 1),
        "notebooks": notebooks,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="where to write the JSON")
    p.add_argument("--workdir", type=Path, help="where to make the temporary folder (default: the system's)")
    p.add_argument("--keep-pip-cache", action="store_true",
                   help="let pip use this machine's cache (torch's wheel not downloaded again)")
    p.add_argument("--keep", action="store_true", help="leave the temporary folder (its path is printed)")
    args = p.parse_args(argv)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        log(f"note: uncommitted changes are not measured; the clone is of HEAD ({commit})")
    work = Path(tempfile.mkdtemp(prefix="tchbook-first-build-", dir=args.workdir))
    try:
        clone = work / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = fresh_environment(work, args.keep_pip_cache)
        load_before = os.getloadavg()
        started = datetime.datetime.now(datetime.timezone.utc)
        log(f"{started:%H:%M} UTC: {' '.join(COMMAND)} in a clean clone of {commit} under {work} "
            f"(1-minute load {load_before[0]:.2f}); the log is {work / 'run.log'}")
        status, wall, cpu, lines = run_timed(clone, env, work / "run.log")
        ended = datetime.datetime.now(datetime.timezone.utc)
        if status != 0:
            tail = "\n".join(line for _, line in lines[-40:])
            log(f"the main command failed (exit {status}) after {wall:.0f} s; its last lines:\n{tail}")
            args.keep = True
            return 1
        stamp = work / "venv" / ".tchbook-requirements"
        venv_ready = None
        if stamp.exists():
            venv_ready = stamp.stat().st_mtime - started.timestamp()
        result = {
            "command": " ".join(COMMAND),
            "commit": commit,
            "started": f"{started:%Y-%m-%d %H:%M} UTC",
            "ended": f"{ended:%Y-%m-%d %H:%M} UTC",
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
            "pip_cache": "kept" if args.keep_pip_cache else "fresh",
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "steps": steps(lines, wall, venv_ready),
            "log": [[at, line] for at, line in lines if not CARGO_PROGRESS.search(line)],
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        s = result["steps"]
        log(f"{wall:.0f} s ({wall / 60:.1f} min), {cpu:.0f} s of CPU: the kernel's build {s['kernel_build_s']:.0f} s, "
            f"install {s['install_s']:.0f} s, the notebooks {s['notebooks_s']:.0f} s; wrote {args.out}")
        return 0
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
