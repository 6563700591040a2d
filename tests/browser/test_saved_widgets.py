"""A notebook whose outputs came from an exported program (`tchbook export`, run with `--record`,
written back with `tchbook export --merge`, as `scripts/gpu-check --apply` does with the GPU
machine's run) shows its progress bar when opened in JupyterLab, before anyone runs it. Opened
untrusted, as every notebook a tool wrote opens, JupyterLab shows the kernel's HTML of the bar (it
draws widget views only in trusted notebooks); once its reader trusts it, the bar is a widget
drawn from the state the merge saved in the notebook's metadata, as JupyterLab draws a notebook
saved with "Save Widget State". Without that state the same outputs show ipywidgets' fallback
("Error displaying widget: model not found"), which the second half checks, so the first half
can fail. nbconvert's HTML of the merged notebook carries the state too.

Screenshot: `merged-progress-bar.png` ($TCHBOOK_SCREENSHOTS), the cell as the reader sees it.
"""
from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from labpage import OUTPUT, ROOT, Notebook

# As tests/test_export.py finds them: the kernel, and the target directory exported projects share.
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
BIN = Path(os.environ.get("TCHBOOK_BIN") or TARGET / "release" / "tchbook")
BUILD_S = 1800
PROGRESS = """\
println!("five steps");
let mut bar = Progress::new(5, "steps");
for _ in 0..5 {
    bar.tick();
}
bar.finish();"""
FALLBACK = ("Error displaying widget", "model not found")
STATE_MIME = "application/vnd.jupyter.widget-state+json"


def merged_run(folder, name: str) -> nbformat.NotebookNode:
    """The notebook `folder/name`, exported, built, run with --record and merged back, all on this
    machine's CPU, as the GPU check does on its GPU machine; returns it as merged."""
    path = folder / name
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "tchbook", "display_name": "Rust (tchbook)", "language": "rust"}
    nb.cells = [nbformat.v4.new_code_cell(PROGRESS)]
    nbformat.write(nb, path)
    project = folder / "exported"
    tool = lambda *args: subprocess.run([str(BIN), *args], capture_output=True, text=True, check=True).stdout
    tool("export", str(path), "-o", str(project), "--prelude", str(ROOT / "prelude"))
    built = subprocess.run(["cargo", "build", "--release", "--message-format=json-render-diagnostics"],
                           cwd=project, capture_output=True, text=True, timeout=BUILD_S,
                           env={**os.environ, "CARGO_TARGET_DIR": str(TARGET)})
    assert built.returncode == 0, built.stderr[-4000:]
    program = next(m["executable"] for m in map(json.loads, built.stdout.splitlines())
                   if m.get("reason") == "compiler-artifact" and m.get("executable")
                   and "bin" in m["target"]["kind"])
    record = folder / "record.json"
    subprocess.run([program, "--record", str(record)], cwd=folder, capture_output=True, check=True,
                   timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    tool("export", "--merge", str(record), str(path))
    return nbformat.read(path, as_version=4)


def bar_parts(nb: nbformat.NotebookNode) -> tuple[str, dict, list[str]]:
    """The bar's view id, the saved state of its progress model, and its two labels (HTML)."""
    view = next(o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for o in nb.cells[0].outputs
                if "application/vnd.jupyter.widget-view+json" in o.get("data", {}))
    state = nb.metadata["widgets"][STATE_MIME]["state"]
    children = [state[ref.removeprefix("IPY_MODEL_")] for ref in state[view]["state"]["children"]]
    return view, children[1]["state"], [children[0]["state"]["value"], children[2]["state"]["value"]]


def trust(opened: Notebook) -> None:
    """Trusts the notebook as a person does (the command palette's "Trust Notebook", then the
    dialog's Trust): JupyterLab draws widget views, whose renderer runs the widgets' code, only in
    trusted notebooks, and a notebook written by a tool is not trusted until its reader says so."""
    page = opened.page
    opened.wait_idle(120)  # a kernel still starting takes the focus back from the palette
    opened.menu("View", "Activate Command Palette")
    page.locator(".lm-CommandPalette-input").fill("Trust Notebook")
    page.locator(".lm-CommandPalette-item").filter(has_text="Trust Notebook").first.click()
    page.locator(".jp-Dialog").get_by_role("button", name="Trust").click()


def test_a_merged_notebook_draws_its_saved_progress_bar_without_running(lab, context, screenshots):
    nb = merged_run(lab.root, "merged-progress.ipynb")
    view, progress, labels = bar_parts(nb)
    assert progress["value"] == progress["max"] == 5, progress

    opened = Notebook.open(lab, context, "merged-progress.ipynb")
    try:
        output = opened.cell(0).locator(OUTPUT)
        # Untrusted, as any notebook a tool wrote opens: the kernel's HTML beside the view, a full bar.
        output.locator('.tchbook-progress progress[value="5"][max="5"]').wait_for(timeout=60_000)
        trust(opened)
        # Trusted: ipywidgets draws the view from the saved models. A view drawn from saved state
        # has no kernel-side model behind it, and ipywidgets marks it disconnected.
        bar = output.locator(".jupyter-widgets-disconnected.widget-hprogress .progress-bar").first
        bar.wait_for(timeout=60_000)
        assert not any(word in opened.outputs_text() for word in FALLBACK), opened.outputs_text()
        assert output.locator(".tchbook-progress").count() == 0, "the HTML stands in no more"
        # The bar is full, as the run left it, between the labels it was saved with.
        assert bar.evaluate("e => e.style.width") == "100%"
        assert output.locator(".widget-html-content").all_text_contents() == [html.unescape(t) for t in labels]
        assert "five steps" in opened.outputs_text()
        assert opened.prompts()[0].strip() == "[1]:", "the merge's count: nothing ran here"
        opened.cell(0).screenshot(path=str(screenshots / "merged-progress-bar.png"))
    finally:
        opened.close()

    # The same outputs without the saved state: JupyterLab has no model to draw the view from.
    del nb.metadata["widgets"]
    nbformat.write(nb, lab.root / "unsaved-progress.ipynb")
    opened = Notebook.open(lab, context, "unsaved-progress.ipynb")
    try:
        opened.cell(0).locator(OUTPUT).locator(".tchbook-progress").wait_for(timeout=60_000)
        trust(opened)
        opened.page.wait_for_function(
            "([sel, words]) => [...document.querySelectorAll(sel)].some(e => words.some(w => e.textContent.includes(w)))",
            arg=[".jp-Notebook " + OUTPUT, list(FALLBACK)], timeout=60_000)
        assert opened.cell(0).locator(".widget-hprogress").count() == 0
    finally:
        opened.close()


def test_nbconverts_html_of_a_merged_notebook_carries_the_saved_widget_state(tmp_path):
    nb = merged_run(tmp_path, "merged-progress.ipynb")
    view, progress, _ = bar_parts(nb)
    html = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--stdout",
                           str(tmp_path / "merged-progress.ipynb")],
                          capture_output=True, text=True, check=True).stdout
    start = html.index(f'<script type="{STATE_MIME}">') + len(f'<script type="{STATE_MIME}">')
    state = json.loads(html[start:html.index("</script>", start)])["state"]
    assert view in state and state[view]["model_name"] == "HBoxModel"
    assert any(m["state"] == progress for m in state.values()), "the bar's model, as the run left it"
