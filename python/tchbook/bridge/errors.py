"""The Python exceptions a Rust cell's failure becomes: its `error` message, raised under the native
kernel's `ename` with its traceback, so that the Python cell fails as the Rust one did."""
from __future__ import annotations


class RustError(Exception):
    """A Rust cell failed: `ename`, `evalue` and `traceback` are the native kernel's own (the
    compiler's diagnostics, or the panic's message and place). IPython shows `traceback` as it
    is, colours included; `str(error)` is `evalue`. Each `ename` gets a subclass of this name
    (`CompilationError`, `panic`, `TorchError`, ...), so the error reads as natively."""

    def __init__(self, ename: str, evalue: str, traceback: list[str]):
        super().__init__(evalue)
        self.ename = ename
        self.evalue = evalue
        self.traceback = list(traceback)

    def _render_traceback_(self) -> list[str]:
        return self.traceback or [f"{self.ename}: {self.evalue}"]


class RustInterrupt(KeyboardInterrupt):
    """A Rust cell ended by an interrupt. A KeyboardInterrupt (so it stops "run all" and is not
    caught by `except Exception`), reported under the native kernel's name and traceback."""

    def __init__(self, evalue: str, traceback: list[str]):
        super().__init__(evalue)
        self.ename = "KeyboardInterrupt"
        self.evalue = evalue
        self.traceback = list(traceback)

    def _render_traceback_(self) -> list[str]:
        return self.traceback or [f"KeyboardInterrupt: {self.evalue}"]


# ipykernel reports `type(error).__name__` as the error's ename: make it the native one.
RustInterrupt.__name__ = "KeyboardInterrupt"


class RustKernelDied(RuntimeError):
    """The Rust kernel process exited (it was killed, or crashed) while a cell waited on it."""


_error_classes: dict[str, type] = {}


def error_for(content: dict) -> BaseException:
    """The Python exception for a Rust `error` message's content."""
    ename = content.get("ename") or "RustError"
    evalue = content.get("evalue") or ""
    traceback = content.get("traceback") or []
    if ename == "KeyboardInterrupt":
        return RustInterrupt(evalue, traceback)
    if not ename.isidentifier():
        return RustError(ename, evalue, traceback)
    cls = _error_classes.get(ename)
    if cls is None:
        # Named as the package names its own classes (bridge/__init__.py), so that a traceback
        # outside IPython reads `tchbook.bridge.CompilationError`.
        cls = type(ename, (RustError,), {"__module__": __package__, "__doc__": f"The Rust kernel's {ename} error."})
        _error_classes[ename] = cls
    return cls(ename, evalue, traceback)
