"""The Rust kernel's GPUs through `%%rust`: a Python notebook's `usage_reply` (what a GPU panel
asks, on control) carries ipykernel's own figures and the `gpus` of the Rust kernel behind the
bridge, here from the stand-in NVML (tests/nvml_stand_in.py), also while a Rust cell runs; a Rust
kernel that is gone adds nothing, and the Python kernel keeps working.

Runs python/ from this checkout on this Python's ipykernel; the Rust kernel is $TCHBOOK_BIN (default
`$CARGO_TARGET_DIR/release/tchbook`)."""
from __future__ import annotations

import os
import queue
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from nvml_stand_in import GIB, StandIn, gpu_line

ROOT = Path(__file__).resolve().parent.parent
BINARY = os.environ.get("TCHBOOK_BIN") or str(Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
                                                / "release" / "tchbook")
COMPILE_S = 300


def usage(kc, timeout: float = 15) -> dict:
    msg = kc.session.msg("usage_request", {})
    kc.control_channel.send(msg)
    deadline = time.monotonic() + timeout
    while True:
        reply = kc.get_control_msg(timeout=max(deadline - time.monotonic(), 0.01))
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            assert reply["header"]["msg_type"] == "usage_reply", reply
            return reply["content"]


def run(kc, code: str, timeout: float = COMPILE_S) -> dict:
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]


@pytest.fixture
def python_kernel(tmp_path):
    nvml = StandIn(tmp_path)
    nvml.script(gpu_line(3, 42))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TCHBOOK_BIN=BINARY, **nvml.env())
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    yield km, kc, nvml
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def test_a_python_notebook_with_rust_cells_reports_the_rust_kernels_gpus(python_kernel):
    _, kc, nvml = python_kernel
    before = usage(kc)
    assert "gpus" not in before, before  # ipykernel alone reports none
    run(kc, "%load_ext tchbook")
    run(kc, "%%rust\nlet kept = 41;")
    reply = usage(kc)
    # ipykernel's own answer, whole: the Python kernel's process, not the Rust one's.
    assert reply["pid"] == before["pid"] and "cpu_count" in reply, reply
    [gpu] = reply["gpus"]
    assert (gpu["name"], gpu["memory_used"], gpu["utilization"]) == ("NVIDIA Stand-in H100", 3 * GIB, 42), gpu
    assert (gpu["driver"], gpu["cuda"]) == ("550.54.15", "12.4"), gpu

    # While a Rust cell runs, the Rust kernel's control channel still answers.
    msg_id = kc.execute("%%rust\nstd::thread::sleep(std::time::Duration::from_secs(8));")
    time.sleep(2)
    nvml.script(gpu_line(20, 97))
    during = usage(kc)
    assert during["gpus"][0]["memory_used"] == 20 * GIB, during
    while True:
        msg = kc.get_shell_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id:
            assert msg["content"]["status"] == "ok", msg["content"]
            break

    # The Rust kernel killed: the Python kernel's own reply, and it keeps working.
    run(kc, "import os, signal, tchbook\nos.kill(tchbook.kernel().pid(), signal.SIGKILL)")
    deadline = time.monotonic() + 10  # until the bridge sees its child gone
    while "gpus" in (after := usage(kc)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "gpus" not in after and after["pid"] == before["pid"], after
    assert run(kc, "x = 6 * 7")["status"] == "ok"
    with pytest.raises(queue.Empty):
        kc.get_control_msg(timeout=0.2)  # no stray replies left behind
