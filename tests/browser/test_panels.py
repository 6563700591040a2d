"""JupyterLab's panels on the tchbook kernel: the debugger's Variables panel (the bug icon, no
breakpoints) and jupyter-resource-usage's Kernel Usage panel (pinned in scripts/requirements.txt).

Screenshots: `variables-panel.png` (the panel with the tensor expanded and its rich view beside
it) and `kernel-usage.png`, beside the others ($TCHBOOK_SCREENSHOTS); the README shows both,
copied by hand into docs/screenshots/.
"""
from __future__ import annotations

import re

from labpage import Notebook

COMPILE_S = 300
CELL = """\
let x = Tensor::randn([64, 10], (Kind::Float, Device::Cpu)).set_requires_grad(true);
let vs = nn::VarStore::new(Device::Cpu);
let net = Net::new(&vs.root());
let losses = vec![2.3, 1.7, 1.2, 0.9];
let epochs = 4;"""
SUMMARY = "Tensor[64, 10] f32 cpu 2.5 KiB requires_grad"


def variable_row(page, name: str):
    """The Variables panel's tree item named `name`: the innermost one that holds the name (an
    expanded variable's item holds its fields' items too)."""
    return page.locator(".jp-DebuggerVariables jp-tree-item").filter(
        has=page.locator(".jp-DebuggerVariables-name", has_text=re.compile(f"^{re.escape(name)}$"))).last


def test_variables_panel_lists_expands_and_renders_a_tensor(notebook, screenshots):
    nb: Notebook = notebook(CELL)
    nb.run_cell(0, timeout_s=COMPILE_S)
    page = nb.page
    page.locator(".jp-DebuggerBugButton").first.click()
    # The debugger's sidebar, on the right.
    page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id='jp-debugger-sidebar']").click()
    x = variable_row(page, "x")
    x.wait_for(timeout=60_000)
    detail = x.locator(".jp-DebuggerVariables-detail").first
    assert SUMMARY in detail.text_content(), detail.text_content()
    vs = variable_row(page, "vs")
    assert "VarStore 62,006 parameters" in vs.locator(".jp-DebuggerVariables-detail").first.text_content()

    # Expanding the tensor shows its fields.
    x.locator(".jp-DebuggerVariables-name").first.click()
    for field, value in [("shape", "[64, 10]"), ("dtype", "f32"), ("requires_grad", "true")]:
        row = variable_row(page, field)
        row.wait_for(timeout=30_000)
        assert value in row.locator(".jp-DebuggerVariables-detail").first.text_content()

    # "Render variable" opens the rich view: the tensor as PyTorch prints it, and its heat map.
    # JupyterLab renders with the active notebook's renderers: give the notebook the focus back
    # (expanding moved it to the sidebar), then press the button without taking the focus.
    nb.cell(0).click()
    x.locator(".jp-DebuggerVariables-name").first.hover()
    x.locator(".jp-DebuggerVariables-renderVariable").first.evaluate("button => button.click()")
    rich = page.locator(".jp-DebuggerRichVariable").first
    rich.wait_for(timeout=30_000)
    rich.locator("img").first.wait_for(timeout=30_000)
    assert "tensor([[" in rich.text_content()
    page.screenshot(path=str(screenshots / "variables-panel.png"))


def test_kernel_usage_panel_shows_the_kernels_memory(notebook, screenshots):
    nb: Notebook = notebook("let v = vec![1u8; 32 << 20];\nv.len()")
    nb.run_cell(0, timeout_s=COMPILE_S)
    page = nb.page
    page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab[title='Kernel Usage']").click()
    usage = page.locator(".jp-KernelUsage-content").first
    # The panel asks every 5 s, from its start on: its first replies may predate the evaluation
    # process. Wait for one that counts it: the kernel alone is ~17 MB, the evaluation process
    # holds libtorch and the 32 MiB vector.
    usage.filter(has_text=re.compile(r"Memory")).wait_for(timeout=60_000)
    page.wait_for_function(
        """() => {
            const m = /Memory:\\s*([\\d.]+)\\s*(MB|GB)/.exec(
                document.querySelector('.jp-KernelUsage-content').textContent);
            return m && parseFloat(m[1]) * (m[2] === 'GB' ? 1000 : 1) > 60;
        }""",
        timeout=60_000)
    text = usage.text_content()
    assert "timed out" not in text.lower(), text
    assert re.search(r"Process ID:\s*\d+", text), text
    page.screenshot(path=str(screenshots / "kernel-usage.png"))
