"""A person at the keyboard: live output, the Stop button, Tab and Shift+Tab, restarting.

Each test writes its own small notebook (the `notebook` fixture) and opens it, so each gets a
fresh kernel, as a person opening a new notebook does.
"""
from __future__ import annotations

import json
import re
import time

from labpage import OUTPUT, Notebook

COMPILE_S = 300  # a cell on a cold build cache compiles for a while before it runs


def shown(nb: Notebook, index: int) -> str:
    """What the cell's outputs look like, for failure messages: renderer and text of each."""
    return repr(nb.cell(index).locator(OUTPUT).evaluate_all(
        "os => os.map(o => [o.className.replace(/lm-Widget|jp-OutputArea-output|jp-mod-trusted/g, '').trim(),"
        " o.textContent.slice(0, 200)])"))


def wait_for_text(nb: Notebook, index: int, text: str, timeout_s: float) -> None:
    """Until the cell's outputs show `text`; fails with what they show instead."""
    try:
        nb.cell(index).locator(OUTPUT).filter(has_text=text).first.wait_for(timeout=timeout_s * 1000)
    except Exception as e:  # playwright's TimeoutError
        raise AssertionError(f"cell {index} never showed {text!r} within {timeout_s} s; it shows {shown(nb, index)}") from e


LIVE_CELL = """\
let mut bar = Progress::new(40, "step");
let mut plot = LossPlot::new("live test");
for i in 1..=40 {
    plot.push(i as f64, 1.0 / i as f64);
    bar.tick();
    std::thread::sleep(std::time::Duration::from_millis(150));
}
bar.finish();
plot.finish();"""

# Finds the cell's progress bar and plot outputs, tags each renderer element with a JS property
# (not an attribute: nothing on the page changes) the first time, and reads them.
# Where a widget manager runs (JupyterLab with jupyterlab_widgets), the bar is tqdm.notebook's
# widget, whose fill's width is the fraction done; elsewhere an HTML <progress>.
SAMPLE = """(os) => {
    const bar = os.find(o => o.querySelector('progress, .progress-bar'));
    const plot = os.find(o => o.querySelector('img'));
    for (const [o, mark] of [[bar, 'bar'], [plot, 'plot']]) if (o && !o._tchbookMark) o._tchbookMark = mark;
    const img = plot && plot.querySelector('img');
    const fraction = (b) => {
        const p = b.querySelector('progress');
        if (p) return +p.getAttribute('value') / +p.getAttribute('max');
        return parseFloat(b.querySelector('.progress-bar').style.width || '0') / 100;
    };
    return {
        outputs: os.length,
        bar: bar ? {mark: bar._tchbookMark, fraction: fraction(bar), text: bar.textContent} : null,
        plot: plot ? {mark: plot._tchbookMark, src: img.getAttribute('src'), complete: img.complete,
                      width: img.naturalWidth, height: img.naturalHeight} : null,
        marked: os.filter(o => o._tchbookMark).length,
    };
}"""


def test_progress_bar_and_plot_update_in_place_and_end_complete(notebook):
    nb = notebook(LIVE_CELL)
    nb.start_cell(0)
    outputs = nb.cell(0).locator(OUTPUT)

    def sample() -> dict:
        return outputs.evaluate_all(SAMPLE)

    deadline = time.monotonic() + COMPILE_S
    first = sample()
    while not (first["bar"] and first["plot"] and first["bar"]["fraction"] >= 3 / 40):
        running = time.monotonic() < deadline and not nb.done(0)
        assert running, f"no progress bar and plot while the cell ran; it shows {shown(nb, 0)}"
        time.sleep(0.05)
        first = sample()
    assert first["bar"]["fraction"] < 1, "the loop ended before it could be watched"
    time.sleep(1.5)  # the plot redraws at most twice a second, the bar ten times
    second = sample()
    assert second["bar"] and second["plot"], f"the bar or the plot went away: {shown(nb, 0)}"
    assert second["marked"] == 2 and second["outputs"] == first["outputs"], \
        f"the outputs were replaced or appended to, not updated in place: {first} then {second}"
    assert second["bar"]["mark"] == "bar" and second["plot"]["mark"] == "plot", (first, second)
    assert second["bar"]["fraction"] > first["bar"]["fraction"], f"the bar did not move: {first['bar']} then {second['bar']}"
    assert second["plot"]["src"] != first["plot"]["src"], "the plot was not redrawn while points came in"

    nb.wait_cell_done(0, 60)
    last = sample()
    assert last["marked"] == 2 and last["outputs"] == first["outputs"], (first, last)
    bar, plot = last["bar"], last["plot"]
    assert bar["fraction"] == 1, bar
    assert "100%" in bar["text"] and "40/40" in bar["text"], bar["text"]
    assert plot["complete"] and plot["width"] > 100 and plot["height"] > 100, plot
    assert nb.json_trees() == 0


def test_stop_button_ends_a_prelude_loop_within_a_second_and_keeps_variables(notebook):
    nb = notebook(
        "let kept = vec![1, 2, 3];",
        "for _ in progress(0..1_000_000) {\n    std::thread::sleep(std::time::Duration::from_millis(10));\n}",
        'println!("kept after the interrupt: {:?}", kept);',
    )
    nb.run_cell(0)
    nb.start_cell(1)
    # The bar's first output means the loop runs (it is compiled and started).
    nb.cell(1).locator(OUTPUT).first.wait_for(timeout=COMPILE_S * 1000)
    time.sleep(0.5)
    started = time.monotonic()
    nb.press_stop()
    wait_for_text(nb, 1, "KeyboardInterrupt", 10)
    took = time.monotonic() - started
    assert took < 1.0, f"the cell ended {took:.2f} s after Stop was pressed"
    nb.wait_cell_done(1, 10)
    nb.run_cell(2)
    wait_for_text(nb, 2, "kept after the interrupt: [1, 2, 3]", 30)


def test_stop_button_on_a_plain_training_loop_keeps_the_trained_model(notebook):
    nb = notebook(
        "let vs = nn::VarStore::new(Device::Cpu);\n"
        "let model = nn::linear(vs.root(), 4, 1, Default::default());\n"
        "let mut opt = nn::Sgd::default().build(&vs, 0.01).unwrap();\n"
        "let x = Tensor::randn([64, 4], (Kind::Float, Device::Cpu));",
        # Plain tch, no prelude loop: the kernel's own check in the loop body stops it.
        'println!("training");\nlet mut steps = 0u64;\nloop {\n'
        "    let loss = model.forward(&x).pow_tensor_scalar(2).mean(Kind::Float);\n"
        "    opt.backward_step(&loss);\n"
        "    steps += 1;\n}",
        'println!("model kept: {:?}", model.ws.size());',
    )
    nb.run_cell(0)
    nb.start_cell(1)
    wait_for_text(nb, 1, "training", COMPILE_S)
    time.sleep(0.5)
    started = time.monotonic()
    nb.press_stop()
    wait_for_text(nb, 1, "KeyboardInterrupt", 10)
    took = time.monotonic() - started
    assert took < 1.0, f"the cell ended {took:.2f} s after Stop was pressed"
    text = "\n".join(nb.cell(1).locator(OUTPUT).all_text_contents())
    # Stopped in the loop: at the check after the statement it was in (lines 4-6), or at the
    # loop body's own, which stands after its `{`, on the `loop {` line (3).
    assert re.search(r"at cell line [3-6]\n", text), f"not placed in the loop: {text}"
    nb.wait_cell_done(1, 10)
    nb.run_cell(2)
    wait_for_text(nb, 2, "model kept: [1, 4]", 60)


def test_stop_button_on_a_loop_in_a_library_names_the_lost_variables(notebook):
    nb = notebook(
        'let kept = vec![1, 2, 3];\nlet greeting = String::from("hello");',
        'println!("spinning");\nstd::iter::repeat(()).for_each(|()| std::hint::spin_loop());',
        "1 + 1",
    )
    nb.run_cell(0)
    nb.start_cell(1)
    wait_for_text(nb, 1, "spinning", COMPILE_S)
    nb.press_stop()
    # core's for_each never checks the flag: the kernel waits its grace period (3 s), then
    # restarts the evaluation process and names what went with it.
    wait_for_text(nb, 1, "KeyboardInterrupt", 30)
    text = "\n".join(nb.cell(1).locator(OUTPUT).all_text_contents())
    assert "kept" in text and "greeting" in text, f"the lost variables are not named: {text}"
    nb.wait_cell_done(1, 30)
    nb.run_cell(2)
    wait_for_text(nb, 2, "2", 60)


# The open completion menu: each item's name and the kind JupyterLab draws beside it (a letter
# from `_jupyter_types_experimental`), and the text of the cell being completed.
MENU = """(cell) => {
    const menu = document.querySelector('.jp-Completer');
    const open = menu && !menu.classList.contains('lm-mod-hidden');
    const items = open ? [...menu.querySelectorAll('.jp-Completer-item')].map(li => ({
        name: li.querySelector('.jp-Completer-match')?.textContent.trim(),
        kind: li.querySelector('.jp-Completer-type')?.textContent.trim() ?? '',
    })) : [];
    const source = document.querySelectorAll('.jp-Notebook .jp-Cell')[cell].querySelector('.cm-content').textContent;
    return {items, names: items.map(i => i.name), source};
}"""


def complete(nb: Notebook, cell: int, typed: str, want: str) -> tuple[dict, float]:
    """Types `typed` in the cell and presses Tab once; returns what the menu shows as soon as it
    offers `want` (or the cell's text changed: a single match is inserted without a menu), or
    what it shows after 5 s. JupyterLab drops a kernel reply slower than its provider timeout
    (1000 ms), so waiting longer cannot bring a late reply; 5 s only absorb the browser's pace."""
    nb.page.keyboard.type(typed)
    started = time.monotonic()
    nb.page.keyboard.press("Tab")
    while True:
        found = nb.page.evaluate(MENU, cell)
        took = time.monotonic() - started
        if want in found["names"] or found["source"] != typed or took > 5:
            return found, took
        time.sleep(0.05)


def test_first_tab_completion_on_a_fresh_kernel_shows_the_method(notebook):
    nb = notebook("let v = vec![1, 2, 3];", "")
    nb.run_cell(0)
    nb.edit(1)
    found, took = complete(nb, 1, "v.le", "len")
    # The menu may also hold words of the notebook itself (JupyterLab's context provider), which
    # need no kernel.
    assert "len" in found["names"] or found["source"] == "v.len", (
        f"the first Tab on a fresh kernel offered no `len` within {took:.1f} s (JupyterLab drops kernel "
        f"replies slower than 1 s): menu {found['names'][:10]}, cell now {found['source']!r}")


def test_tab_after_the_first_lists_public_members_first_with_their_kinds(notebook):
    """A person presses Tab again a moment later. JupyterLab's completer asks the kernel for the
    documentation of the item it highlights (an inspect_request) right after each reply, so a
    slow answer to that would hold up the next completion past the 1 s JupyterLab waits."""
    nb = notebook("let v = vec![1, 2, 3];", "")
    nb.run_cell(0)
    nb.edit(1)
    complete(nb, 1, "v.le", "len")
    nb.page.keyboard.press("Escape")  # closes the menu, stays in the editor
    nb.page.keyboard.press("Control+a")
    nb.page.keyboard.press("Backspace")
    found, took = complete(nb, 1, "v.", "push")
    status = nb.page.locator(".jp-StatusBar-TextItem").filter(has_text="|").all_text_contents()
    assert "push" in found["names"], (
        f"the second Tab (`v.`) offered no `push` within {took:.1f} s; kernel status {status}, "
        f"menu {found['names'][:10]}")
    # Vec's public API first, never its private fields (`buf`), every kernel item with its kind.
    assert "buf" not in found["names"][:10], f"a private field among the first items: {found['names'][:10]}"
    assert all(i["kind"] for i in found["items"] if i["name"] in ("push", "len", "iter")), found["items"][:10]


def test_shift_tab_shows_documentation(notebook):
    nb = notebook("")
    nb.edit(0)
    nb.page.keyboard.type("let bar = Progress")
    nb.page.keyboard.press("Shift+Tab")
    tooltip = nb.page.locator(".jp-Tooltip")
    try:
        tooltip.wait_for(timeout=60_000)  # no timeout in JupyterLab here; the first one starts rust-analyzer
    except Exception as e:
        raise AssertionError("Shift+Tab on `Progress` showed no documentation tooltip in 60 s") from e
    text = tooltip.text_content()
    assert "progress bar" in text.lower(), f"the tooltip does not document Progress: {text[:500]}"


def test_restart_from_the_kernel_menu_forgets_variables_and_runs_cells(notebook):
    nb = notebook("let kept = 7;", "kept + 1", "1 + 1")
    nb.run_cell(0)
    nb.run_cell(1)
    wait_for_text(nb, 1, "8", 30)
    nb.menu("Kernel", "Restart Kernel…")
    nb.page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept").click()
    # The indicator leaves "idle" while the kernel restarts; a restart quicker than the page's
    # polling is missed here, which is harmless: the next cell waits for the kernel anyway.
    try:
        nb.page.wait_for_selector('.jp-Notebook-ExecutionIndicator:not([data-status="idle"])', timeout=5_000)
    except Exception:
        pass
    nb.wait_idle(COMPILE_S)
    nb.run_cell(1)
    wait_for_text(nb, 1, "cannot find value `kept`", 30)
    nb.run_cell(2)
    wait_for_text(nb, 2, "2", 60)


def test_the_kernel_runs_cells_with_its_ports_encrypted(notebook, lab):
    nb = notebook('let secret_word = "pangolin";', 'println!("{secret_word} {}", secret_word.len())')
    nb.run_cell(0)
    nb.run_cell(1)
    wait_for_text(nb, 1, "pangolin 8", 60)
    # The server (transport_encryption "auto", conftest.py) gave this kernel a CURVE key pair.
    session = next(s for s in lab.api("GET", "/api/sessions") if s["path"] == nb.name)
    connection = json.loads((lab.runtime_dir / f"kernel-{session['kernel']['id']}.json").read_text())
    assert len(connection["curve_publickey"]) == 40 and len(connection["curve_secretkey"]) == 40


MATRIX = """\
struct Matrix { rows: Vec<Vec<i32>> }
impl Matrix {
    pub fn evcxr_display(&self) {
        let mut html = String::from("<table class=\\"matrix\\">");
        for row in &self.rows {
            html.push_str("<tr>");
            for x in row { html.push_str(&format!("<td>{x}</td>")); }
            html.push_str("</tr>");
        }
        println!("EVCXR_BEGIN_CONTENT text/html\\n{html}</table>\\nEVCXR_END_CONTENT");
    }
}"""


def test_a_value_with_evcxr_display_renders_as_html_and_printed_markup_stays_text(notebook):
    """evcxr's convention, as its documentation's `Matrix` follows it: the value's own rendering
    is a table on the page; the same words printed by a cell are text a person can read."""
    nb = notebook(
        MATRIX,
        "Matrix { rows: vec![vec![1, 2], vec![3, 4]] }",
        'println!("EVCXR_BEGIN_CONTENT text/html\\n<table class=\\"printed\\"><tr><td>9</td></tr></table>\\nEVCXR_END_CONTENT");',
    )
    for index in range(3):
        nb.run_cell(index)
    wait_for_text(nb, 1, "4", 30)
    cells = nb.cell(1).locator(OUTPUT + " table.matrix td").all_text_contents()
    assert cells == ["1", "2", "3", "4"], f"the value is not a table: {shown(nb, 1)}"
    wait_for_text(nb, 2, "EVCXR_END_CONTENT", 30)
    assert nb.cell(2).locator(OUTPUT + " table").count() == 0, f"printed markup was rendered: {shown(nb, 2)}"
    text = nb.cell(2).locator(OUTPUT).first.text_content()
    assert '<table class="printed">' in text, text


def test_prelude_values_render_as_their_html_and_pictures(notebook, screenshots):
    """A cell ending in a prelude value shows what the value renders, as PyTorch's HTML reprs do
    in ipykernel: a tensor's card, a plot's picture; a std value its text. (The plot's alt text
    travels in the output's metadata, `tests/display.rs`; JupyterLab 4.6 does not put it on
    the image.)"""
    nb = notebook(
        "Tensor::from_slice(&[1.5f32, 2.5, 3.5]).reshape([3, 1])",
        'let mut plot = LossPlot::new("final value");\n'
        "for step in 1..=3 { plot.push(step as f64, 1.0 / step as f64); }\n"
        "plot",
        "40 + 2",
    )
    for index in range(3):
        nb.run_cell(index)
    wait_for_text(nb, 2, "42", 60)
    card = nb.cell(0).locator(OUTPUT + " .tchbook-tensor")
    assert card.count() == 1, f"the tensor is not its card: {shown(nb, 0)}"
    assert "2.5" in card.text_content() and "3, 1" in card.text_content(), card.text_content()
    # The plot showed itself live at its first point; the cell's value is the last output.
    image = nb.cell(1).locator(OUTPUT).last.locator("img")
    assert image.count() == 1, f"the plot is not a picture: {shown(nb, 1)}"
    assert image.evaluate("i => i.complete && i.naturalWidth > 0"), "the picture does not load"
    assert nb.cell(2).locator(OUTPUT).first.text_content().strip() == "42", shown(nb, 2)
    nb.page.screenshot(path=str(screenshots / "prelude-values.png"), full_page=True)
