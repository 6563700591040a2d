"""The Rust kernel's widgets in the Python kernel's front end.

A Rust widget is a comm the Rust kernel opens (target `jupyter.widget`, ipywidgets' protocol). The
front end talks to the Python kernel only, so each such comm is opened again on the Python
kernel's comm manager, under an id of its own (comm ids, like display ids, are global to a front
end, and the Rust kernel's may be reused after it restarts), and messages are forwarded both
ways:

- the Rust kernel's `comm_open`, `comm_msg` (an `update` set from Rust, the echo of a change) and
  `comm_close` are sent on the Python comm, with every `IPY_MODEL_<id>` reference in their state
  (a widget's layout and style, a box's children) and the `model_id` of each widget view mapped
  to the Python ids;
- the front end's messages on that comm (a slider moved, a button clicked, `request_state` from a
  reloaded page, `comm_close`) go to the Rust kernel's shell with the ids mapped back.

The Rust kernel's iopub is read while a `%%rust` cell runs (`cell.py` hands comm messages here,
whatever their parent) and, between cells, by a thread of this module, so a callback's update made
after the cell ended still reaches the front end. ipykernel itself handles a front end's comm
messages only between cells: a widget moved while a `%%rust` cell runs reaches the Rust kernel when
the cell ends (the native kernel passes it on at once).
"""
from __future__ import annotations

import threading
import uuid
from typing import Any

from .session import Session

WIDGET_TARGET = "jupyter.widget"
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
MODEL_REF = "IPY_MODEL_"
COMM_MESSAGES = ("comm_open", "comm_msg", "comm_close")
# How long the thread that reads the Rust kernel's iopub between cells waits for a message.
POLL_S = 0.05


class CommRelay:
    """The Rust kernel's open comms, each with its Python twin."""

    def __init__(self, kernel: Session):
        self.kernel = kernel
        self.ours: dict[str, Any] = {}  # Rust comm id -> the Python comm
        self.to_ours: dict[str, str] = {}  # Rust comm id -> Python comm id
        self.to_theirs: dict[str, str] = {}  # Python comm id -> Rust comm id
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- ids --------------------------------------------------------------------------------

    def our_id(self, rust_id: str) -> str:
        mapped = self.to_ours.get(rust_id)
        if mapped is None:
            mapped = uuid.uuid4().hex
            self.to_ours[rust_id] = mapped
            self.to_theirs[mapped] = rust_id
        return mapped

    def ours_in(self, value: Any) -> Any:
        """`value` with every model reference to a Rust comm made a reference to its twin."""
        return _mapped(value, self.our_id)

    def theirs_in(self, value: Any) -> Any:
        """`value` with every model reference to a Python twin made one to its Rust comm."""
        return _mapped(value, lambda ours: self.to_theirs.get(ours, ours))

    def view(self, data: dict) -> dict:
        """A display's bundle, with its widget view (if any) pointing at the Python twin."""
        view = data.get(VIEW_MIME)
        if not isinstance(view, dict) or "model_id" not in view:
            return data
        data = dict(data)
        data[VIEW_MIME] = dict(view, model_id=self.our_id(str(view["model_id"])))
        return data

    # --- from the Rust kernel -----------------------------------------------------------------

    def from_rust(self, msg: dict) -> None:
        """One of the Rust kernel's comm messages, re-sent on the Python side."""
        kind, content = msg["msg_type"], msg["content"]
        rust_id = content.get("comm_id")
        if not isinstance(rust_id, str):
            return
        data = self.ours_in(content.get("data") or {})
        metadata = msg.get("metadata") or {}
        if kind == "comm_open":
            if content.get("target_name") != WIDGET_TARGET:
                return
            from comm import create_comm

            twin = create_comm(comm_id=self.our_id(rust_id), target_name=WIDGET_TARGET,
                               data=data, metadata=metadata)
            twin.on_msg(lambda m, rust_id=rust_id: self._front_end_msg(rust_id, m))
            twin.on_close(lambda m, rust_id=rust_id: self._front_end_close(rust_id, m))
            self.ours[rust_id] = twin
        elif kind == "comm_msg" and rust_id in self.ours:
            self.ours[rust_id].send(data=data, metadata=metadata)
        elif kind == "comm_close" and rust_id in self.ours:
            self.ours.pop(rust_id).close(data=data)

    # --- from the front end -------------------------------------------------------------------

    def _front_end_msg(self, rust_id: str, msg: dict) -> None:
        data = self.theirs_in(msg.get("content", {}).get("data") or {})
        self._to_rust("comm_msg", {"comm_id": rust_id, "data": data})

    def _front_end_close(self, rust_id: str, msg: dict) -> None:
        self.ours.pop(rust_id, None)
        data = self.theirs_in(msg.get("content", {}).get("data") or {})
        self._to_rust("comm_close", {"comm_id": rust_id, "data": data})

    def _to_rust(self, kind: str, content: dict) -> None:
        kernel = self.kernel
        # A comm message has no reply; the lock keeps the shell socket to one thread at a time.
        with kernel._lock:
            kc = kernel.kc
            if kc is None or not kernel.alive():
                return
            kc.shell_channel.send(kc.session.msg(kind, content))

    # --- life -------------------------------------------------------------------------------

    def forget(self) -> None:
        """The Rust kernel is gone (restarted, or this process exits): its comms are forgotten.
        Their Python twins are left open, so the front end keeps drawing each widget as it last
        was (closing them would blank every widget output of the notebook); a change made to one
        now reaches a Rust kernel that answers nothing."""
        self.ours.clear()
        self.to_ours.clear()
        self.to_theirs.clear()

    def start_reading(self) -> None:
        """Reads the Rust kernel's iopub between cells, on a thread of its own."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._read_between_cells,
                                        name="tchbook-widgets", daemon=True)
        self._thread.start()

    def stop_reading(self) -> None:
        self._stop.set()

    def _read_between_cells(self) -> None:
        kernel = self.kernel
        while not self._stop.is_set():
            # A running cell holds the lock and reads iopub itself.
            if not kernel._lock.acquire(timeout=POLL_S):
                continue
            try:
                kc = kernel.kc
                if kc is None:
                    pass
                elif kc.iopub_channel.socket.poll(int(POLL_S * 1000)):
                    while kc.iopub_channel.msg_ready():
                        msg = kc.iopub_channel.get_msg(timeout=0)
                        if msg["msg_type"] in COMM_MESSAGES:
                            self.from_rust(msg)
            except Exception:  # a kernel being restarted closes its channels under us
                pass
            finally:
                kernel._lock.release()
            self._stop.wait(POLL_S / 5)


def _mapped(value: Any, map_id) -> Any:
    if isinstance(value, str):
        if value.startswith(MODEL_REF):
            return MODEL_REF + map_id(value[len(MODEL_REF):])
        return value
    if isinstance(value, dict):
        return {key: _mapped(item, map_id) for key, item in value.items()}
    if isinstance(value, list):
        return [_mapped(item, map_id) for item in value]
    return value
