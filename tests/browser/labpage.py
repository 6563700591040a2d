"""JupyterLab as a person uses it, for the browser tests: a notebook open in a tab, driven with
the menus, the toolbar and the keyboard, and read back from the rendered page.

The DOM names used here are JupyterLab 4's (the version scripts/requirements.txt pins):
- a cell is `.jp-Cell` inside `.jp-Notebook`, in notebook order (JupyterLab's default windowing,
  `contentVisibility`, keeps every cell in the DOM, but the browser skips laying out those off
  screen: their `innerText` is empty, so text is read with `textContent`);
- its prompt `.jp-InputArea-prompt` reads `[ ]:`, `[*]:` (queued or running) or `[7]:`;
- each output is a renderer element `.jp-OutputArea-output`, classed by the renderer JupyterLab
  picked: `.jp-RenderedHTMLCommon`, `.jp-RenderedImage`, `.jp-RenderedSVG`, `.jp-RenderedText`
  (streams and errors), and `.jp-RenderedJSON` for the collapsible JSON tree;
- the toolbar's kernel indicator `.jp-Notebook-ExecutionIndicator` carries `data-status`.
A live update (`update_display_data`) re-renders into the same `.jp-OutputArea-output` element
when the chosen MIME type stays the same, which is what "updates in place" means on the page.
"""
from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "tchbook"

CELLS = ".jp-Notebook .jp-Cell"
OUTPUT = ".jp-OutputArea-output"
JSON_TREE = ".jp-RenderedJSON"
IDLE = '.jp-Notebook-ExecutionIndicator[data-status="idle"]'
# Tallest page a full-notebook screenshot may take: Chromium cannot capture much more.
MAX_SHOT_HEIGHT = 16_000


class Lab:
    """The JupyterLab server under test."""

    def __init__(self, base_url: str, token: str, root: Path):
        self.base_url = base_url
        self.token = token
        self.root = root
        self.log_tail = lambda: ""
        # A folder on the server's JUPYTER_PATH: a test may add kernelspecs under its kernels/.
        self.jupyter_path: Path | None = None
        # Where the server writes its kernels' connection files.
        self.runtime_dir: Path | None = None

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}{path}{sep}token={self.token}"

    def api(self, method: str, path: str):
        request = urllib.request.Request(self.base_url + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def shut_down_kernels_of(self, name: str) -> None:
        """Ends the sessions (and their kernels) of one notebook, so each test's kernels go away."""
        for s in self.api("GET", "/api/sessions"):
            if s.get("path") == name:
                self.api("DELETE", f"/api/sessions/{s['id']}")

    def write_notebook(self, name: str, sources: list[str], kernelspec: dict | None = None) -> Path:
        """A notebook of code cells on the tchbook kernel (or the kernelspec given), as a person
        would have typed them."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = kernelspec or {"name": KERNEL, "display_name": "Rust (tchbook)",
                                                   "language": "rust"}
        nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
        path = self.root / name
        nbformat.write(nb, path)
        return path


class Notebook:
    """One notebook open in its own tab, with its kernel started by JupyterLab."""

    def __init__(self, lab: Lab, page, name: str):
        self.lab = lab
        self.page = page
        self.name = name

    @classmethod
    def open(cls, lab: Lab, context, name: str) -> "Notebook":
        page = context.new_page()
        # `reset` starts from the default layout, so tabs of earlier tests are not restored.
        page.goto(lab.url(f"/lab/tree/{urllib.parse.quote(name)}?reset"))
        cells = len(nbformat.read(lab.root / name, as_version=4).cells)
        # JupyterLab adds the cells in batches: wait for all of them.
        page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length === n",
                               arg=[CELLS, cells], timeout=120_000)
        # The file browser opens beside it; folding it away gives the notebook the whole width,
        # as in the screenshots.
        file_browser = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
        if file_browser.count():
            file_browser.click()
        return cls(lab, page, name)

    def close(self) -> None:
        self.page.close()
        self.lab.shut_down_kernels_of(self.name)

    # --- reading the page ------------------------------------------------------------------

    def cells(self):
        return self.page.locator(CELLS)

    def cell(self, index: int):
        return self.cells().nth(index)

    def prompts(self) -> list[str]:
        return self.page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").all_text_contents()

    def json_trees(self) -> int:
        return self.page.locator(f".jp-Notebook {JSON_TREE}").count()

    def outputs_text(self) -> str:
        return "\n".join(self.page.locator(f".jp-Notebook {OUTPUT}").all_text_contents())

    # --- waiting -----------------------------------------------------------------------------

    def wait_idle(self, timeout_s: float = 300) -> None:
        """Until the kernel is started and idle.

        The toolbar's indicator alone is not enough: it reads "idle" for a moment while the
        session has no kernel yet, and a cell run then is silently dropped. The status bar names
        the kernel once it is connected ("Rust (tchbook) | Idle")."""
        self.page.wait_for_function(
            """([idle]) => document.querySelector(idle) && [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                   .some(e => /^(?!No Kernel).* \\| Idle$/.test(e.textContent.trim()))""",
            arg=[IDLE], timeout=timeout_s * 1000, polling=50)

    def done(self, index: int) -> bool:
        """Whether the cell's prompt shows an execution count (it ran, and is not queued)."""
        return re.match(r"\[\d+\]", self.cell(index).locator(".jp-InputArea-prompt").text_content().strip()) is not None

    def wait_cell_done(self, index: int, timeout_s: float = 300) -> None:
        """Until the cell's prompt shows an execution count (it ran, and is not queued)."""
        self.page.wait_for_function(
            """([sel, i]) => /^\\[\\d+\\]/.test(document.querySelectorAll(sel)[i]
                   ?.querySelector('.jp-InputArea-prompt')?.textContent.trim() ?? '')""",
            arg=[CELLS, index], timeout=timeout_s * 1000, polling=100)

    def wait_all_done(self, timeout_s: float) -> None:
        """Until no code cell is queued or running and the kernel is idle again. (After an error
        in a cell not tagged raises-exception the kernel aborts the queued cells, and JupyterLab
        puts their prompts back to `[ ]:`: they never show a count.)"""
        self.page.wait_for_function(
            """() => ![...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
                     .some(p => p.textContent.includes('*'))""",
            timeout=timeout_s * 1000, polling=250)
        self.wait_idle(60)

    # --- acting as a person ------------------------------------------------------------------

    def menu(self, menu: str, item: str) -> None:
        """Clicks a menu bar entry, then one of its items (e.g. Run → Run All Cells)."""
        self.page.locator(".lm-MenuBar-itemLabel").get_by_text(menu, exact=True).click()
        self.page.locator(".lm-Menu-itemLabel").get_by_text(item, exact=True).click()

    def run_all(self, timeout_s: float) -> None:
        """Run → Run All Cells, then waits until every cell has run."""
        self.wait_idle()
        self.menu("Run", "Run All Cells")
        # JupyterLab marks every cell queued ([*]) at once; a notebook opened with committed
        # outputs already shows counts, so seeing [*] is how we know this run began.
        self.page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-Notebook .jp-InputArea-prompt')]"
            ".some(p => p.textContent.includes('*'))", timeout=30_000, polling=50)
        self.wait_all_done(timeout_s)

    def edit(self, index: int):
        """Clicks into a cell's editor (edit mode) and returns the editor."""
        editor = self.cell(index).locator(".cm-content")
        editor.click()
        return editor

    def start_cell(self, index: int) -> None:
        """Shift+Enter in the cell; returns once its prompt shows it queued or run."""
        self.edit(index)
        self.page.keyboard.press("Shift+Enter")
        self.page.wait_for_function(
            """([sel, i]) => /^\\[(\\*|\\d+)\\]/.test(document.querySelectorAll(sel)[i]
                   ?.querySelector('.jp-InputArea-prompt')?.textContent.trim() ?? '')""",
            arg=[CELLS, index], timeout=10_000, polling=50)

    def run_cell(self, index: int, timeout_s: float = 300) -> None:
        """Shift+Enter in the cell, then waits until it has run."""
        self.start_cell(index)
        self.wait_cell_done(index, timeout_s)

    def press_stop(self) -> None:
        """The toolbar's ■ button."""
        self.page.locator('jp-button[title="Interrupt the kernel"]').click()

    def save(self) -> nbformat.NotebookNode:
        """File → Save Notebook, and the notebook as saved on disk."""
        path = self.lab.root / self.name
        before = path.stat().st_mtime_ns
        self.page.keyboard.press("Escape")
        self.menu("File", "Save Notebook")
        deadline = time.monotonic() + 30
        while True:
            assert time.monotonic() < deadline, f"{self.name} was not saved within 30 s"
            if path.stat().st_mtime_ns != before:
                # Jupyter's atomic writing keeps a backup aside and writes the file in place, so
                # the new modification time can come before the contents: a read then finds an
                # empty or cut-off file (seen once as `Notebook does not appear to be JSON: ''`).
                try:
                    return nbformat.read(path, as_version=4)
                except ValueError:
                    pass
            time.sleep(0.1)

    # --- pictures ----------------------------------------------------------------------------

    def screenshots(self, full: Path, cells: dict[int, Path]) -> None:
        """The whole notebook in one picture, and some cells on their own.

        The notebook scrolls inside its panel, so the window grows to the notebook's height
        first: then every cell is on screen at once, none is cut by the panel's edge, and the
        browser lays out all of them (it skips cells off screen)."""
        scroller = self.page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").first
        content = scroller.evaluate("e => e.scrollHeight")
        top = scroller.evaluate("e => e.getBoundingClientRect().top")
        height = min(int(content + top + 40), MAX_SHOT_HEIGHT)
        old = self.page.viewport_size
        self.page.set_viewport_size({"width": old["width"], "height": max(height, old["height"])})
        try:
            scroller.evaluate("e => { e.scrollTop = 0; }")
            self.page.wait_for_timeout(500)  # JupyterLab lays its panels out again, images redraw
            self.page.locator(".jp-NotebookPanel").first.screenshot(path=str(full))
            for index, path in cells.items():
                self.cell(index).screenshot(path=str(path))
        finally:
            self.page.set_viewport_size(old)
