"""Where the `tchbook` binary and this Python's libtorch are: the one place the package reads them.

The binary is the one this wheel installed into the environment's scripts folder (where pip puts
maturin's `bin` bindings: `bin/` of a venv, `~/.local/bin` for `pip install --user`), else the
first `tchbook` on PATH; `TCHBOOK_BIN` names another (the test suite points it at the binary under
test). libtorch is this Python's `torch` package, found without importing torch (a second and
600 MB): the Rust kernel then links the very libtorch the Python side has, and `python -m tchbook
install` pre-builds the prelude for the torch the notebooks will use.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sysconfig
from pathlib import Path

BINARY_ENV = "TCHBOOK_BIN"
LIBTORCH_ENV = "LIBTORCH"
NAME = "tchbook"


def binary() -> str:
    """The `tchbook` executable; the error says how to get one."""
    named = os.environ.get(BINARY_ENV)
    if named:
        if os.access(named, os.X_OK):
            return named
        raise FileNotFoundError(f"{BINARY_ENV} is set to {named!r}, which is not an executable file: "
                                f"point it at a tchbook binary or unset it")
    schemes = [None] + [s for s in (f"{os.name}_user",) if s in sysconfig.get_scheme_names()]
    for scheme in schemes:
        scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        candidate = Path(scripts) / NAME
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(NAME)
    if found:
        return found
    raise FileNotFoundError(
        "the tchbook binary was not found in this Python's scripts folder or on PATH: install the "
        "tchbook wheel into this Python (`pip install tchbook-*.whl`; the README's 'Hosted "
        "notebooks' section says how to build it), or set TCHBOOK_BIN to a tchbook binary")


def libtorch() -> str | None:
    """This Python's `torch/` package folder (it holds lib/ and include/), if it has torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    # Resolved: the same torch reached through a link must give the same LIBTORCH (the build
    # cache's dependencies are fingerprinted with it).
    folder = Path(list(spec.submodule_search_locations)[0]).resolve()
    return str(folder) if (folder / "lib").is_dir() else None


def library_path(value: str) -> str:
    """`value` (a loader path) without its empty or relative entries: the loader reads an empty
    entry (a leading or trailing `:`) as the current directory, and the kernel starts in the
    notebook's folder, where a planted `libc.so.6` would then run inside it."""
    return os.pathsep.join(entry for entry in value.split(os.pathsep) if os.path.isabs(entry))


def kernel_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the binary: `base` (default: ours) with LIBTORCH set to this Python's
    torch when it is not set already, and no loader path entry that names the current folder."""
    env = dict(os.environ if base is None else base)
    if "LD_LIBRARY_PATH" in env:
        clean = library_path(env["LD_LIBRARY_PATH"])
        if clean:
            env["LD_LIBRARY_PATH"] = clean
        else:
            del env["LD_LIBRARY_PATH"]
    if not env.get(LIBTORCH_ENV):
        found = libtorch()
        if found:
            env[LIBTORCH_ENV] = found
    return env
