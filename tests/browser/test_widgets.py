"""Jupyter widgets made in Rust, in JupyterLab with ipywidgets' front end (jupyterlab_widgets,
pinned in scripts/requirements.txt): a person drags a slider and clicks a button while a training
cell runs, and the loop follows; the notebook, saved and reloaded, shows its widgets again.

Screenshot: `widgets.png` (the controls and the loop's output), beside the others
($TCHBOOK_SCREENSHOTS); the README shows it, copied by hand into docs/screenshots/.
"""
from __future__ import annotations

import re

from labpage import OUTPUT, Notebook
from test_interaction import shown, wait_for_text

COMPILE_S = 300
CONTROLS = """\
let lr = FloatSlider::new().min(0.0).max(1.0).step(0.01).with_value(0.1).description("lr");
let stop = Button::new().description("Stop").button_style("danger");
HBox::new(&[&lr, &stop])"""
TRAINING = """\
let clicks = stop.clicks();
let mut seen = lr.value();
let mut steps = 0u64;
println!("training at lr {seen:.2}");
while stop.clicks() == clicks {
    let now = lr.value();
    if now != seen {
        println!("lr {seen:.2} -> {now:.2} at step {steps}");
        seen = now;
    }
    steps += 1;
    interrupt::check();
    std::thread::sleep(std::time::Duration::from_millis(5));
}
println!("stopped by the button at lr {seen:.2}");"""


def widget(nb: Notebook, index: int, css: str):
    """The rendered widget matching `css` in the cell's outputs."""
    return nb.cell(index).locator(OUTPUT).locator(css).first


def test_a_slider_and_a_button_steer_a_running_cell_and_come_back_after_a_reload(notebook, screenshots):
    nb: Notebook = notebook(CONTROLS, TRAINING)
    nb.run_cell(0, timeout_s=COMPILE_S)
    slider = widget(nb, 0, ".widget-slider")
    slider.wait_for(timeout=60_000)
    assert "Error displaying widget" not in nb.outputs_text(), shown(nb, 0)
    button = widget(nb, 0, "button.jupyter-button")
    assert button.text_content().strip() == "Stop"
    readout = widget(nb, 0, ".widget-readout")
    assert readout.text_content().strip() == "0.10"

    # The training cell runs; drag the slider's handle to the right while it does.
    nb.start_cell(1)
    wait_for_text(nb, 1, "training at lr 0.10", COMPILE_S)
    handle = widget(nb, 0, ".noUi-handle")
    box = handle.bounding_box()
    track = widget(nb, 0, ".noUi-target").bounding_box()
    page = nb.page
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(track["x"] + track["width"] * 0.6, box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()
    wait_for_text(nb, 1, "lr 0.10 -> ", 30)
    moved_to = readout.text_content().strip()
    assert float(moved_to) > 0.3, moved_to
    # The loop saw where the slider ended: its last change names the readout's value.
    page.wait_for_function(
        "([sel, value]) => document.querySelectorAll(sel)[1].textContent.includes(`-> ${value} at step`)",
        arg=[".jp-Notebook .jp-Cell", moved_to], timeout=30_000)
    assert not nb.done(1), "the loop ended before the button was pressed"

    # The button stops it, while it runs.
    button.click()
    wait_for_text(nb, 1, f"stopped by the button at lr {moved_to}", 30)
    nb.wait_cell_done(1, 60)
    text = nb.cell(1).locator(OUTPUT).all_text_contents()
    assert not any("Error" in t for t in text), text
    nb.cell(0).scroll_into_view_if_needed()
    nb.page.locator(".jp-NotebookPanel").first.screenshot(path=str(screenshots / "widgets.png"))

    # Saved: the widget's view is in the notebook; opened again in a new page (a reload) with the
    # kernel still running, the page asks the kernel for the models and draws them again where
    # they were.
    saved = nb.save()
    views = [o for o in saved.cells[0].outputs
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, saved.cells[0].outputs
    context = page.context
    page.close()
    nb.page = Notebook.open(nb.lab, context, nb.name).page
    nb.wait_idle(120)
    slider = widget(nb, 0, ".widget-slider")
    slider.wait_for(timeout=60_000)
    assert "Error displaying widget" not in nb.outputs_text(), shown(nb, 0)
    assert widget(nb, 0, ".widget-readout").text_content().strip() == moved_to
    assert re.search(r"Stop", widget(nb, 0, "button.jupyter-button").text_content())
