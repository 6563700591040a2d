"""SIGINT while a Rust cell runs: counted, for the cell's message loop to pass on as an
`interrupt_request`, instead of raised between two receives (where it would lose a message)."""
from __future__ import annotations

import signal
import threading


class Interrupts:
    """While a Rust cell runs in the main thread: SIGINT counts instead of raising."""

    def __init__(self):
        self.pending = 0
        self._previous = None
        self._installed = False

    def _count(self, signum, frame) -> None:
        self.pending += 1

    def __enter__(self) -> "Interrupts":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._count)
            self._installed = True
        return self

    def __exit__(self, *exc) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def take(self) -> bool:
        taken, self.pending = self.pending > 0, 0
        return taken

    def pause(self) -> None:
        """Back to the handler outside (a KeyboardInterrupt), while `input()` waits."""
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)

    def resume(self) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._count)
