"""The Rust kernel's GPUs in the Python kernel's `usage_reply`, so that a GPU panel asking a Python
notebook (tchbook's JupyterLab extension, or anything reading the `gpus` list) shows the GPUs of
the Rust kernel behind `%%rust`, with its caching allocator's bytes: the Python kernel's own
answer (ipykernel's CPU and memory figures) is kept whole, and the Rust kernel's `gpus` added.

The Rust kernel is asked on its control channel, which it serves while a cell runs, through a
socket of its own made for the question (as jupyter-resource-usage makes a client per question),
so the question never shares sockets with a cell's client or the Variables panel's. A Rust kernel that
is not running, or does not answer within USAGE_TIMEOUT_S, adds nothing: the reply is then the
Python kernel's alone, which says that this kernel reports no GPUs. The question is asked on a
worker thread, so the Python kernel's control loop keeps serving meanwhile.
"""
from __future__ import annotations

import asyncio
import time

import zmq

# Well under the 10 s a usage panel waits for the whole reply.
USAGE_TIMEOUT_S = 2.0


def control_url(km) -> str:
    """The kernel's control address, as jupyter_client writes it for each transport."""
    info = km.get_connection_info()
    if info["transport"] == "tcp":
        return f"tcp://{info['ip']}:{info['control_port']}"
    return f"{info['transport']}://{info['ip']}-{info['control_port']}"


def ask_usage(km, timeout: float = USAGE_TIMEOUT_S) -> dict | None:
    """A kernel's usage_reply content, or None when it did not answer in time. Asked through a
    plain zmq socket of its own, signed with the kernel's session: jupyter_client's blocking
    clients share their manager's asyncio context, and one used from a second thread while the
    first waits on its own loses messages (seen here: a request that never reached the kernel,
    its client then waiting in vain; a plain socket asked the same kernel 195 times through 30
    cells without a loss)."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.linger = 0
    server_key = getattr(km, "curve_publickey", None)
    if server_key:
        # The bridge's Rust kernel is encrypted (CurveZMQ) where it can be: ask as its clients do.
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
        socket.curve_serverkey = server_key
    socket.connect(control_url(km))
    try:
        msg = km.session.send(socket, "usage_request", {})
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not socket.poll(int(left * 1000) + 1):
                return None
            _, parts = km.session.feed_identities(socket.recv_multipart())
            reply = km.session.deserialize(parts)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]
        return None
    finally:
        socket.close()


class GpuForwarding:
    """The Python kernel's usage_request handler, wrapped to add the Rust kernel's `gpus`."""

    def __init__(self, kernel, rust):
        self.kernel = kernel
        self.rust = rust
        self.original = kernel.control_handlers.get("usage_request")

    def install(self) -> None:
        # ipykernel < 6.9 has no usage_request: nothing to add to.
        if self.original is not None:
            self.kernel.control_handlers["usage_request"] = self.usage_request

    def uninstall(self) -> None:
        if self.original is not None and self.kernel.control_handlers.get("usage_request") == self.usage_request:
            self.kernel.control_handlers["usage_request"] = self.original

    async def usage_request(self, stream, ident, parent):
        gpus = await asyncio.get_running_loop().run_in_executor(None, self.rust.gpus)
        if gpus is None:
            return await self.original(stream, ident, parent)
        # ipykernel builds and sends its reply in one method; its session's `send` is where the
        # content passes. The wrapper changes only a usage_reply, so a message another thread
        # sends through the same session meanwhile goes out as it was.
        session = self.kernel.session
        send = session.send

        def send_with_gpus(stream_, msg_or_type, content=None, *args, **kwargs):
            if msg_or_type == "usage_reply":
                content = {**(content or {}), "gpus": gpus}
            return send(stream_, msg_or_type, content, *args, **kwargs)

        session.send = send_with_gpus
        try:
            return await self.original(stream, ident, parent)
        finally:
            del session.send
