"""The wheel's Python kernel as a hosted notebook runs it, shared by the tests/test_hosted*.py files:
its kernelspec's name, a notebook executed on it through nbclient acting as a front end with an
input box (`executed`, read through `Run`), and a client of it with `%load_ext tchbook` run. The
`hosted` fixture (conftest.py) makes the venv and the kernelspec."""
from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import nbformat

KERNEL = "python3-tchbook-wheel"
CELL_TIMEOUT_S = 900
# What the notebook's input cell is answered with.
NAME = "Ada"


def executed(path: Path, hosted: dict, skip_tag: str = "skip-execution", interrupt_tag: str | None = None):
    """Runs a notebook on the wheel's venv kernel; returns (notebook, recorder)."""
    from nbclient import NotebookClient

    class Recorder(NotebookClient):
        """nbclient as a front end that has an input box and an interrupt button: it answers
        input_request with NAME, interrupts the cell tagged `interrupt_tag` once it printed
        "started", and keeps (time, msg_type, content) of every iopub message per cell and each
        cell's execute_reply."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.messages: dict[int, list] = {}
            self.replies: dict[int, dict] = {}
            self.prompts: list[dict] = []
            self.interrupt_sent_at = None
            self.on_cell_executed = self._keep_reply

        def _keep_reply(self, cell, cell_index, execute_reply):
            self.replies[cell_index] = execute_reply["content"]

        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            kc.allow_stdin = True
            self._stdin = asyncio.ensure_future(self._answer_stdin())
            return kc

        async def _answer_stdin(self):
            while True:
                msg = await self.kc.stdin_channel.get_msg(timeout=None)
                if msg["msg_type"] == "input_request":
                    self.prompts.append(msg["content"])
                    self.kc.input(NAME)

        def process_message(self, msg, cell, cell_index):
            self.messages.setdefault(cell_index, []).append((time.monotonic(), msg["msg_type"], msg["content"]))
            if (interrupt_tag and interrupt_tag in cell.metadata.get("tags", []) and self.interrupt_sent_at is None
                    and msg["msg_type"] == "stream" and "started" in msg["content"].get("text", "")):
                self.interrupt_sent_at = time.monotonic()
                asyncio.ensure_future(self.km.interrupt_kernel())
            return super().process_message(msg, cell, cell_index)

    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    client = Recorder(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT_S, allow_errors=False,
                      skip_cells_with_tag=skip_tag, resources={"metadata": {"path": str(path.parent)}})
    with jupyter_path(hosted):
        client.execute(env=hosted["env"])
    return nb, client


@contextlib.contextmanager
def jupyter_path(hosted: dict):
    """The hosted kernelspec visible to this process's KernelSpecManager, for a while."""
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = hosted["env"]["JUPYTER_PATH"]
    try:
        yield
    finally:
        if before is None:
            del os.environ["JUPYTER_PATH"]
        else:
            os.environ["JUPYTER_PATH"] = before


class Run:
    def __init__(self, nb, client):
        self.nb = nb
        self.client = client

    def index(self, tag: str) -> int:
        found = [i for i, c in enumerate(self.nb.cells) if tag in c.metadata.get("tags", [])]
        assert len(found) == 1, f"expected one cell tagged {tag!r}, found {found}"
        return found[0]

    def outputs(self, tag: str) -> list:
        return self.nb.cells[self.index(tag)].outputs

    def messages(self, tag: str) -> list:
        return self.client.messages.get(self.index(tag), [])

    def kinds(self, tag: str) -> list[str]:
        return [kind for _, kind, _ in self.messages(tag)]

    def reply(self, tag: str) -> dict:
        return self.client.replies[self.index(tag)]

    def text(self, tag: str, name: str = "stdout") -> str:
        return "".join(o.get("text", "") for o in self.outputs(tag) if o.output_type == "stream" and o.name == name)

    def error(self, tag: str) -> dict:
        errors = [o for o in self.outputs(tag) if o.output_type == "error"]
        assert len(errors) == 1, f"cell {tag!r}: expected one error output, got {self.outputs(tag)}"
        return errors[0]


@contextlib.contextmanager
def python_kernel_with_the_extension(hosted: dict):
    """A client of the wheel's Python kernel, started on its own, with `%load_ext tchbook` run."""
    from jupyter_client.manager import start_new_kernel

    with jupyter_path(hosted):
        km, kc = start_new_kernel(kernel_name=KERNEL, env=hosted["env"])
    try:
        reply = kc.execute_interactive("%load_ext tchbook", timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
