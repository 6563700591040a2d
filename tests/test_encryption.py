"""Transport encryption: the kernel under jupyter_client's `transport_encryption` (CurveZMQ, as
ipykernel 7.4 offers it), with the real clients (jupyter_client, nbclient, libzmq through pyzmq)
and hostile peers on the wire.

Needs the `tchbook` kernelspec where this Python's Jupyter finds it (scripts/test installs it
into the venv), as every test here starts the kernel the way a front end does.
"""
from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

import nbformat
import pytest
import zmq
from jupyter_client import BlockingKernelClient, KernelManager
from jupyter_client.session import Session
from nbclient import NotebookClient

from zmtp_wire import Relay, closed_by_peer, connect, frame, frames, greeting, read_for

KERNEL = "tchbook"
FIRST_CELL_S = 300  # the first cell waits for the evaluation process to load the prelude
REPLY_S = 5  # as ipykernel is tried: a client that gets nothing within 5 s gets nothing


def start(encryption: str, log: Path | None = None) -> tuple[KernelManager, BlockingKernelClient]:
    """A kernel as a front end starts it, its log (stderr) in `log` if given."""
    km = KernelManager(kernel_name=KERNEL, transport_encryption=encryption)
    if log is None:
        km.start_kernel()
    else:
        with open(log, "wb") as stderr:
            km.start_kernel(stderr=stderr)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    run(kc, "let kept = 7;", FIRST_CELL_S)
    return km, kc


def stop(km: KernelManager, kc: BlockingKernelClient) -> None:
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def run(kc: BlockingKernelClient, code: str, timeout: float = 120) -> str:
    """Runs `code`; its stdout. Fails on anything but an `ok` reply."""
    outputs = []
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=outputs.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")


def still_serving(kc: BlockingKernelClient) -> None:
    """The kernel is alive, the first cell's variable is there, and this client is served."""
    assert run(kc, 'println!("kept={kept}");') == "kept=7\n"


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.fixture(scope="module")
def kernel_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("encrypted") / "kernel.log"


@pytest.fixture(scope="module")
def encrypted(kernel_log):
    km, kc = start("required", kernel_log)
    yield km, kc
    stop(km, kc)


def test_the_manager_provisions_keys_and_the_kernel_runs_a_notebook_with_them():
    notebook = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": KERNEL, "display_name": "Rust (tchbook)",
                                 "language": "rust"}})
    notebook.cells = [nbformat.v4.new_code_cell("let answer = 6 * 7;"),
                      nbformat.v4.new_code_cell('println!("answer={answer}");')]
    km = KernelManager(kernel_name=KERNEL, transport_encryption="required")
    NotebookClient(notebook, km=km, timeout=FIRST_CELL_S).execute()
    # The keys were in the connection file the kernel read.
    assert km.curve_publickey is not None and km.curve_secretkey is not None
    assert notebook.cells[1].outputs[0]["text"] == "answer=42\n"


def test_a_client_without_the_server_key_gets_nothing(encrypted):
    km, kc = encrypted
    info = km.get_connection_info()
    session = Session(key=info["key"], signature_scheme=info["signature_scheme"])
    address = f"tcp://{info['ip']}:{info['shell_port']}"
    context = zmq.Context.instance()

    def dealer(server_key: bytes | None) -> zmq.Socket:
        sock = context.socket(zmq.DEALER)
        sock.linger = 0
        if server_key is not None:
            sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
            sock.curve_serverkey = server_key
        sock.connect(address)
        return sock

    # The right HMAC key every time: only the transport's key differs.
    clients = {"no key (NULL)": dealer(None),
               "a wrong server key": dealer(zmq.curve_keypair()[0]),
               "the server's key": dealer(km.curve_publickey)}
    for sock in clients.values():
        session.send(sock, "kernel_info_request", {})
    deadline = time.monotonic() + REPLY_S
    answered = set()
    while time.monotonic() < deadline and len(answered) < len(clients):
        for name, sock in clients.items():
            if name not in answered and sock.poll(50):
                answered.add(name)
    for sock in clients.values():
        sock.close()
    assert answered == {"the server's key"}
    still_serving(kc)


def relayed_client(km: KernelManager, relay_shell: Relay, relay_iopub: Relay) -> BlockingKernelClient:
    info = dict(km.get_connection_info(), shell_port=relay_shell.port, iopub_port=relay_iopub.port)
    client = BlockingKernelClient()
    client.load_connection_info(info)
    client.start_channels()
    client.wait_for_ready(timeout=30)
    return client


@pytest.mark.parametrize("encryption", ["required", "disabled"])
def test_the_bytes_on_the_wire_hold_no_code_and_no_output(encryption):
    # "disabled" is the control: the same recording finds the plaintext there, so the test
    # would notice a kernel that sent it in clear.
    km, kc = start(encryption)
    try:
        shell, iopub = Relay(km.shell_port), Relay(km.iopub_port)
        client = relayed_client(km, shell, iopub)
        marker = secrets.token_hex(6)
        code = f'let zebra_{marker} = "okapi-{marker}-".repeat(3);\nprintln!("{{zebra_{marker}}}");'
        assert run(client, code) == f"okapi-{marker}-" * 3 + "\n"
        client.stop_channels()
        wire = bytes(shell.c2s + shell.s2c + iopub.c2s + iopub.s2c)
        assert len(wire) > 2000, "the relays carried the messages"
        found = [text for text in (f"zebra_{marker}", f"okapi-{marker}", "execute_request",
                                   "execute_reply", '"stream"') if text.encode() in wire]
        assert found == ([] if encryption == "required" else found) and (
            encryption == "required" or len(found) == 5), found
        still_serving(kc)
    finally:
        stop(km, kc)


def captured_handshake(km: KernelManager) -> tuple[bytes, bytes]:
    """A real client's HELLO and INITIATE to the shell port, as a relay records them."""
    relay = Relay(km.shell_port)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
    sock.curve_serverkey = km.curve_publickey
    sock.connect(f"tcp://127.0.0.1:{relay.port}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(frames(bytes(relay.c2s))) < 2:
        time.sleep(0.05)
    sock.close()
    relay.close()
    hello, initiate = (body for _, body in frames(bytes(relay.c2s))[:2])
    assert hello.startswith(b"\x05HELLO") and initiate.startswith(b"\x08INITIATE")
    return hello, initiate


def test_hostile_peers_are_dropped_before_any_message_and_the_kernel_goes_on(encrypted):
    km, kc = encrypted
    hello, initiate = captured_handshake(km)
    curve = greeting(b"CURVE")
    peers = {
        "a NULL peer (no encryption)": greeting(b"NULL") + frame(
            b"\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER", command=True),
        "a PLAIN peer": greeting(b"PLAIN"),
        "a MESSAGE before the handshake": curve + frame(b"\x07MESSAGE" + bytes(40)),
        "a truncated HELLO": curve + frame(hello[:100], command=True),
        "a HELLO whose box is not the server's": curve + frame(
            hello[:120] + secrets.token_bytes(80), command=True),
        "an oversized command": curve + bytes([0x06]) + (1 << 20).to_bytes(8, "big"),
        "an INITIATE without a HELLO": curve + frame(initiate, command=True),
    }
    for name, attack in peers.items():
        sock = connect(km.shell_port)
        sock.sendall(attack)
        assert closed_by_peer(sock, 5), name
        sock.close()

    # A replayed HELLO gets a WELCOME (the server cannot tell), but the INITIATE replayed after
    # it carries a cookie of another connection's key.
    sock = connect(km.shell_port)
    sock.sendall(curve + frame(hello, command=True))
    answer = read_for(sock, 2)
    assert [body[:8] for _, body in frames(answer)] == [b"\x07WELCOME"], answer[:80]
    sock.sendall(frame(initiate, command=True))
    assert closed_by_peer(sock, 5), "the replayed INITIATE"
    sock.close()

    still_serving(kc)


def test_a_flood_of_hellos_holds_no_memory_and_other_clients_go_on(encrypted, kernel_log):
    km, kc = encrypted
    time.sleep(1.1)  # past the log's one-second window of the tests before
    started, logged_before = time.monotonic(), len(kernel_log.read_bytes())
    hello, _ = captured_handshake(km)
    pid = km.provisioner.pid
    run(kc, "let _warm = 1;")
    before = rss_kib(pid)
    outputs: list[str] = []
    runner = threading.Thread(target=lambda: outputs.append(
        run(kc, 'for i in 0..3 { std::thread::sleep(std::time::Duration::from_millis(300)); }\n'
                'println!("ran beside the flood, kept={kept}");')))
    runner.start()
    refused = 0
    for batch in range(10):
        socks = []
        for _ in range(50):
            sock = connect(km.shell_port)
            # Real HELLOs of other connections: each costs the server a key agreement.
            sock.sendall(greeting(b"CURVE") + frame(hello, command=True) + frame(b"junk", command=True))
            socks.append(sock)
        for sock in socks:
            refused += closed_by_peer(sock, 5)
            sock.close()
    runner.join(60)
    assert refused == 500
    assert outputs == ["ran beside the flood, kept=7\n"]
    grown = rss_kib(pid) - before
    assert grown < 16 * 1024, f"the kernel grew by {grown} KiB over 500 refused handshakes"
    still_serving(kc)
    # Each refusal is logged, but at most one line a second: the flood cannot fill the log. The
    # count of those not written comes with the next line, which one more refusal a second after
    # the flood brings.
    time.sleep(1.1)
    late = connect(km.shell_port)
    late.sendall(greeting(b"CURVE") + frame(hello[:100], command=True))
    assert closed_by_peer(late, 5)
    late.close()
    flood_log = kernel_log.read_bytes()[logged_before:].decode(errors="replace")
    lines = [line for line in flood_log.splitlines() if "refused a CURVE handshake" in line]
    assert 2 <= len(lines) <= time.monotonic() - started + 2, lines
    assert any("more refused in the second before" in line for line in lines), lines


def test_a_replayed_message_frame_ends_that_connection_and_runs_nothing_twice(encrypted):
    km, kc = encrypted
    shell, iopub = Relay(km.shell_port), Relay(km.iopub_port)
    client = relayed_client(km, shell, iopub)
    run(client, "let mut runs = 0;")
    shell.hold()
    run(client, "runs += 1;")
    assert shell.inject() >= 6, "the execute_request's frames"
    assert shell.server_closed.wait(5), "the kernel kept a connection that replayed a frame"
    client.stop_channels()
    assert run(kc, 'println!("runs={runs}");') == "runs=1\n"
    still_serving(kc)
