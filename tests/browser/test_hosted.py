"""`%%rust` cells in a Python notebook, in JupyterLab: tests/hosted/rust-cells.ipynb run as a
person runs it (Run All, typing into the input box, the Stop button), on an ipykernel with the
bridge (python/ from this checkout; its Rust kernel is $TCHBOOK_BIN, the binary under test).

What must look as in the native kernel: the live plot and the progress bar each one output,
redrawn in place; the device card and the run table as HTML tables; errors as red tracebacks
with the compiler's and the panic's text; no JSON tree anywhere. tests/test_hosted.py checks the
same notebook's messages, through nbclient and the wheel.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import nbformat

from labpage import OUTPUT, ROOT, Notebook
from test_interaction import MENU, shown, wait_for_text

NOTEBOOK = ROOT / "tests" / "hosted" / "rust-cells.ipynb"
KERNEL = "python3-tchbook-bridge"
RUN_ALL_S = 600


def bridge_kernelspec(lab, name: str = KERNEL, display_name: str = "Python 3 (tchbook bridge)",
                      env: dict | None = None) -> None:
    """This Python's ipykernel with python/ importable and the binary under test (and `env`)."""
    binary = os.environ.get("TCHBOOK_BIN") or str(
        Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "release" / "tchbook")
    spec = lab.jupyter_path / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name, "language": "python",
        "env": {"PYTHONPATH": str(ROOT / "python"), "TCHBOOK_BIN": binary, **(env or {})}}))


def index_of(nb: nbformat.NotebookNode, tag: str) -> int:
    found = [i for i, c in enumerate(nb.cells) if tag in c.metadata.get("tags", [])]
    assert len(found) == 1, f"expected one cell tagged {tag!r}, found {found}"
    return found[0]


def test_rust_cells_in_a_python_notebook_look_as_in_the_native_kernel(lab, context, screenshots):
    bridge_kernelspec(lab)
    source = nbformat.read(NOTEBOOK, as_version=4)
    source.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3 (tchbook bridge)",
                                     "language": "python"}
    name = "hosted-rust-cells.ipynb"
    nbformat.write(source, lab.root / name)
    nb = Notebook.open(lab, context, name)
    at = {tag: index_of(source, tag) for tag in (
        "stream", "live", "device-card", "run-table", "line-magic", "compile-error", "panic", "caught",
        "input", "interrupt", "after-interrupt", "status", "after-restart")}
    try:
        nb.wait_idle()
        nb.menu("Run", "Run All Cells")
        # The input cell asks in the front end: type the answer into JupyterLab's input box.
        box = nb.cell(at["input"]).locator(".jp-Stdin-input")
        box.wait_for(timeout=RUN_ALL_S * 1000)
        box.fill("Ada")
        box.press("Enter")
        # The long cell: press Stop once it has started, as a person would.
        wait_for_text(nb, at["interrupt"], "started", 120)
        nb.press_stop()
        nb.wait_all_done(RUN_ALL_S)

        def outputs(tag: str):
            return nb.cell(at[tag]).locator(OUTPUT)

        assert "hello from Rust" in outputs("stream").first.text_content(), shown(nb, at["stream"])
        assert "a partial line, finished after a pause" in nb.outputs_text()
        # The live cell: two outputs, the picture and the finished bar (updates went in place).
        live = outputs("live")
        assert live.count() == 2, shown(nb, at["live"])
        # The bar is tqdm.notebook's widget here too (the bridge re-opens its models on the
        # Python kernel), full at the end.
        bar = live.locator(".progress .progress-bar")
        assert live.locator("img").count() == 1 and bar.count() == 1, shown(nb, at["live"])
        assert bar.evaluate("e => e.style.width") == "100%", shown(nb, at["live"])
        assert "30/30" in live.last.text_content(), shown(nb, at["live"])
        assert outputs("device-card").locator("table").count() >= 1, shown(nb, at["device-card"])
        assert outputs("run-table").locator("table tr").count() >= 3, shown(nb, at["run-table"])
        assert "RustValue 42 42" in outputs("line-magic").first.text_content()
        compile_error = outputs("compile-error").first
        assert "mismatched types" in compile_error.text_content(), shown(nb, at["compile-error"])
        assert compile_error.locator(".ansi-red-intense-fg, .ansi-red-fg, [style*='color']").count() >= 1, \
            "the compiler's colours are lost"
        assert "index out of bounds" in nb.cell(at["panic"]).locator(OUTPUT).last.text_content()
        assert "caught panic: caught in Python" in outputs("caught").first.text_content()
        assert "hello, Ada" in nb.cell(at["input"]).text_content(), shown(nb, at["input"])
        assert "KeyboardInterrupt" in outputs("interrupt").last.text_content(), shown(nb, at["interrupt"])
        assert "after the interrupt: hello from Rust" in outputs("after-interrupt").first.text_content()
        assert "cannot find value `greeting`" in outputs("after-restart").first.text_content()
        assert nb.json_trees() == 0, "an output renders as a JSON tree"
        nb.screenshots(screenshots / "hosted--rust-cells.png",
                       {at["live"]: screenshots / "hosted--live.png"})
    except Exception:
        nb.page.screenshot(path=str(screenshots / "failed--hosted-rust-cells.png"))
        raise
    finally:
        nb.close()


def menu_after_tab(nb: Notebook, cell: int, want: str) -> tuple[list[str], float]:
    """Presses Tab; the completer menu's names once they hold `want`, or after 5 s (JupyterLab
    drops a kernel reply slower than 1 s, so waiting longer cannot bring a late one)."""
    started = time.monotonic()
    nb.page.keyboard.press("Tab")
    while True:
        names = nb.page.evaluate(MENU, cell)["names"]
        took = time.monotonic() - started
        if want in names or took > 5:
            return names, took
        time.sleep(0.05)


def test_tab_in_a_rust_cell_offers_rust_names_not_python_ones(lab, context, screenshots):
    """A person in a Python notebook types Rust in a `%%rust` cell and presses Tab: the menu holds
    what the Rust kernel knows (a vector's methods), and no Python builtin."""
    bridge_kernelspec(lab)
    source = nbformat.v4.new_notebook()
    source.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3 (tchbook bridge)",
                                     "language": "python"}
    source.cells = [nbformat.v4.new_code_cell("%load_ext tchbook"),
                    nbformat.v4.new_code_cell("%%rust\nlet distinctive_rust_name = vec![1, 2, 3];"),
                    nbformat.v4.new_code_cell("")]
    name = "hosted-tab.ipynb"
    nbformat.write(source, lab.root / name)
    nb = Notebook.open(lab, context, name)
    try:
        nb.wait_idle()
        nb.run_cell(0, 120)
        nb.run_cell(1, RUN_ALL_S)
        nb.edit(2)
        nb.page.keyboard.type("%%rust")
        nb.page.keyboard.press("Enter")
        nb.page.keyboard.type("distinctive_rust_name.le")
        names, took = menu_after_tab(nb, 2, "len")
        assert "len" in names, f"Tab in a %%rust cell offered no `len` within {took:.1f} s: {names[:10]}"
        nb.page.keyboard.press("Escape")  # closes the menu, stays in the editor
        nb.page.keyboard.press("Control+a")
        nb.page.keyboard.press("Backspace")
        nb.page.keyboard.type("%%rust")
        nb.page.keyboard.press("Enter")
        nb.page.keyboard.type("pri")
        names, took = menu_after_tab(nb, 2, "println!")
        assert "print" not in names, f"Python's print offered in a Rust cell: {names[:10]}"
        assert any(n.startswith("print") for n in names), f"no Rust print macro offered: {names[:10]}"
        nb.page.screenshot(path=str(screenshots / "hosted--tab.png"))
    except Exception:
        nb.page.screenshot(path=str(screenshots / "failed--hosted-tab.png"))
        raise
    finally:
        nb.close()
