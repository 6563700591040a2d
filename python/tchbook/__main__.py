"""`python -m tchbook ARGS`: the `tchbook` binary with ARGS, for this Python.

`python -m tchbook install --user` is `tchbook install --user` with LIBTORCH set to this Python's
torch (unless set already), so the kernelspec and the pre-built prelude use the libtorch of the
Python that ran it, whichever Python is first on PATH; `--sys-prefix` means this Python's prefix
(`--prefix sys.prefix`), not that of the `python3` on PATH.
"""
from __future__ import annotations

import os
import sys

from ._locate import binary, kernel_env


def main(argv: list[str]) -> int:
    args = ["--prefix" if a == "--sys-prefix" else a for a in argv]
    if "--sys-prefix" in argv:
        args.insert(args.index("--prefix") + 1, sys.prefix)
    try:
        exe = binary()
    except FileNotFoundError as missing:
        print(f"tchbook: {missing}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(exe, [exe, *args], kernel_env())
    return 1  # not reached: execve replaces this process or raises


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
