"""ZMTP 3 on the wire, for tests that play a hostile peer or sit between a client and the kernel:
greetings and frames as bytes, a reader of a recorded stream, and a recording relay.

Only what the tests need: a frame is `(flags, body)`; flags 0x01 MORE, 0x02 LONG, 0x04 COMMAND
(ZMTP 3.0, RFC 23).
"""
from __future__ import annotations

import socket
import struct
import threading
import time

COMMAND = 0x04


def greeting(mechanism: bytes = b"CURVE", as_server: bool = False) -> bytes:
    g = bytearray(64)
    g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
    g[12:12 + len(mechanism)] = mechanism
    g[32] = int(as_server)
    return bytes(g)


def frame(body: bytes, command: bool = False, more: bool = False) -> bytes:
    flags = (COMMAND if command else 0) | (0x01 if more else 0)
    if len(body) > 255:
        return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def frames(stream: bytes) -> list[tuple[int, bytes]]:
    """The whole frames of a recorded stream, after its 64-byte greeting."""
    out, i = [], 64
    while i < len(stream):
        flags = stream[i]
        if flags & 0x02:
            if i + 9 > len(stream):
                break
            n, h = struct.unpack(">Q", stream[i + 1:i + 9])[0], 9
        else:
            if i + 2 > len(stream):
                break
            n, h = stream[i + 1], 2
        if i + h + n > len(stream):
            break
        out.append((flags, bytes(stream[i + h:i + h + n])))
        i += h + n
    return out


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s


def closed_by_peer(s: socket.socket, within: float) -> bool:
    """Whether the peer closes (or resets) `s` within `within` seconds, reading what it sends."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not s.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
    return False


def read_for(s: socket.socket, seconds: float) -> bytes:
    """Everything the peer sends on `s` within `seconds` (less if it closes)."""
    got = bytearray()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        got += chunk
    return bytes(got)


class Relay:
    """A TCP relay on a loopback port in front of `target_port`: every connection is passed
    through both ways and recorded (`c2s`, `s2c`, all connections together). `hold()` makes it
    keep a copy of each client frame that follows, for `inject()` to send again on the live
    connection, as a man in the middle would replay them."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.c2s = bytearray()
        self.s2c = bytearray()
        self.server_closed = threading.Event()
        self._held: list[bytes] | None = None
        self._upstream: socket.socket | None = None
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:  # the kernel is gone (a client reconnecting after the test)
                client.close()
                continue
            self._upstream = upstream
            threading.Thread(target=self._client_side, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            data = _recv(src)
            if not data:
                self.server_closed.set()
                _shutdown(src, socket.SHUT_RDWR)
                _shutdown(dst, socket.SHUT_RDWR)
                return
            with self._lock:
                self.s2c += data
            try:
                dst.sendall(data)
            except OSError:
                return

    def _client_side(self, src: socket.socket, dst: socket.socket) -> None:
        """Client to kernel, frame by frame once the greeting is through, so frames can be held."""
        pending = bytearray()
        greeted = False
        while True:
            data = _recv(src)
            if not data:
                _shutdown(dst, socket.SHUT_WR)
                return
            with self._lock:
                self.c2s += data
            pending += data
            if not greeted:
                if len(pending) < 64:
                    continue
                greeted = True
                head = bytes(pending[:64])
                del pending[:64]
                dst.sendall(head)
            while True:
                whole = _first_frame(pending)
                if whole is None:
                    break
                del pending[:len(whole)]
                with self._lock:
                    if self._held is not None:
                        self._held.append(whole)
                try:
                    dst.sendall(whole)
                except OSError:
                    return

    def hold(self) -> None:
        with self._lock:
            self._held = []

    def inject(self) -> int:
        """Sends the held frames to the kernel again, on the newest connection, until the kernel
        closes it; how many frames were held."""
        with self._lock:
            held, self._held = self._held or [], None
        self.server_closed.clear()
        for whole in held:
            try:
                self._upstream.sendall(whole)
            except OSError:  # closed by the kernel: what a replay should get
                break
        return len(held)

    def close(self) -> None:
        self._listener.close()


def _recv(s: socket.socket) -> bytes:
    """What `s` has (b"" once it is closed or reset)."""
    try:
        return s.recv(65536)
    except OSError:
        return b""


def _shutdown(s: socket.socket, how: int) -> None:
    try:
        s.shutdown(how)
    except OSError:
        pass


def _first_frame(buf: bytearray) -> bytes | None:
    if not buf:
        return None
    if buf[0] & 0x02:
        if len(buf) < 9:
            return None
        n, h = struct.unpack(">Q", bytes(buf[1:9]))[0], 9
    else:
        if len(buf) < 2:
            return None
        n, h = buf[1], 2
    if len(buf) < h + n:
        return None
    return bytes(buf[:h + n])
