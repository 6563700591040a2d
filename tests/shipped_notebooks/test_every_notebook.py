"""What holds for every shipped notebook: the committed files (metadata, outputs of a real run,
built from their sources, pictures with alt text) and every notebook's run."""
from __future__ import annotations

import json
import re
from base64 import b64decode

import nbformat
import pytest

from .outputs import png_size
from .runs import (ALL, BOOTCAMP, CIFAR, CPU_CUDA_MPS, DEEPLIZARD, FIXTURES, NOTEBOOKS, TOUR, USING_GPU,
                   is_data_mime, runner)


# --- the committed files -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_notebook_runs_on_the_tchbook_kernel(name):
    meta = nbformat.read(NOTEBOOKS / name, as_version=4).metadata
    assert meta["kernelspec"] == {"name": "tchbook", "display_name": "Rust (tchbook)", "language": "rust"}
    assert meta["language_info"]["name"] == "rust"


# The notebooks a hosted runtime is pointed at: the tour, and 01, whose cells colab-setup.ipynb runs.
HOSTED = [TOUR, USING_GPU]


@pytest.mark.parametrize("name", ALL)
def test_only_notebooks_a_hosted_runtime_opens_ask_it_for_a_gpu(name):
    """Colab reads `accelerator` and `colab.gpuType` to attach a GPU; a notebook that runs only on
    the tchbook kernel, which no hosted runtime has, must not ask for one."""
    meta = nbformat.read(NOTEBOOKS / name, as_version=4).metadata
    if name in HOSTED:
        assert meta["accelerator"] == "GPU" and meta["colab"]["gpuType"]
    else:
        assert "accelerator" not in meta and "colab" not in meta, sorted(meta)


def stderr_outputs(nb: nbformat.NotebookNode) -> list:
    return [(c.metadata.get("tags"), "".join(o["text"])[:200]) for c in nb.cells for o in c.get("outputs", [])
            if o.get("output_type") == "stream" and o.get("name") == "stderr"]


@pytest.mark.parametrize("name", ALL)
def test_committed_outputs_hold_no_stderr(name):
    """No notebook's cells write to stderr, so stderr in the committed outputs is the kernel's report
    about the machine that made them (a build cache repaired at start, say): nothing a reader of
    the notebook should meet (notebooks/run.py --save refuses to write it)."""
    assert not stderr_outputs(nbformat.read(NOTEBOOKS / name, as_version=4))


def split_streams(nb: nbformat.NotebookNode) -> list:
    """(cell tags, stream name) wherever two stream outputs of one name follow each other in a cell."""
    found = []
    for c in nb.cells:
        outputs = c.get("outputs", [])
        for a, b in zip(outputs, outputs[1:]):
            if a.get("output_type") == b.get("output_type") == "stream" and a.get("name") == b.get("name"):
                found.append((c.metadata.get("tags"), a["name"]))
    return found


@pytest.mark.parametrize("name", ALL)
def test_committed_streams_are_one_output_per_run_of_text(name):
    assert not split_streams(nbformat.read(NOTEBOOKS / name, as_version=4))


# A 640×400 loss plot is 10-30 KB as an indexed PNG; RGB made them 105-180 KB.
PNG_BYTES_MAX = 60_000


@pytest.mark.parametrize("name", ALL)
def test_committed_images_are_small_pngs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for c in nb.cells:
        for o in c.get("outputs", []):
            png = o.get("data", {}).get("image/png")
            if png is not None:
                png_size(png)
                size = len(b64decode(png))
                assert size < PNG_BYTES_MAX, (c.metadata.get("tags"), size)


# 04's cell that prints the speed-up per batch size came after its GPU outputs, so it has none;
# the GPU check's next run fills it (its rehearsal in scripts/test already does: not strict).
UNRUN_NEW_CELL = pytest.mark.xfail(strict=False, reason="04's speed-up-per-batch-size cell is newer than "
                                   "its committed GPU outputs; scripts/gpu-check --apply fills it")


@pytest.mark.parametrize("name", [pytest.param(n, marks=UNRUN_NEW_CELL) if n == DEEPLIZARD else n for n in ALL])
def test_notebook_is_committed_with_outputs_of_a_real_run(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), "cells without an execution count: not executed"
    counts = [c.execution_count for c in code]
    assert counts == sorted(counts) and len(set(counts)) == len(counts), "cells executed out of order"
    for c in code:
        for o in c.outputs:
            if o.get("output_type") == "error":
                assert "raises-exception" in c.metadata.get("tags", []), f"committed error: {o.get('evalue')}"


def load_build(monkeypatch):
    """notebooks/build.py, which imports provenance.py beside it."""
    import importlib.util
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    spec = importlib.util.spec_from_file_location("build", NOTEBOOKS / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


@pytest.mark.parametrize("name", ALL)
def test_committed_notebook_is_built_from_its_source(name, monkeypatch):
    """An edit of notebooks/src/*.md reaches the notebook a reader opens: its cells (text, kinds,
    tags) are what notebooks/build.py makes of the source, saying how the committed outputs were
    made (`python notebooks/build.py --keep-outputs` rebuilds them so)."""
    build = load_build(monkeypatch)
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    made = build.provenance.of(committed)
    assert made, "the metadata says nothing of how the outputs were made (metadata.tchbook.provenance)"
    built = build.build(NOTEBOOKS / "src" / name.replace(".ipynb", ".md"), made)
    cells = lambda nb: [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]
    assert cells(committed) == cells(built), \
        "the notebook differs from its source: run python notebooks/build.py --keep-outputs"


def shows_cuda(nb: nbformat.NotebookNode) -> bool:
    """Whether the outputs name a CUDA device anywhere (a device card, a tensor, a run table)."""
    return any("cuda:" in json.dumps(o.get("data", {})) + "".join(o.get("text", ""))
               for c in nb.cells for o in c.get("outputs", []))


def timed_by_nbclient(nb: nbformat.NotebookNode) -> bool:
    """Whether the code cells carry the timings nbclient records as it runs them through a kernel
    (`metadata.execution`); `tchbook export --merge` writes none."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return bool(code) and all("iopub.execute_input" in c.metadata.get("execution", {}) for c in code)


@pytest.mark.parametrize("name", ALL)
def test_first_cell_says_how_the_committed_outputs_were_made(name, monkeypatch):
    """The first cell names the program that made the outputs, how it was built, the machine and
    GPU, the date and the commit, as the tools recorded them, and agrees with the outputs: a run
    through the kernel left nbclient's timings and an exported program's merge none, and outputs
    that name a CUDA device come from a run that saw a GPU."""
    build = load_build(monkeypatch)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    made = build.provenance.of(nb)
    assert made, "no metadata.tchbook.provenance"
    first = nb.cells[0].source
    assert build.provenance.sentence(made) in first
    assert re.search(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC from commit [0-9a-f]{7}\b", first), first
    assert re.search(r"a \d+-core .*\(.+\) with (an .+|no GPU); device `", first), first
    if made["program"] == "kernel":
        assert "a run through the tchbook kernel (`notebooks/run.py --save`)" in first
        assert f"at opt-level {made['opt_level']}" in first
        assert timed_by_nbclient(nb), "a kernel run's cells carry nbclient's timings"
    else:
        assert made["program"] == "exported", made
        assert "exported program (`tchbook export`, built with `cargo build --release`" in first
        assert "merged back with `tchbook export --merge`" in first
        assert not timed_by_nbclient(nb), "merged outputs carry no nbclient timings"
    # Where a notebook prints times, its text says which build printed them.
    if "{{TIMES}}" in (NOTEBOOKS / "src" / name.replace(".ipynb", ".md")).read_text():
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert build.provenance.times(made) and build.provenance.times(made) in prose
    if shows_cuda(nb):
        assert made.get("gpu") and "device `cuda:0`" in first, "CUDA outputs from a run that saw no GPU"
    else:
        assert not made.get("gpu") and "device `cpu`" in first


# 04's committed outputs are a GPU run merged by `tchbook export --merge` before it kept widget
# state; the GPU check's next run merges them again with it (scripts/test's rehearsal of that
# merge already passes here, so the mark is not strict; remove it after the next GPU check).
UNSAVED_WIDGETS = pytest.mark.xfail(strict=False, reason="GPU outputs merged before --merge saved "
                                    "widget state; scripts/gpu-check --apply rewrites them")


@pytest.mark.parametrize("name", [pytest.param(n, marks=UNSAVED_WIDGETS) if n == DEEPLIZARD else n
                                  for n in ALL])
def test_every_widget_view_in_the_committed_outputs_has_its_saved_model(name, monkeypatch):
    """A front end with a widget manager draws a widget view from the state saved in the notebook
    (run.py --save and `tchbook export --merge` write it; `build.py --keep-outputs` keeps it): a
    view whose model was not saved falls back or fails. Rebuilding from the source keeps it too."""
    views = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
             for c in nbformat.read(NOTEBOOKS / name, as_version=4).cells for o in c.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    saved = committed.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    missing = [view for view in views if view not in saved.get("state", {})]
    assert not missing, f"widget views without a saved model: {missing}"
    build = load_build(monkeypatch)
    rebuilt = build.build(NOTEBOOKS / "src" / name.replace(".ipynb", ".md"))
    build.keep_outputs(rebuilt, committed)
    assert rebuilt.metadata.get("widgets") == committed.metadata.get("widgets")
    assert rebuilt.metadata.get("tchbook") == committed.metadata.get("tchbook")


@pytest.mark.parametrize("name", ALL)
def test_committed_outputs_open_as_pictures_and_tables_not_json_trees(name):
    """A reader who opens the committed notebook in JupyterLab sees what the cells rendered:
    an `application/json` part anywhere would be shown as a JSON tree instead."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for c in nb.cells:
        for o in c.get("outputs", []):
            assert "application/json" not in o.get("data", {}), (c.metadata.get("tags"), sorted(o["data"]))


@pytest.mark.parametrize("name", ALL)
def test_first_cell_names_the_device_the_committed_outputs_show(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    m = re.search(r"device `(cpu|cuda:\d+|mps)`", first.source)
    assert m, "the first cell does not say on what device the outputs were produced"
    card_mime = "application/vnd.tchbook.device-card+json"
    cards = [o["data"][card_mime] for c in nb.cells if "device-card" in c.metadata.get("tags", [])
             for o in c.outputs if card_mime in o.get("data", {})]
    if cards:
        card = cards[-1] if isinstance(cards[-1], dict) else json.loads(cards[-1])
        assert bool(card.get("cuda_available")) == m.group(1).startswith("cuda"), \
            "the first cell names a different device than the committed device card shows"


def images_without_alt_text(nb: nbformat.NotebookNode) -> list:
    """(cell tags, MIME type) of every image output whose metadata gives no alt text under its
    MIME type: the `<img alt>` nbconvert's HTML writes and a screen reader reads."""
    missing = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            for mime in o.get("data", {}):
                alt = (o.get("metadata", {}).get(mime) or {}).get("alt")
                if mime.startswith("image/") and not (isinstance(alt, str) and alt.strip()):
                    missing.append((c.metadata.get("tags"), mime))
    return missing


# nbconvert's stand-in for an image without alt text (it also warns "Alternative text is missing").
NO_ALT = "No description has been provided for this image"


@pytest.mark.parametrize("name", ALL)
def test_committed_images_carry_alt_text_into_the_html(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert not images_without_alt_text(nb)
    assert NO_ALT not in runner.html(nb)


# Each tutorial's sections, as the notebook's headings name them, in order.
SECTIONS = {
    TOUR: ["The device card", "Memory", "Live plots and progress", "Interrupting a cell",
           "`:` commands", "Completion"],
    USING_GPU: ["Which parts go to the GPU", "Sending the model to the GPU", "Older PyTorch versions",
                "Sending the data to the GPU", "Challenge: adapt the training loop"],
    CPU_CUDA_MPS: ["The CPU", "CUDA", "MPS", "Moving tensors to the device", "Moving a model to the device",
                   "Important note: cross-device calculations fail"],
    CIFAR: ["Introduction", "Step 1: Enabling GPU acceleration", "Data", "The network",
            "Loss function and optimiser", "Training", "Saving the trained weights", "Reloading them",
            "Testing: overall accuracy", "Testing: accuracy per class", "Note: where is the speed-up?"],
    DEEPLIZARD: ["Using a GPU for deep learning", "PyTorch GPU example", "General idea of using a GPU",
                 "PyTorch tensor computations on a GPU", "PyTorch nn.Module computations on a GPU",
                 "Passing a sample to the network", "Writing device-agnostic PyTorch code",
                 "PyTorch GPU training performance test", "Refactoring the RunManager class",
                 "Refactoring the training loop", "CPU vs CUDA", "Quiz notes"],
    BOOTCAMP: ["What is CUDA?", "How do I install PyTorch for GPU?", "How do I know if I have CUDA available?",
               "Using GPU and CUDA", "Using CUDA instead of CPU", "Sending Models to GPU",
               "Convert Tensors to .cuda() tensors", "Training on the device"],
}


@pytest.mark.parametrize("name", ALL)
def test_notebook_covers_every_tutorial_section_in_order(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # Headings and bold call-outs of the markdown cells; `#` lines inside ```python quotes are not headings.
    titles = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#+ ", line):
                titles.append(line.lstrip("#").strip())
            elif not fenced and line.startswith("> **"):
                titles.append(line[4:].split("**")[0].rstrip("."))
    position = 0
    for section in SECTIONS[name]:
        found = [i for i, t in enumerate(titles) if i >= position and t.startswith(section)]
        assert found, f"no section {section!r} after {titles[position - 1] if position else 'the start'!r}"
        position = found[0] + 1


@pytest.mark.parametrize("name", ALL)
def test_notebook_code_cells_pair_with_the_python_they_reproduce(name):
    """Side by side: the notebook quotes the original's Python in the markdown before its Rust."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    quoted = sum(c.source.count("```python") for c in nb.cells if c.cell_type == "markdown")
    code = sum(1 for c in nb.cells if c.cell_type == "code")
    assert code >= 5
    if name != TOUR:
        assert quoted >= 3, "the tutorial's Python is not quoted beside the Rust"


# --- every notebook, executed ------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_notebook_executes_without_unexpected_errors(name, request):
    run = request.getfixturevalue(FIXTURES[name])
    unexpected = [o for tags, o in run.errors() if "raises-exception" not in tags]
    assert not unexpected, unexpected
    assert all(c.execution_count for c in run.nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", ALL)
def test_executed_streams_are_one_output_per_run_of_text(name, request):
    run = request.getfixturevalue(FIXTURES[name])
    assert not split_streams(run.nb)


@pytest.mark.parametrize("name", ALL)
def test_rich_outputs_offer_front_ends_only_human_views(name, request):
    """JupyterLab and Notebook 7 rank their JSON viewer above HTML and images: one
    `application/json` part turns a plot or a table into a collapsible tree. Every bundle must
    carry its numbers under the prelude's vendor type instead, beside a view a person reads."""
    run = request.getfixturevalue(FIXTURES[name])
    human = {"text/html", "image/png", "image/svg+xml", "text/plain"}
    for c in run.nb.cells:
        for o in c.get("outputs", []):
            data = o.get("data", {})
            assert "application/json" not in data, (c.metadata.get("tags"), sorted(data))
            if any(is_data_mime(m) for m in data):
                assert human & set(data), (c.metadata.get("tags"), sorted(data))


@pytest.mark.parametrize("name", ALL)
def test_every_image_has_alt_text_that_describes_it_in_the_html_too(name, request):
    """Each image output's alt text (its metadata) says what the plot shows, from the numbers
    behind it (title, last loss), and the HTML scripts/run-notebooks writes carries it on every
    `<img>`."""
    run = request.getfixturevalue(FIXTURES[name])
    assert not images_without_alt_text(run.nb)
    for c in run.nb.cells:
        for o in c.get("outputs", []):
            data = o.get("data", {})
            plot = data.get("application/vnd.tchbook.loss-plot+json")
            if plot is None or "image/png" not in data:
                continue
            plot = plot if isinstance(plot, dict) else json.loads(plot)
            alt = o["metadata"]["image/png"]["alt"]
            assert alt.startswith(f'Line plot "{plot["title"]}"'), alt
            for series in plot["series"]:
                assert f'{series["name"]} over' in alt and f'{series["y"][-1]:.4f}' in alt, (alt, series["name"])
    html = runner.html(run.nb)
    images = re.findall(r"<img\b[^>]*>", html)
    assert NO_ALT not in html, [img[:120] for img in images if NO_ALT in img]
    assert all(re.search(r"\balt=", img) for img in images)
