"""The Rust kernel's variables in the Python kernel's namespace, as `rust`: where the Python
kernel's Variables panel (ipykernel's debugger) lists `rust` with the Rust variables' names, and
expanding it lists each with the Rust kernel's one-line summary (`Tensor[64, 10] f32 cpu 2.5 KiB`),
expanding one of those its fields (shape, dtype, device, ...). In code, `rust.x` is that summary's
object and `dir(rust)` the names.

The values are the Rust kernel's answers to the debug requests JupyterLab's own Variables panel
sends a native tchbook kernel (`inspectVariables`, `variables`), asked on its control channel
when something reads them and kept until the next Rust cell ends: the panel reads them after
every message of every Python cell, and a Python cell never changes a Rust variable."""
from __future__ import annotations

import queue
import time

# A Rust kernel that does not answer in this long is busy with a cell: the panel then shows
# what it had.
ASK_TIMEOUT_S = 2.0


class RustVariable:
    """One Rust variable as the Rust kernel summarises it; its fields are its attributes."""

    def __init__(self, kernel, name: str, value: str, reference: int):
        self._kernel = kernel
        self._name = name
        self._value = value
        self._reference = reference
        self._fields: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._fields is None:
            answer = self._kernel.debug("variables", {"variablesReference": self._reference}) \
                if self._reference else None
            self._fields = {v["name"]: v["value"] for v in (answer or {}).get("variables", [])}
        return self._fields

    def __repr__(self) -> str:
        return self._value

    def __dir__(self) -> list[str]:
        return sorted(self._load())

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        fields = self._load()
        if name not in fields:
            raise AttributeError(f"the Rust variable {self._name} has no field {name!r} here "
                                 f"(it has {', '.join(sorted(fields)) or 'none'})")
        return fields[name]


class RustVariables:
    """`rust` in the Python namespace: the Rust kernel's variables, by name."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._seen_cells = -1
        self._variables: dict[str, RustVariable] = {}

    def _load(self) -> dict[str, RustVariable]:
        kernel = self._kernel
        if kernel.cells != self._seen_cells:
            answer = kernel.debug("inspectVariables", {})
            if answer is not None:
                self._variables = {
                    v["name"]: RustVariable(kernel, v["name"], v["value"], v.get("variablesReference", 0))
                    for v in answer.get("variables", [])
                    if v.get("evaluateName")  # not the "a cell is running" note
                }
                self._seen_cells = kernel.cells
        return self._variables

    def __dir__(self) -> list[str]:
        return sorted(self._load())

    def __getattr__(self, name: str) -> RustVariable:
        if name.startswith("_"):
            raise AttributeError(name)
        variables = self._load()
        if name not in variables:
            raise AttributeError(f"no Rust variable {name!r} (the Rust kernel has "
                                 f"{', '.join(sorted(variables)) or 'none'})")
        return variables[name]

    def __repr__(self) -> str:
        names = sorted(self._load())
        return f"Rust variables: {', '.join(names)}" if names else "Rust variables: none yet"


def ask_debug(kc, command: str, arguments: dict, timeout: float = ASK_TIMEOUT_S) -> dict | None:
    """A debug_request to a kernel on its control channel; the response's body, or None when it
    did not answer in time or refused."""
    msg = kc.session.msg("debug_request", {"type": "request", "seq": 1, "command": command,
                                           "arguments": arguments})
    kc.control_channel.send(msg)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            reply = kc.get_control_msg(timeout=left)
        except queue.Empty:
            return None
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            content = reply["content"]
            return content.get("body") if content.get("success") else None
    return None
