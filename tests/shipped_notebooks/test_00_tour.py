"""Notebook 00, the tour: tensors, the device card, memory, live plots, an interrupt, `:` commands."""
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


def test_tour_help_documents_the_commands_shown(tour):
    text = tour.text("help")
    for command in (":vars", ":timing", ":timeit", ":dep"):
        assert command in text, f"{command} missing from :help"
