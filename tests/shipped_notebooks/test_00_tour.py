"""Notebook 00, the tour: tensors, the device card, memory, live plots, widgets, an interrupt, `:`
commands, TensorBoard."""
from __future__ import annotations

import json
import re

from .outputs import assert_plot_is_an_image, cuda_present, numbers, series_y
from .runs import output_text


def test_tour_tensor_renders_with_shape_dtype_and_device(tour):
    text = tour.text("first-tensor") + json.dumps(tour.json("first-tensor"))
    assert re.search(r"3,\s*4", text), text
    assert "float" in text.lower() or "Float" in text


def test_tour_device_card_lists_cpu_and_any_cuda_devices(tour):
    assert tour.bundles("device-card", "text/html"), "the device card has no HTML"
    card = tour.json("device-card")[-1]
    assert card["cpu"]["cores"] >= 1 and card["cpu"]["ram_bytes"] > 0
    devices = [d["device"] for d in card["devices"]]
    if card["cuda_available"]:
        assert any(d.startswith("cuda:") for d in devices)
        assert all(d["total_memory"] > 0 for d in card["devices"] if d["device"].startswith("cuda"))
    assert "cpu" in devices


def test_tour_memory_table_has_numbers_for_every_device(tour):
    for tag in ("memory-before", "memory-after"):
        table = tour.json(tag)[-1]
        assert table["rows"], f"{tag}: empty memory table"
        for row in table["rows"]:
            numeric = [v for k, v in row.items() if k != "device" and isinstance(v, (int, float))]
            assert numeric and all(v >= 0 for v in numeric), row
            assert any(v > 0 for v in numeric), row


def test_tour_memory_table_sees_the_256_mib_tensor(tour):
    before, after = tour.json("memory-before")[-1], tour.json("memory-after")[-1]
    if cuda_present(tour):
        grew = after["rows"][0]["allocated"] - before["rows"][0]["allocated"]
    else:
        # CUDA's allocator statistics do not apply: the table says so and shows the process RAM.
        assert after["cuda"] is False
        rss = lambda t: next(r["process_rss"] for r in t["rows"] if r["device"] == "cpu")
        grew = rss(after) - rss(before)
    assert grew >= 250 * 2**20, grew


def test_tour_live_plot_is_an_image_and_its_loss_falls(tour):
    assert_plot_is_an_image(tour, "live-training")
    y = series_y(tour, "live-training")
    assert len(y) == 20 and y[-1] < 0.5 * y[0], y


def test_tour_progress_reaches_its_total(tour):
    text = tour.text("live-training") + json.dumps(tour.json("live-training"))
    (bar,) = [j for j in tour.json("live-training") if "total" in j]
    assert bar["done"] == bar["total"] == 200, bar


def test_tour_interrupt_ends_the_cell_with_keyboard_interrupt(tour):
    errors = [o for o in tour.outputs("interrupt") if o.get("output_type") == "error"]
    assert errors, "the interrupted cell did not end with an error"
    assert "KeyboardInterrupt" in output_text(errors)


def test_tour_model_survives_the_interrupt_and_kept_training(tour):
    text = tour.text("after-interrupt")
    (loss,) = numbers(r"loss is now ([0-9.]+)", text)
    trained = series_y(tour, "live-training")[-1]
    assert loss < trained, (loss, trained)  # it kept training after the plotted 200 epochs


def test_tour_vars_lists_the_notebook_variables(tour):
    text = tour.text("vars")
    for name in ("model", "opt", "device"):
        assert re.search(rf"\b{name}\b", text), f"{name} missing from :vars\n{text}"


def test_tour_timeit_reports_a_time(tour):
    assert re.search(r"\d+(\.\d+)?\s*(ns|µs|us|ms|s)\b", tour.text("timeit")), tour.text("timeit")


def test_tour_writes_the_live_plots_loss_for_tensorboard(tour):
    text = tour.text("tensorboard")
    # One scalar per point of the live plot (every 10th of the `epochs` parameter's 200).
    assert re.fullmatch(r"20 scalars in runs/[^/]+/events\.out\.tfevents\.\d+\.\S+\n", text), text


def test_tour_help_documents_the_commands_shown(tour):
    text = tour.text("help")
    for command in (":vars", ":timing", ":timeit", ":dep"):
        assert command in text, f"{command} missing from :help"


VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def widget_models(run) -> dict:
    """The widgets' models as the run left them: nbclient keeps each comm's state from its
    comm_open and updates, and saves it in the notebook's metadata, as JupyterLab does on save."""
    return run.nb.metadata["widgets"][WIDGET_STATE]["state"]


def referenced(models: dict, ref: str) -> dict:
    assert ref.startswith("IPY_MODEL_"), ref
    return models[ref[len("IPY_MODEL_"):]]


def test_tour_interact_is_a_slider_above_the_plot_it_draws(tour):
    (view,) = tour.bundles("widgets-interact", VIEW)
    models = widget_models(tour)
    box = models[view["model_id"]]
    assert box["model_name"] == "VBoxModel", box
    children = [referenced(models, ref) for ref in box["state"]["children"]]
    assert [c["model_name"] for c in children] == ["FloatSliderModel", "OutputModel"]
    slider = children[0]["state"]
    assert (slider["description"], slider["value"], slider["min"], slider["max"]) == ("frequency", 1.0, 0.5, 5.0)
    plots = [o for o in children[1]["state"]["outputs"] if "image/png" in o.get("data", {})]
    assert len(plots) == 1, children[1]["state"]["outputs"]
    # The plot the closure fills is drawn in the widget's output only, not also above it.
    assert [o["output_type"] for o in tour.outputs("widgets-interact")] == ["execute_result"]
    # Without a widget manager (this notebook on GitHub, nbconvert without the state) the HTML
    # form of the same output stands in.
    (html,) = tour.bundles("widgets-interact", "text/html")
    assert "frequency" in html


def test_tour_training_loop_steered_by_widgets_fits_its_line(tour):
    text = tour.text("widgets-training")
    (w,) = numbers(r"w = (-?[0-9.]+)", text)
    (b,) = numbers(r"b = (-?[0-9.]+)", text)
    assert abs(w - 3.0) < 0.05 and abs(b - 1.0) < 0.05, text
    # Nobody pressed Stop in this run: it went to the end.
    assert "stopped by the button" not in text


def test_tour_progress_bar_is_a_tqdm_widget_that_reached_its_total(tour):
    (view,) = tour.bundles("widgets-training", VIEW)
    models = widget_models(tour)
    box = models[view["model_id"]]
    assert box["model_name"] == "HBoxModel", box
    label, bar, info = (referenced(models, ref) for ref in box["state"]["children"])
    assert (label["model_name"], bar["model_name"], info["model_name"]) == ("HTMLModel", "FloatProgressModel", "HTMLModel")
    assert bar["state"]["value"] == bar["state"]["max"] == 300, bar["state"]
    assert bar["state"]["bar_style"] == "success"
    assert "fitting" in label["state"]["value"]
    assert "300/300" in info["state"]["value"]
    (html,) = tour.bundles("widgets-training", "text/html")
    assert "300/300" in html
