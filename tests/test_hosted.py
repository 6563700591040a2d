"""The hosted-notebook path (python/, README "Hosted notebooks"): the wheel, and `%%rust` cells in a
Python notebook, as a Colab or JupyterHub user gets them.

The wheel (scripts/test's, or built here) is installed into a fresh venv that holds only the
wheel, what pip installs with it, and ipykernel (which every hosted Python notebook has), with
torch linked in from the tooling venv (tests/wheel_venv.py). A kernelspec `python3-tchbook-wheel`
in a temporary JUPYTER_PATH entry starts that venv's ipykernel, and `tests/hosted/rust-cells.ipynb`
runs on it with nbclient, acting as a front end with an input box (nbclient itself has none) that records
every message the Python kernel sends, per cell, in order (tests/hosted_notebook.py). The wheel
itself is checked in test_hosted_wheel.py, `notebooks/colab-setup.ipynb` in test_hosted_colab.py,
and a front end's Tab, variables panel and widgets in test_hosted_frontend.py.

The Rust kernel behind the bridge is the wheel's binary; its build cache is the usual one
(`tchbook install`, which scripts/test runs first, fills it), so no cell compiles tch.
"""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from hosted_notebook import KERNEL, NAME, Run, executed, jupyter_path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "tests" / "hosted" / "rust-cells.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def bridged(hosted) -> Run:
    return Run(*executed(NOTEBOOK, hosted, interrupt_tag="interrupt"))


def ends_with_idle(kinds: list[str]) -> None:
    assert kinds[0] == "status" and kinds[-1] == "status", kinds
    assert "status" not in kinds[1:-1], f"a status message between busy and idle: {kinds}"


def test_streams_arrive_live_with_partial_lines_and_before_idle(bridged):
    messages = bridged.messages("stream")
    ends_with_idle([k for _, k, _ in messages])
    assert bridged.text("stream") == "hello from Rust\na partial line, finished after a pause\n"
    assert bridged.text("stream", "stderr") == "a line on stderr\n"
    # The partial line reached the front end while the Rust cell slept, not with its end.
    partial = next(t for t, kind, c in messages if kind == "stream" and "a partial line" in c["text"])
    rest = next(t for t, kind, c in messages if kind == "stream" and "finished after a pause" in c["text"])
    assert rest - partial > 1.0, f"the partial line came {rest - partial:.2f} s before the rest of the line"


def test_live_plot_and_progress_bar_update_in_place(bridged):
    messages = bridged.messages("live")
    ends_with_idle([k for _, k, _ in messages])
    shown = [c for _, kind, c in messages if kind == "display_data"]
    updates = [c for _, kind, c in messages if kind == "update_display_data"]
    assert len(shown) == 2, f"expected the plot and the bar shown once each: {[list(c['data']) for c in shown]}"
    ids = {c["transient"]["display_id"] for c in shown}
    assert len(ids) == 2 and all(i.startswith("tchbook-") for i in ids), ids
    assert len(updates) >= 3 and {c["transient"]["display_id"] for c in updates} == ids
    # After nbclient applied the updates: still two outputs, the finished plot and bar.
    outputs = bridged.outputs("live")
    assert [o.output_type for o in outputs] == ["display_data", "display_data"], outputs
    plot = next(o for o in outputs if "image/png" in o.data)
    bar = next(o for o in outputs if "text/html" in o.data and "progress" in o.data["text/html"])
    assert "30 points" in plot.data["text/plain"], plot.data["text/plain"]
    assert "30/30" in bar.data["text/plain"], bar.data["text/plain"]
    assert not any(m == "application/json" for o in outputs for m in o.data), "a JSON tree would hide the HTML"


def test_device_card_and_run_table_are_rich_outputs(bridged):
    card = [o for o in bridged.outputs("device-card") if o.output_type == "execute_result"]
    assert len(card) == 1 and "text/html" in card[0].data and "<table" in card[0].data["text/html"], card
    assert card[0].execution_count == bridged.nb.cells[bridged.index("device-card")].execution_count
    # The cell shows two displays: the run table and the epochs' progress bar.
    tables = [o for o in bridged.outputs("run-table")
              if o.output_type == "display_data" and "application/vnd.tchbook.run-table+json" in o.data]
    assert len(tables) == 1, f"the run table is one display, updated in place: {bridged.outputs('run-table')}"
    bars = [o for o in bridged.outputs("run-table")
            if o.output_type == "display_data" and "application/vnd.tchbook.progress+json" in o.data]
    assert len(bars) == 1, f"one progress bar for both runs: {bridged.outputs('run-table')}"
    html = tables[0].data["text/html"]
    assert html.count("<tr") >= 3, html  # a header row and one row per run
    assert any(k == "update_display_data" for k in bridged.kinds("run-table"))


def test_line_magic_returns_the_value(bridged):
    assert bridged.text("line-magic") == "RustValue 42 42\n"


def test_compile_error_is_a_python_exception_with_the_compilers_text(bridged):
    error = bridged.error("compile-error")
    assert error.ename == "CompilationError" and error.evalue == "[E0308] mismatched types", error
    text = ANSI.sub("", "\n".join(error.traceback))
    assert "expected `i32`, found `&str`" in text, text
    assert bridged.reply("compile-error")["status"] == "error"  # so "run all" stops here


def test_panic_is_a_python_exception_with_the_panics_text(bridged):
    error = bridged.error("panic")
    assert error.ename == "panic" and "index out of bounds" in error.evalue, error
    assert bridged.text("panic") == "before the panic\n"
    kinds = bridged.kinds("panic")
    assert kinds.index("stream") < kinds.index("error"), kinds
    assert bridged.reply("panic")["status"] == "error"


def test_a_torch_error_shows_the_message_and_the_call_without_cpp_frames(bridged):
    error = bridged.error("torch-error")
    assert error.ename == "TorchError", error
    assert error.evalue.startswith("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"), error
    text = "\n".join(error.traceback)
    assert "in `matmul`" in text and "let u = t.matmul(&t);" in text, text
    assert "frame #" not in text and "tensor_generated.rs" not in text, text


def test_rust_errors_are_catchable_in_python(bridged):
    assert bridged.text("caught") == "caught panic: caught in Python\n"


def test_input_prompts_in_the_front_end(bridged):
    assert bridged.client.prompts == [{"prompt": "Your name", "password": False}]
    assert bridged.text("input") == f"hello, {NAME}\n"


def test_interrupt_stops_the_rust_cell_and_keeps_variables(bridged):
    assert bridged.client.interrupt_sent_at is not None, "the interrupt cell never printed 'started'"
    error = bridged.error("interrupt")
    assert error.ename == "KeyboardInterrupt", error
    idle = bridged.messages("interrupt")[-1][0]
    assert idle - bridged.client.interrupt_sent_at < 10, "the Rust cell ran on after the interrupt"
    assert bridged.text("after-interrupt") == "after the interrupt: hello from Rust\n"


def test_status_restart_and_a_fresh_kernel(bridged):
    status = bridged.text("status")
    assert re.search(r"^Rust kernel: running, pid \d+, tchbook \d", status, re.M), status
    # Its ports are on loopback, which every user of the machine reaches: the bridge encrypts.
    assert re.search(r"^connection file: .*\.json, encrypted \(CurveZMQ\)$", status, re.M), status
    assert bridged.text("restart") == "Rust kernel restarted\n"
    error = bridged.error("after-restart")
    assert error.ename == "CompilationError" and "greeting" in error.evalue, error


def test_rust_kernel_is_gone_with_the_python_kernel(bridged, hosted):
    pid = int(re.search(r"pid (\d+)", bridged.text("status")).group(1))
    assert not running(pid), f"the Rust kernel {pid} outlived %rust_restart"
    # nbclient has shut the Python kernel down: the restarted Rust kernel went with it.
    left = kernels_of(hosted["venv"] / "bin" / "tchbook")
    assert not left, f"Rust kernels left after their Python kernel shut down: {left}"


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def kernels_of(binary: Path) -> list[int]:
    """The live `tchbook kernel` processes of this binary (its evaluation processes included:
    they are the same binary re-executed)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            exe = os.readlink(proc / "exe")
        except OSError:
            continue
        if exe == str(binary) and running(int(proc.name)):
            found.append(int(proc.name))
    return found


def test_rust_kernel_exits_when_the_python_kernel_is_killed(hosted):
    from jupyter_client.manager import start_new_kernel

    with jupyter_path(hosted):
        km, kc = start_new_kernel(kernel_name=KERNEL, env=hosted["env"])
    printed = []
    reply = kc.execute_interactive("%load_ext tchbook\nimport tchbook\nprint(tchbook.kernel().pid())",
                                   timeout=120, output_hook=printed.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    pid = int(next(m["content"]["text"] for m in printed if m["msg_type"] == "stream"))
    assert running(pid)
    os.kill(km.provisioner.process.pid, signal.SIGKILL)
    kc.stop_channels()
    deadline = time.monotonic() + 15
    while kernels_of(hosted["venv"] / "bin" / "tchbook") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(pid), "the Rust kernel did not exit within 15 s of its Python kernel's death"
    assert not kernels_of(hosted["venv"] / "bin" / "tchbook"), "its evaluation process outlived it"
    km.cleanup_resources()
