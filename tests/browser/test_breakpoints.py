"""Breakpoints in JupyterLab's debugger, as a person uses them: the bug icon switches the debugger
on, a click in the gutter of a training loop's cell sets a breakpoint, running the cell stops on
that line with the loss among the Variables panel's locals (a tensor expanding into its shape,
dtype, device, ...; the var store into its parameters), "Next" steps one line, "Continue" goes
on, and the cell finishes once the breakpoint is cleared. The call stack and breakpoint panels
list the cell's frame and breakpoint by cell and line.

Needs gdb with its Debug Adapter Protocol where the kernel finds it (scripts/requirements.txt pins
gdb-for-pwndbg into the venv). Screenshot: `debugger-stopped.png` ($TCHBOOK_SCREENSHOTS), which
the README shows, copied by hand into docs/screenshots/.
"""
from __future__ import annotations

import re

from labpage import Notebook

COMPILE_S = 300
# Line 6 is the loop's body: the loss of one step.
TRAINING = """\
let xs = Tensor::randn([64, 10], (Kind::Float, Device::Cpu));
let ys = xs.sum_dim_intlist([1i64].as_slice(), true, Kind::Float);
let vs = nn::VarStore::new(Device::Cpu);
let model = nn::linear(vs.root(), 10, 1, Default::default());
let mut opt = nn::Sgd::default().build(&vs, 0.01).unwrap();
for epoch in 0..3 {
    let loss = (model.forward(&xs) - &ys).pow_tensor_scalar(2).mean(Kind::Float);
    opt.backward_step(&loss);
}
"done\""""
BODY_LINE = 7


def variable_row(page, name: str):
    return page.locator(".jp-DebuggerVariables jp-tree-item").filter(
        has=page.locator(".jp-DebuggerVariables-name", has_text=re.compile(f"^{re.escape(name)}$"))).last


def fields_of(row, last: str) -> dict[str, str]:
    """What an expanded Variables panel row shows beneath it, once its field `last` is drawn:
    name -> value."""
    items = row.locator(":scope > jp-tree-item")
    name = re.compile(f"^{re.escape(last)}$")
    items.filter(has=row.page.locator(".jp-DebuggerVariables-name", has_text=name)).first.wait_for(
        timeout=60_000)
    return {item.locator(".jp-DebuggerVariables-name").first.text_content().strip():
            item.locator(".jp-DebuggerVariables-detail").first.text_content().strip()
            for item in items.all()}


def click_gutter(nb: Notebook, index: int, line: int) -> None:
    """A click in the breakpoint gutter beside line `line` of cell `index` (JupyterLab sets the
    breakpoint on mousedown there)."""
    cell = nb.cell(index)
    number = cell.locator(".cm-lineNumbers .cm-gutterElement", has_text=re.compile(f"^{line}$")).first
    gutter = cell.locator(".cm-breakpoint-gutter").first
    # The debugger shows line numbers and the gutter once it has started.
    number.wait_for(timeout=60_000)
    gutter.wait_for(timeout=60_000)
    row, column = number.bounding_box(), gutter.bounding_box()
    nb.page.mouse.click(column["x"] + column["width"] / 2, row["y"] + row["height"] / 2)


def stopped_line(nb: Notebook, index: int) -> str:
    """The text of the line the debugger highlights in cell `index`, waiting for one."""
    line = nb.cell(index).locator(".cm-line.jp-DebuggerEditor-highlight").first
    line.wait_for(timeout=120_000)
    return line.text_content()


def callstack(page) -> list[tuple[str, str]]:
    """The call stack panel's frames as they read: (function, where)."""
    frames = page.locator(".jp-DebuggerCallstackFrame")
    return [(frame.locator(".jp-DebuggerCallstackFrame-name").text_content(),
             frame.locator(".jp-DebuggerCallstackFrame-location").text_content())
            for frame in frames.all()]


def breakpoint_list(page) -> list[tuple[str, str]]:
    """The breakpoint panel's entries as they read: (where, line)."""
    return [(entry.locator(".jp-DebuggerBreakpoint-source").text_content(),
             entry.locator(".jp-DebuggerBreakpoint-line").text_content())
            for entry in page.locator(".jp-DebuggerBreakpoint").all()]


def test_a_breakpoint_in_a_training_loop_stops_steps_and_continues(notebook, screenshots):
    nb: Notebook = notebook("let ready = true;", TRAINING)
    # The bug button, once the kernel has started (before, JupyterLab may ignore the click).
    nb.run_cell(0, timeout_s=COMPILE_S)
    page = nb.page
    page.locator(".jp-DebuggerBugButton").first.click()
    page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id='jp-debugger-sidebar']").click()
    click_gutter(nb, 1, BODY_LINE)
    # The gutter's first element is a hidden spacer holding an icon too.
    nb.cell(1).locator(".cm-breakpoint-gutter .cm-breakpoint-icon >> visible=true").first.wait_for(timeout=30_000)

    # Listed before the cell runs, by cell (JupyterLab's name for a cell not run yet) and line.
    page.locator(".jp-DebuggerBreakpoint").first.wait_for(timeout=30_000)
    assert breakpoint_list(page) == [("Cell [ ]", str(BODY_LINE))]

    nb.start_cell(1)
    assert "let loss" in stopped_line(nb, 1)
    # The call stack: the cell's frame on top, named by its cell (running: "[*]") and line;
    # the prelude's frames below it, none of the evaluation process's machinery.
    page.locator(".jp-DebuggerCallstackFrame").first.wait_for(timeout=60_000)
    frames = callstack(page)
    assert frames[0] == ("cell", f"Cell [*]:{BODY_LINE}"), frames
    assert frames[-1][1].startswith("Cell [*]:"), frames
    assert not any("load_and_run" in name or name == "main" for name, _ in frames), frames
    # (JupyterLab names the cell when the list is drawn, not again when the cell starts.)
    [(cell, line)] = breakpoint_list(page)
    assert re.fullmatch(r"Cell \[[ *]\]", cell) and line == str(BODY_LINE), (cell, line)
    epoch = variable_row(page, "epoch")
    epoch.wait_for(timeout=60_000)
    assert epoch.locator(".jp-DebuggerVariables-detail").first.text_content().strip() == "0"
    # A tensor reads as the Variables panel shows it between cells (the prelude's line).
    xs = variable_row(page, "xs").locator(".jp-DebuggerVariables-detail").first
    assert xs.text_content().strip() == "Tensor[64, 10] f32 cpu 2.5 KiB", xs.text_content()
    # Expanded (a click on its name), it shows the fields the panel shows between cells.
    variable_row(page, "xs").locator(".jp-DebuggerVariables-name").first.click()
    fields = fields_of(variable_row(page, "xs"), "mean")
    assert (fields["shape"], fields["dtype"], fields["device"], fields["numel"],
            fields["requires_grad"], fields["grad"]) == ("[64, 10]", "f32", "cpu", "640", "false",
                                                         "None"), fields
    assert float(fields["min"]) < float(fields["mean"]) < float(fields["max"]), fields
    # A var store expands into its parameters by name.
    variable_row(page, "vs").locator(".jp-DebuggerVariables-name").first.click()
    parameters = fields_of(variable_row(page, "vs"), "bias")
    assert parameters == {"weight": "Tensor[1, 10] f32 cpu 40 B requires_grad",
                          "bias": "Tensor[1] f32 cpu 4 B requires_grad"}, parameters

    # Next: the loss is computed (a local now), and the highlight moves to the following line.
    page.get_by_title(re.compile(r"^Next")).first.click()
    page.wait_for_function(
        """() => document.querySelector('.jp-DebuggerEditor-highlight')?.textContent.includes('backward_step')""",
        timeout=60_000)
    loss = variable_row(page, "loss")
    loss.wait_for(timeout=60_000)
    # The loss: a scalar tensor of the graph, expanded.
    loss.locator(".jp-DebuggerVariables-name").first.click()
    fields = fields_of(variable_row(page, "loss"), "mean")
    assert (fields["shape"], fields["dtype"], fields["requires_grad"]) == ("[]", "f32", "true"), fields
    assert float(fields["min"]) == float(fields["max"]) == float(fields["mean"]) > 0, fields
    page.wait_for_function(
        """() => document.querySelector('.jp-DebuggerCallstackFrame-location')?.textContent
               === 'Cell [*]:%d'""" % (BODY_LINE + 1), timeout=60_000)
    page.screenshot(path=str(screenshots / "debugger-stopped.png"))

    # Continue: round the loop, stopped on the same line in the next epoch.
    page.get_by_title(re.compile(r"^Continue")).first.click()
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-DebuggerVariables jp-tree-item')].some(item =>
               item.querySelector('.jp-DebuggerVariables-name')?.textContent === 'epoch'
               && item.querySelector('.jp-DebuggerVariables-detail')?.textContent.trim() === '1')""",
        timeout=60_000)

    # The breakpoint cleared by a second click, Continue: the cell finishes with its value.
    click_gutter(nb, 1, BODY_LINE)
    nb.cell(1).locator(".cm-breakpoint-gutter .cm-breakpoint-icon >> visible=true").first.wait_for(
        state="detached", timeout=30_000)
    page.get_by_title(re.compile(r"^Continue")).first.click()
    nb.wait_cell_done(1, COMPILE_S)
    assert '"done"' in nb.outputs_text()
