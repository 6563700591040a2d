"""tchbook: a Jupyter kernel for GPU tensor notebooks in Rust, and `%%rust` cells for Python ones.

The wheel carries the `tchbook` binary (on PATH once installed; `python -m tchbook install
--user` installs its kernelspec and pre-builds the prelude). In an IPython kernel,

    %load_ext tchbook

starts this notebook's Rust kernel and adds `%%rust` (a Rust cell), `%rust EXPR`,
`%rust_restart` and `%rust_status`; see `tchbook.bridge` for what is forwarded and how. Tab in
Rust is answered by the Rust kernel (`tchbook.completion`), and its variables are `rust` in the
Python namespace, as the Variables panel shows them (`tchbook.bridge.variables`).
"""
from __future__ import annotations

from .bridge import RustError, RustInterrupt, RustKernel, RustKernelDied, RustValue

__all__ = ["RustError", "RustInterrupt", "RustKernel", "RustKernelDied", "RustValue", "kernel"]

_kernel: RustKernel | None = None
# The Python kernel's usage_request, wrapped to add the Rust kernel's GPUs (bridge/usage.py).
_gpus = None


def kernel() -> RustKernel:
    """This Python process's Rust kernel (one per Python kernel), made on first use."""
    global _kernel
    if _kernel is None:
        _kernel = RustKernel()
    return _kernel


def load_ipython_extension(ipython) -> None:
    from . import completion
    from .magics import RustMagics

    from .bridge.usage import GpuForwarding
    from .bridge.variables import RustVariables

    rust = kernel()
    ipython.register_magics(RustMagics(ipython, rust))
    completion.install(ipython, rust)
    # The Rust variables, where the Python kernel's Variables panel lists the Python ones.
    ipython.push({"rust": RustVariables(rust)})
    # The Rust kernel's GPUs, where a GPU panel asks the Python kernel for them.
    global _gpus
    kernel_of_shell = getattr(ipython, "kernel", None)
    if kernel_of_shell is not None and _gpus is None:
        _gpus = GpuForwarding(kernel_of_shell, rust)
        _gpus.install()
    # Started now rather than in the first cell: the kernel's start overlaps the user's typing.
    rust.ensure()


def unload_ipython_extension(ipython) -> None:
    from . import completion

    global _gpus
    completion.uninstall(ipython)
    if _gpus is not None:
        _gpus.uninstall()
        _gpus = None
    if _kernel is not None:
        _kernel.shutdown()
