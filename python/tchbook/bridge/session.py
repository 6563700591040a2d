"""What a cell and the comm relay need of the Rust kernel they serve, as a typing protocol, so that
`cell.py` and `widgets.py` depend on this module rather than on `kernel.py`, which builds them:
the bridge's modules import in one direction (`kernel` -> `cell`, `widgets` -> `session`)."""
from __future__ import annotations

import threading
from typing import Any, Protocol


class Relay(Protocol):
    """The comm relay as a cell uses it (`widgets.CommRelay`)."""

    def from_rust(self, msg: dict) -> None: ...

    def view(self, data: dict) -> dict: ...


class Session(Protocol):
    """The running Rust kernel (`kernel.RustKernel`) as its cells and its comm relay see it."""

    kc: Any  # jupyter_client's BlockingKernelClient, or None once the kernel is gone
    cells: int
    relay: Relay
    _lock: threading.Lock

    def interrupt(self) -> None: ...

    def alive(self) -> bool: ...

    def exit_status(self) -> str: ...

    def our_display_id(self, rust_id: str) -> str: ...
