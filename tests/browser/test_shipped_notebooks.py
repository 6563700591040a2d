"""Every shipped notebook, opened in JupyterLab and run with Run → Run All Cells, as rendered.

The assertions read the page: which renderer JupyterLab chose for each output, what text it
shows, the size images really have in the browser. The saved notebook (File → Save) only tells
which outputs are errors, since JupyterLab draws an error and a stderr stream alike.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from labpage import NOTEBOOKS, OUTPUT, Notebook

ALL = sorted(p.name for p in NOTEBOOKS.glob("0*.ipynb"))
# CIFAR-10 on real data trains for minutes on a small CPU; a cold build cache compiles first.
RUN_ALL_TIMEOUT_S = 1800


def sources(name: str) -> list[str]:
    return [c.source for c in nbformat.read(NOTEBOOKS / name, as_version=4).cells]


def with_code(needle: str) -> list[str]:
    return [n for n in ALL if any(needle in s for s in sources(n))]


@dataclass
class Executed:
    """A shipped notebook after Run All, still open in its tab."""
    nb: Notebook
    saved: nbformat.NotebookNode
    committed_json_trees: int

    def cells_with(self, needle: str) -> list[int]:
        return [i for i, c in enumerate(self.saved.cells) if c.cell_type == "code" and needle in c.source]

    def tagged(self, tag: str) -> list[int]:
        return [i for i, c in enumerate(self.saved.cells) if tag in c.metadata.get("tags", [])]

    def outputs(self, index: int):
        return self.nb.cell(index).locator(OUTPUT)

    def tables_where(self, needle: str) -> dict[int, list[list[list[str]]]]:
        """The HTML tables of each code cell whose source holds `needle` (there must be one)."""
        cells = self.cells_with(needle)
        assert cells, f"{self.nb.name} has no cell with {needle!r}"
        return {i: self.tables(i) for i in cells}

    def tables(self, index: int) -> list[list[list[str]]]:
        """Each HTML table the cell shows, as rows of cell texts (header row included)."""
        return self.nb.cell(index).locator(f".jp-RenderedHTMLCommon table").evaluate_all(
            "ts => ts.map(t => [...t.rows].map(r => [...r.cells].map(c => c.textContent.trim())))")


@pytest.fixture(scope="module", params=ALL)
def executed(request, lab, context, screenshots) -> Executed:
    name = request.param
    nb = Notebook.open(lab, context, name)
    try:
        # The copy still carries its committed outputs: that is what a person sees on opening it.
        committed = nb.json_trees()
        nb.run_all(RUN_ALL_TIMEOUT_S)
        saved = nb.save()
        stem = Path(name).stem
        # Besides the whole notebook, each tagged cell that shows a table or a picture.
        pictures = {i: screenshots / f"{stem}--{c.metadata['tags'][0]}.png"
                    for i, c in enumerate(saved.cells) if c.metadata.get("tags")
                    and nb.cell(i).locator(f"{OUTPUT} table, {OUTPUT} img").count()}
        nb.screenshots(screenshots / f"{stem}.png", pictures)
        run = Executed(nb, saved, committed)
    except BaseException:
        nb.page.screenshot(path=str(screenshots / f"failed--{Path(name).stem}.png"))
        nb.close()
        raise
    yield run
    nb.close()


def test_committed_outputs_show_no_json_tree(executed):
    assert executed.committed_json_trees == 0, (
        f"{executed.nb.name} as committed shows {executed.committed_json_trees} output(s) as JupyterLab's "
        f"JSON tree: its bundles carry application/json, which outranks HTML and images")


def test_no_output_is_a_json_tree(executed):
    trees = executed.nb.page.locator(f".jp-Notebook .jp-RenderedJSON")
    where = [i for i in range(len(executed.saved.cells)) if executed.nb.cell(i).locator(".jp-RenderedJSON").count()]
    assert trees.count() == 0, (
        f"{trees.count()} output(s) rendered as JupyterLab's JSON tree, in cells {where} "
        f"(first: {executed.saved.cells[where[0]].source.splitlines()[-1]!r})")


def test_no_raw_protocol_line_is_shown(executed):
    text = executed.nb.outputs_text()
    lines = [line for line in text.splitlines() if "TCHBOOK_" in line]
    assert not lines, f"raw protocol text on the page: {lines[:3]}"


@pytest.mark.parametrize("executed", with_code("LossPlot::new"), indirect=True)
def test_plots_are_images_of_real_size(executed):
    cells = executed.cells_with("LossPlot::new")
    assert cells
    for i in cells:
        images = executed.nb.cell(i).locator(f"{OUTPUT} img").evaluate_all(
            "is => is.map(i => ({complete: i.complete, w: i.naturalWidth, h: i.naturalHeight}))")
        assert images, f"cell {i} draws a loss plot but shows no <img>"
        for img in images:
            assert img["complete"] and img["w"] > 100 and img["h"] > 100, f"cell {i}: plot image {img}"


@pytest.mark.parametrize("executed", with_code("device_card()"), indirect=True)
def test_device_cards_are_html_tables_with_their_rows(executed):
    for i, tables in executed.tables_where("device_card()").items():
        assert len(tables) == 1, f"cell {i}: {len(tables)} HTML tables, expected the device card"
        heads = [row[0] for row in tables[0]]
        for row in ("Best device", "Versions", "CPU", "RAM"):
            assert row in heads, f"cell {i}: the device card has no {row!r} row: {heads}"
        assert "CUDA" in heads or any(h.startswith("cuda:") for h in heads), heads


@pytest.mark.parametrize("executed", with_code("memory_summary()"), indirect=True)
def test_memory_summaries_are_html_with_a_table_per_cuda_device(executed):
    cells = executed.cells_with("memory_summary()")
    assert cells
    for i in cells:
        summary = executed.nb.cell(i).locator(".jp-RenderedHTMLCommon").filter(has_text="Process RAM")
        assert summary.count() == 1, f"cell {i}: no memory summary drawn as HTML"
        text = summary.text_content()
        tables = executed.tables(i)
        assert len(tables) == text.count("CUDA memory summary, device"), f"cell {i}: {text[:300]}"
        for t in tables:
            assert len(t) >= 2 and all(len(r) == len(t[0]) for r in t), f"cell {i}: a ragged or empty table {t}"


@pytest.mark.parametrize("executed", with_code("RunManager::new"), indirect=True)
def test_run_tables_are_html_tables_with_a_row_per_run(executed):
    cuda = [i for i in executed.tagged("cuda-available")]
    on_cuda = bool(cuda) and "true" in executed.nb.cell(cuda[0]).locator(OUTPUT).all_text_contents()[-1]
    runs = 6 * (2 if on_cuda else 1)  # lr 0.01 × batch 1000/10000/20000 × workers 0/1 × devices
    (i,) = executed.tagged("runs")
    tables = executed.tables(i)
    assert len(tables) == 1, f"runs: {len(tables)} HTML tables"
    header, *rows = tables[0]
    assert header[:4] == ["run", "epoch", "loss", "accuracy"], header
    assert [r[0] for r in rows] == [str(n) for n in range(1, runs + 1)], f"runs: rows {rows}"
    # The table is shown once, live, by the training cell; the next shows the files save wrote.
    (i,) = executed.tagged("run-table")
    assert executed.tables(i) == [], "run-table: the run table shown a second time"
    (i,) = executed.tagged("device-comparison")
    (table,) = executed.tables(i)
    assert len(table) == 1 + (2 if on_cuda else 1), table


def test_only_the_deliberate_errors_are_shown(executed):
    saved = executed.saved
    expected = executed.tagged("raises-exception")
    errors = {i: o for i, c in enumerate(saved.cells) if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"}
    unexpected = {i: f"{o.ename}: {o.evalue}"[:300] for i, o in errors.items() if i not in expected}
    assert not unexpected, f"errors in cells not tagged raises-exception: {unexpected}"
    for i in expected:
        assert i in errors, f"cell {i} is tagged raises-exception but ran without an error"
        shown = "\n".join(executed.outputs(i).all_text_contents())
        assert errors[i].ename in shown, f"cell {i}: the error {errors[i].ename} is not on the page: {shown[:300]}"
        if "interrupt" in saved.cells[i].metadata.get("tags", []):
            assert errors[i].ename == "KeyboardInterrupt", f"{errors[i].ename}: {errors[i].evalue}"
    prompts = executed.nb.prompts()
    not_run = [i for i, p in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", p.strip())]
    assert not not_run, f"code cells {not_run} (counting code cells only) never ran: {prompts}"
