"""tchbook's GPU panel (labextension/), in JupyterLab as a person sees it: the status bar item and
the side panel for a tchbook kernel whose NVML is the stand-in (tests/nvml/libnvidia-ml.c, built
here with cc, answering from a script this test rewrites), redrawing while a cell runs; the
"reports no GPUs" state for ipykernel; the GPUs of a Python notebook's `%%rust` kernel, through
the bridge; and every bad reply a panel must survive (a GPU lost, NVML failing, fields missing, a
kernel that does not answer), from a scripted ipykernel (usage_kernel.py).

Screenshot: `gpu-panel.png`, the panel beside a running cell; the README shows it, copied by hand
into docs/screenshots/.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from labpage import KERNEL, Notebook
from nvml_stand_in import GIB, StandIn, gpu_line
from test_hosted import bridge_kernelspec

COMPILE_S = 300
STAND_IN = "tchbook-stand-in-gpu"
SCRIPTED = "python3-scripted-usage"
BRIDGED = "python3-tchbook-bridge-stand-in-gpu"
STATUS = ".tchbook-GpuStatus"
PANEL = "#tchbook-gpu-panel"


@pytest.fixture
def stand_in(lab, tmp_path) -> StandIn:
    """A kernelspec: the installed tchbook kernel, with the stand-in NVML in its environment."""
    nvml = StandIn(tmp_path)
    spec = KernelSpecManager().get_kernel_spec(KERNEL).to_dict()
    spec["display_name"] = "Rust (tchbook, stand-in GPUs)"
    spec["env"] = {**spec.get("env", {}), **nvml.env()}
    folder = lab.jupyter_path / "kernels" / STAND_IN
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps(spec))
    return nvml


def open_on(lab, context, name: str, cells: list[str], kernel: str, language: str) -> Notebook:
    """A notebook of `cells` on the kernelspec `kernel`, open in its tab."""
    lab.write_notebook(name, cells, kernelspec={"name": kernel, "display_name": kernel, "language": language})
    return Notebook.open(lab, context, name)


def open_panel(page):
    page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id='tchbook-gpu-panel']").click()
    panel = page.locator(PANEL)
    panel.wait_for()
    return panel


def wait_text(page, selector: str, pattern: str, timeout_s: float = 30) -> str:
    """Until the element's text matches `pattern` (a regular expression); its text."""
    page.wait_for_function(
        "([sel, pattern]) => new RegExp(pattern).test(document.querySelector(sel)?.textContent ?? '')",
        arg=[selector, pattern], timeout=timeout_s * 1000, polling=100)
    return page.locator(selector).first.text_content()


def points(page, series: str) -> int:
    return int(page.locator(f"{PANEL} path.tchbook-GpuChart-{series}").first.get_attribute("data-points"))


def test_status_bar_and_panel_show_the_gpus_and_redraw_while_a_cell_runs(lab, context, stand_in, screenshots):
    stand_in.script(gpu_line(3, 42))
    nb = open_on(lab, context, "gpu-panel.ipynb",
                 ["let kept = 41;", "std::thread::sleep(std::time::Duration::from_secs(25));\nkept + 1"],
                 STAND_IN, "rust")
    try:
        nb.wait_idle()
        nb.run_cell(0, timeout_s=COMPILE_S)
        page = nb.page
        status = wait_text(page, STATUS, r"GPU0 3\.0 GiB/80\.0 GiB 42%")
        assert "⚠" not in status, status
        panel = open_panel(page)
        text = wait_text(page, PANEL, r"NVIDIA Stand-in H100")
        for expected in ["GPU 0 · NVIDIA Stand-in H100", "driver 550.54.15 · CUDA 12.4",
                         "3.0 GiB of 80.0 GiB", "42%", "no CUDA memory of its own here"]:
            assert expected in text, text

        # A running cell: the figures change under it, and the panel keeps drawing them.
        nb.start_cell(1)
        before = points(page, "used")
        for step in range(1, 9):
            stand_in.script(gpu_line(3 + 6 * step, min(42 + 7 * step, 100)))
            time.sleep(1.5)
        wait_text(page, STATUS, r"GPU0 51\.0 GiB/80\.0 GiB 98%")
        wait_text(page, f"{PANEL} .tchbook-GpuCard-memory", r"51\.0 GiB of 80\.0 GiB")
        assert points(page, "used") >= before + 4, (before, points(page, "used"))
        assert points(page, "utilization") == points(page, "used")
        # Still the same cell, and JupyterLab still shows the kernel busy: the idle that follows
        # each usage_reply does not count (the extension marks usage_request untracked).
        assert nb.cell(1).locator(".jp-InputArea-prompt").text_content().strip() == "[*]:"
        assert page.locator(".jp-Notebook-ExecutionIndicator").get_attribute("data-status") == "busy"
        page.screenshot(path=str(screenshots / "gpu-panel.png"))
        nb.wait_cell_done(1, timeout_s=60)
        assert "42" in nb.cell(1).locator(".jp-OutputArea-output").first.text_content()

        # A GPU that falls off the bus is said so; a second one keeps its figures.
        stand_in.script("lost NVIDIA Stand-in H100\n", gpu_line(1, 7, "NVIDIA Stand-in L4"))
        wait_text(page, f"{PANEL} [data-gpu='0'] .tchbook-GpuCard-problem",
                  r"⚠ nvmlDeviceGetMemoryInfo: GPU is lost")
        wait_text(page, STATUS, r"GPU0 ⚠ nvmlDeviceGetMemoryInfo: GPU is lost  \|  GPU1 1\.0 GiB/80\.0 GiB 7%")
        # NVML failing altogether: no GPUs, the ones seen before named as gone, no status item.
        stand_in.script("count-error 999\n")
        text = wait_text(page, PANEL, r"no longer in the kernel's reply")
        assert "The kernel sees no GPU" in text, text
        assert "GPU 0 (NVIDIA Stand-in H100) is no longer" in text, text
        assert "GPU 1 (NVIDIA Stand-in L4) is no longer" in text, text
        page.wait_for_function(f"() => !document.querySelector('{STATUS}')?.checkVisibility()", timeout=10_000)
    finally:
        nb.close()


def test_an_ipykernel_notebook_is_said_to_report_no_gpus(lab, context):
    nb = open_on(lab, context, "no-gpus.ipynb", ["1 + 1"], "python3", "python")
    try:
        nb.wait_idle()
        nb.run_cell(0)
        open_panel(nb.page)
        text = wait_text(nb.page, PANEL, r"This kernel reports no GPUs")
        assert 'answers usage_request without a "gpus" list' in text, text
        assert nb.page.locator(f"{PANEL} .tchbook-GpuCard").count() == 0
        assert not nb.page.locator(STATUS).is_visible()
    finally:
        nb.close()


def test_bad_replies_show_a_clear_state_and_the_kernel_keeps_working(lab, context, tmp_path):
    script = tmp_path / "usage.json"
    folder = lab.jupyter_path / "kernels" / SCRIPTED
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(Path(__file__).with_name("usage_kernel.py")), "-f", "{connection_file}"],
        "display_name": "Python 3 (scripted usage)", "language": "python",
        "env": {"USAGE_SCRIPT": str(script)}}))

    def reply(value) -> None:
        script.write_text(value if isinstance(value, str) else json.dumps(value))

    reply({"gpus": [{"index": 0, "name": "Half GPU", "utilization": 5}]})
    nb = open_on(lab, context, "bad-replies.ipynb", ["x = 20", "x + 1"], SCRIPTED, "python")
    try:
        nb.wait_idle()
        page = nb.page
        open_panel(page)
        # Fields missing: said, not drawn as zeros.
        wait_text(page, f"{PANEL} .tchbook-GpuCard-problem", r"⚠ the reply lacks memory_used and memory_total")
        assert "0 B" not in page.locator(PANEL).text_content()
        wait_text(page, STATUS, r"GPU0 ⚠ the reply lacks memory_used and memory_total")
        # Not a list at all.
        reply({"gpus": "plenty"})
        wait_text(page, PANEL, r'⚠ the kernel\'s usage_reply has a "gpus" that is not a list')
        # Entries that are not objects, figures of the wrong type, and markup in a name: shown as
        # the text it is, never rendered.
        reply({"gpus": [7, {"index": 1, "name": "<b>Odd</b>", "memory_used": "lots", "memory_total": -1}]})
        text = wait_text(page, PANEL, r"GPU 1 · <b>Odd</b>")
        assert text.count("⚠ the reply lacks memory_used and memory_total") == 2, text
        assert page.locator(f"{PANEL} b").count() == 0
        # A kernel that stops answering: said after the 10 s jupyter-resource-usage also waits.
        reply({"gpus": [{"index": 0, "name": "Back", "memory_used": GIB, "memory_total": 2 * GIB}]})
        wait_text(page, PANEL, r"1\.0 GiB of 2\.0 GiB")
        reply("silent")
        wait_text(page, PANEL, r"⚠ the kernel did not answer usage_request: no answer in 10 s", timeout_s=40)
        wait_text(page, STATUS, r"GPU: no answer")
        # The kernel itself is unharmed, and the panel comes back when it answers again.
        nb.run_cell(0)
        nb.run_cell(1)
        assert nb.cell(1).locator(".jp-OutputArea-output").first.text_content().strip() == "21"
        reply({"gpus": [{"index": 0, "name": "Back", "memory_used": GIB, "memory_total": 2 * GIB}]})
        wait_text(page, PANEL, r"1\.0 GiB of 2\.0 GiB", timeout_s=40)
    finally:
        nb.close()


def test_a_python_notebook_with_rust_cells_shows_the_rust_kernels_gpus(lab, context, tmp_path):
    nvml = StandIn(tmp_path)
    nvml.script(gpu_line(12, 64))
    bridge_kernelspec(lab, BRIDGED, "Python 3 (tchbook bridge, stand-in GPUs)", nvml.env())
    nb = open_on(lab, context, "bridged-gpus.ipynb", ["%load_ext tchbook", "%%rust\nlet kept = 41;"],
                 BRIDGED, "python")
    try:
        nb.wait_idle()
        open_panel(nb.page)
        wait_text(nb.page, PANEL, r"This kernel reports no GPUs")
        nb.run_cell(0)
        nb.run_cell(1, timeout_s=COMPILE_S)
        # The panel asks a kernel without GPUs every 10 s.
        text = wait_text(nb.page, PANEL, r"GPU 0 · NVIDIA Stand-in H100", timeout_s=30)
        assert "12.0 GiB of 80.0 GiB" in text and "64%" in text, text
        wait_text(nb.page, STATUS, r"GPU0 12\.0 GiB/80\.0 GiB 64%")
    finally:
        nb.close()
