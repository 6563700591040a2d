"""`tchbook export`: every shipped notebook as a standalone program, checked against the kernel.

Each notebook in notebooks/ is exported (`tchbook export --prelude prelude/`, so that the projects
share this workspace's build of tch and the prelude in one target directory), built with cargo,
and run from notebooks/ with `--record`; the recorded outputs must match what the kernel gives
for the same notebook, executed here with nbclient: per cell the same kinds of output in the same
order (consecutive stream writes taken as one, as nbconvert coalesces them), the same MIME types,
the same text with measured numbers (times, memory, random values) masked, and equal numbers
where the notebook seeds them. The `:` commands a program cannot honour (`:vars`, `:help`) must
leave their cells empty. A small notebook written here checks the rest of the contract: items and
final values, a `raises-exception` cell that panics, `:timing`, a panic that stops the run, an
interrupt that a cell never checks, and `--merge`.

Needs what tests/shipped_notebooks/ needs (the kernelspec installed, which scripts/test does) and
cargo. `TCHBOOK_BIN` names the kernel binary (default: `$CARGO_TARGET_DIR/release/tchbook`, else
`target/release/tchbook`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from shipped_notebooks.runs import (  # noqa: F401 (fresh_stand_ins is a fixture)
    ALL, BOOTCAMP, DEEPLIZARD, KERNEL, NOTEBOOKS, ROOT, TOUR, execute, fresh_stand_ins)

TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
BIN = Path(os.environ.get("TCHBOOK_BIN") or TARGET / "release" / "tchbook")
# The prelude the kernel runs (TCHBOOK_PRELUDE_DIR makes the kernel use a checkout's), so that the
# exported programs and the kernel show the same prelude's output.
PRELUDE = Path(os.environ.get("TCHBOOK_PRELUDE_DIR") or ROOT / "prelude")
BUILD_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 1800

# `:` commands the exported program drops (it says so in a comment): no outputs there.
DROPPED = (":vars", ":help")


def tchbook(*args: str) -> str:
    if not BIN.exists():
        pytest.fail(f"{BIN} is missing: build the kernel first (`cargo build --release -p tchbook`)")
    done = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"tchbook {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def build(project: Path) -> Path:
    """Builds an exported project into the shared target directory; returns its binary."""
    done = subprocess.run(["cargo", "build", "--release", "--message-format=json-render-diagnostics"],
                          cwd=project, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                          env={**os.environ, "CARGO_TARGET_DIR": str(TARGET)})
    assert done.returncode == 0, f"building {project} failed:\n{done.stderr[-6000:]}"
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable") \
                and "bin" in message["target"]["kind"]:
            return Path(message["executable"])
    pytest.fail(f"cargo built no binary for {project}")


def run(binary: Path, record: Path, cwd: Path = NOTEBOOKS) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "--record", str(record)], cwd=cwd, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S)


@pytest.fixture(scope="session")
def projects(tmp_path_factory) -> dict[str, Path]:
    """Every shipped notebook exported and built: name → binary."""
    out = tmp_path_factory.mktemp("exported")
    binaries = {}
    for name in ALL:
        project = Path(tchbook("export", str(NOTEBOOKS / name), "-o", str(out / Path(name).stem),
                               "--prelude", str(PRELUDE)).strip())
        binaries[name] = build(project)
    return binaries


# --- comparing outputs -------------------------------------------------------------------------

NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
UNIT = re.compile(r"#\s*(?:ns|µs|us|ms|s|B|KiB|MiB|GiB|TiB|bytes)\b")


def masked(text: str) -> str:
    """Text with every number (and the unit a measurement picked) replaced by `#`, and without
    whitespace, which pads numbers to their width (PyTorch's reprs pad positive numbers when any
    is negative)."""
    return re.sub(r"\s+", "", UNIT.sub("#", NUMBER.sub("#", text)))


def joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def coalesced(outputs: list) -> list[dict]:
    """nbformat outputs with consecutive writes to one stream taken as one output."""
    result = []
    for o in outputs:
        o = dict(o)
        if o["output_type"] == "stream":
            o["text"] = joined(o["text"])
            if result and result[-1]["output_type"] == "stream" and result[-1]["name"] == o["name"]:
                result[-1]["text"] += o["text"]
                continue
        result.append(o)
    return result


# What the kernel adds to an interrupted cell's error about its variable store (which bindings of
# the cell were not stored); an exported program's cells share one function's locals and have no
# such store, so the rest of the error is what both must say.
KERNEL_STORE_NOTE = re.compile(r"; the cell stopped before its bindings were stored: .*$", re.S)


def shape(o: dict) -> tuple:
    if o["output_type"] == "stream":
        return ("stream", o["name"])
    if o["output_type"] == "error":
        return ("error", o["ename"], KERNEL_STORE_NOTE.sub("", o["evalue"]))
    return (o["output_type"], tuple(sorted(o.get("data", {}))))


def text(o: dict) -> str:
    if o["output_type"] == "stream":
        return o["text"]
    if o["output_type"] == "error":
        return f"{o['ename']}: {KERNEL_STORE_NOTE.sub('', o['evalue'])}"
    return joined(o.get("data", {}).get("text/plain", ""))


def data_part(o: dict) -> dict:
    """The machine-readable numbers a rich output carries."""
    for mime, value in o.get("data", {}).items():
        if mime == "application/json" or mime.endswith("+json"):
            return value if isinstance(value, (dict, list)) else json.loads(value)
    return {}


def seeded_lines(pattern: str, outputs: list) -> list[str]:
    return [line for o in outputs for line in text(o).splitlines() if re.search(pattern, line)]


# Where the notebooks seed torch's generator, the numbers must be equal, not just present.
SEEDED_TEXT = {
    BOOTCAMP: {"train": r"epoch: .* loss:", "test-accuracy": r"correct"},
}
SEEDED_DATA = {
    DEEPLIZARD: {"runs": ("rows", ["run", "loss", "accuracy", "batch_size", "num_workers"])},
}


@pytest.mark.parametrize("name", ALL)
def test_exported_notebook_records_what_the_kernel_shows(name, projects, tmp_path, fresh_stand_ins):
    record_path = tmp_path / "record.json"
    done = run(projects[name], record_path)
    assert done.returncode == 0, f"the exported {name} failed:\n{done.stderr[-4000:]}"
    record = json.loads(record_path.read_text())
    assert record["completed"] is True and record["notebook"] == name
    recorded = {entry["cell"]: entry for entry in record["cells"]}

    kernel = execute(name).nb  # the same run tests/shipped_notebooks/ checks (cached)
    code_cells = [(i, c) for i, c in enumerate(kernel.cells) if c.cell_type == "code"]
    assert sorted(recorded) == [i for i, _ in code_cells], "every code cell ran, in order"
    for count, (index, cell) in enumerate(code_cells, start=1):
        entry = recorded[index]
        where = f"{name} cell {index} ({cell.source.splitlines()[0] if cell.source else ''!r})"
        assert entry["execution_count"] == count, where
        if cell.source.strip().startswith(DROPPED):
            assert entry["outputs"] == [], f"{where}: a dropped command shows nothing"
            continue
        ours, theirs = coalesced(entry["outputs"]), coalesced(cell.outputs)
        assert [shape(o) for o in ours] == [shape(o) for o in theirs], where
        assert [masked(text(o)) for o in ours] == [masked(text(o)) for o in theirs], where
        tags = cell.metadata.get("tags", [])
        for tag, pattern in SEEDED_TEXT.get(name, {}).items():
            if tag in tags:
                lines = seeded_lines(pattern, ours)
                assert lines and lines == seeded_lines(pattern, theirs), f"{where}: seeded numbers"
        for tag, (key, fields) in SEEDED_DATA.get(name, {}).items():
            if tag in tags:
                pick = lambda outputs: [[row.get(f) for f in fields]  # noqa: E731
                                        for o in outputs for row in data_part(o).get(key, [])]
                assert pick(ours) and pick(ours) == pick(theirs), f"{where}: seeded numbers"


def test_exported_tour_prints_rich_output_as_text(projects, tmp_path):
    done = run(projects[TOUR], tmp_path / "record.json")
    assert done.returncode == 0, done.stderr[-4000:]
    # The device card, the memory summary and the final state of the live progress bar, as text.
    assert "Best device" in done.stdout
    assert "Process RAM" in done.stdout
    assert "100% 200/200" in done.stdout
    # The interrupt cell's error is printed, and the run went on past it.
    assert "KeyboardInterrupt" in done.stderr
    assert "the model survived the interrupt" in done.stdout
    assert "TCHBOOK_" not in done.stdout + done.stderr, "no protocol line leaks into the text"


# --- the contract, on a notebook written here --------------------------------------------------

CELLS = [
    ("fn double(x: i64) -> i64 {\n    x * 2\n}\nlet a = double(21);\nprintln!(\"a = {a}\");\na", ["beside"]),
    # A value of a type that renders through evcxr's convention, after printed text that holds
    # the same words (which stays text).
    ("#[derive(Debug)]\nstruct Point { x: i32 }\nstruct Row(Vec<i32>);\n"
     "impl Row {\n    pub fn evcxr_display(&self) {\n"
     "        println!(\"EVCXR_BEGIN_CONTENT text/plain\\n{:?}\\nEVCXR_END_CONTENT\", self.0);\n"
     "        println!(\"EVCXR_BEGIN_CONTENT text/html\\n<b>{:?}</b>\\nEVCXR_END_CONTENT\", self.0);\n"
     "    }\n}\nlet p = Point { x: 1 };\n"
     "println!(\"{:?}\", p);\n"
     "println!(\"EVCXR_BEGIN_CONTENT text/html\\n<i>printed</i>\\nEVCXR_END_CONTENT\");\n"
     "Row(vec![p.x, 2])", []),
    ("let lost = 5;\npanic!(\"expected failure after {}\", a);", ["raises-exception"]),
    (":timing", []),
    ("// items defined in one cell serve the next\ndouble(a) + 1", []),
    ("show(&tchbook_prelude::display::Bundle::text(\"shown\"));\n"
     "if std::env::var_os(\"CONTRACT_HANG\").is_some() {\n"
     "    // As SIGINT would, in one statement (no check follows it until it ends) whose loop is\n"
     "    // core's, which has no check.\n"
     "    std::iter::repeat(()).map(|()| interrupt::raise())\n"
     "        .for_each(|()| std::thread::sleep(std::time::Duration::from_millis(20)));\n"
     "}\n"
     "if std::env::var_os(\"CONTRACT_LOOP\").is_some() {\n"
     "    println!(\"looping\");\n"
     "    let mut n = 0u64;\n"
     "    loop { n = n.wrapping_add(1); }\n"
     "}\n"
     "if std::env::var_os(\"CONTRACT_SLEEP\").is_some() {\n"
     "    println!(\"waiting\");\n"
     "    std::thread::sleep(std::time::Duration::from_secs(600));\n"
     "}\n"
     "if std::env::var_os(\"CONTRACT_CHILD\").is_some() {\n"
     "    println!(\"waiting\");\n"
     "    std::process::Command::new(\"sleep\").arg(\"600\").status().unwrap();\n"
     "}\n"
     "let mut bar = Progress::new(3, \"steps\");\n"
     "for _ in 0..3 { bar.tick(); }\n"
     "bar.finish();\n"
     "panic!(\"the run stops here\");", []),
    ("println!(\"never printed\");", []),
]


def contract_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("A notebook written by tests/test_export.py")]
    for source, tags in CELLS:
        cell = nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nbformat.write(nb, path)


def test_exported_program_keeps_the_kernels_contract_and_merges_back(tmp_path):
    notebook = tmp_path / "contract.ipynb"
    contract_notebook(notebook)
    # In a git checkout the export records its commit, which the merged notebook names.
    git = lambda *args: subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                                        *args], capture_output=True, text=True, check=True).stdout.strip()
    git("init", "-q")
    git("add", "contract.ipynb")
    git("commit", "-q", "-m", "the contract notebook")
    commit = git("rev-parse", "--short=7", "HEAD")
    project = Path(tchbook("export", str(notebook), "--prelude", str(PRELUDE)).strip())
    assert project == tmp_path / "contract"
    main = (project / "src" / "main.rs").read_text()
    # The project is new and untracked: the checkout's tracked files are unchanged.
    assert f'commit: Some("{commit}"),' in main
    assert "fn double(x: i64) -> i64" in main.split("fn cells()")[0], "items are at the top level"
    binary = build(project)

    record_path = tmp_path / "record.json"
    done = run(binary, record_path, cwd=tmp_path)
    assert done.returncode == 1, "a panic outside a raises-exception cell fails the run"
    record = json.loads(record_path.read_text())
    assert record["completed"] is False
    # How the outputs were made, as the run saw it (a notebook's first cell says it from this).
    ran = record["ran"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", ran["at"]), ran
    assert ran["cpu"] and 1 <= ran["cores"] <= os.cpu_count() and ran["profile"] == "release", ran
    assert ran["commit"] == commit, ran
    cells = {entry["cell"]: entry["outputs"] for entry in record["cells"]}
    assert sorted(cells) == [1, 2, 3, 4, 5, 6], "the run stopped at the panicking cell"

    first = cells[1]
    assert [o["output_type"] for o in first] == ["stream", "execute_result"]
    assert first[0]["text"] == "a = 42\n" and first[1]["data"]["text/plain"] == "42"
    assert cells[2][0]["text"] == \
        "Point { x: 1 }\nEVCXR_BEGIN_CONTENT text/html\n<i>printed</i>\nEVCXR_END_CONTENT\n"
    assert cells[2][1]["data"] == {"text/plain": "[1, 2]", "text/html": "<b>[1, 2]</b>"}
    error = cells[3][0]
    assert (error["output_type"], error["ename"], error["evalue"]) == \
        ("error", "panic", "expected failure after 42")
    assert error["traceback"][1].startswith("  at cell line 2\n"), "placed on the cell's line, as the kernel does"
    assert cells[4][-1]["data"]["text/plain"] == "Timing: true\n"
    took, value = cells[5]
    assert re.fullmatch(r"Took \d+ms\n", took["text"]) and value["data"]["text/plain"] == "85"
    shown, bar, stop = cells[6]
    assert shown["output_type"] == "display_data" and shown["data"]["text/plain"] == "shown"
    assert "3/3" in bar["data"]["text/plain"], bar
    assert (stop["ename"], stop["evalue"]) == ("panic", "the run stops here")
    assert "never printed" not in done.stdout
    assert "a = 42" in done.stdout and "85" in done.stdout
    assert "the run stops here" in done.stderr

    # --merge writes the outputs into the notebook; the cell the run never reached is empty.
    merged = tmp_path / "merged.ipynb"
    shutil.copy(notebook, merged)
    tchbook("export", "--merge", str(record_path), str(merged))
    nb = nbformat.read(merged, as_version=4)
    nbformat.validate(nb)
    assert nb.cells[1].outputs[1]["data"]["text/plain"] == "42"
    assert nb.cells[1].execution_count == 1
    assert nb.cells[7].outputs == [] and nb.cells[7].execution_count is None
    made = nb.metadata["tchbook"]["provenance"]
    assert made == {"program": "exported", "exported_by": record["exported_by"], "completed": False, **ran}
    # The progress bar's view is drawn from the widget state the run saved, as JupyterLab's
    # "Save Widget State" keeps it: the bar's box and its three parts, the bar at its end.
    view = nb.cells[6].outputs[1]["data"]["application/vnd.jupyter.widget-view+json"]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    box = state[view["model_id"]]
    parts = [state[ref.removeprefix("IPY_MODEL_")] for ref in box["state"]["children"]]
    assert box["model_name"] == "HBoxModel", box
    assert [p["model_name"] for p in parts] == ["HTMLModel", "FloatProgressModel", "HTMLModel"]
    assert parts[1]["state"]["value"] == parts[1]["state"]["max"] == 3, parts[1]
    # nbconvert's HTML carries the state, so its page draws the bar where ipywidgets loads.
    html = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--stdout", str(merged)],
                          capture_output=True, text=True, check=True).stdout
    assert "application/vnd.jupyter.widget-state+json" in html and view["model_id"] in html

    # --beside: a second run's text under the cells tagged `beside`, headed with where it ran (as
    # the GPU check shows 03's and 05's CPU run under their GPU run), and nowhere else.
    cpu_record = tmp_path / "cpu.json"
    run_env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    subprocess.run([str(binary), "--record", str(cpu_record)], cwd=tmp_path, capture_output=True,
                   timeout=RUN_TIMEOUT_S, env=run_env)
    tchbook("export", "--merge", str(record_path), str(merged), "--beside", str(cpu_record))
    both = nbformat.read(merged, as_version=4)
    nbformat.validate(both)
    other = both.cells[1].outputs[-1]
    cpu_ran = json.loads(cpu_record.read_text())["ran"]
    assert cpu_ran["gpu"] is None, "CUDA hidden: the run saw no GPU"
    assert other["metadata"]["tchbook"]["beside"] == {"device": "cpu", "ran": cpu_ran}
    assert "".join(other["data"]["text/plain"]) == (
        f"The same cell in a second run of this program, on the CPU, no GPU visible ({cpu_ran['cpu']}, "
        f"{cpu_ran['cores']} cores), {cpu_ran['at']}:\na = 42\n")
    assert both.cells[1].outputs[:-1] == nb.cells[1].outputs
    assert [c.outputs for c in both.cells[2:]] == [c.outputs for c in nb.cells[2:]]
    alone = subprocess.run([str(BIN), "export", str(merged), "--beside", str(cpu_record)],
                           capture_output=True, text=True)
    assert alone.returncode == 2 and "--merge" in alone.stderr, alone.stderr

    # An interrupt that a cell never checks ends the program after the grace period.
    hung_record = tmp_path / "hung.json"
    hung = subprocess.run([str(binary), "--record", str(hung_record)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "CONTRACT_HANG": "1", "TCHBOOK_INTERRUPT_GRACE": "1"})
    assert hung.returncode == 130, hung.stderr[-2000:]
    last = json.loads(hung_record.read_text())["cells"][-1]
    assert last["cell"] == 6 and last["outputs"][-1]["ename"] == "KeyboardInterrupt"
    assert "grace period" in last["outputs"][-1]["evalue"]

    # A real SIGINT stops a plain loop of the cell's own at its check, on the loop's line.
    looping_record = tmp_path / "looping.json"
    looping = subprocess.Popen([str(binary), "--record", str(looping_record)], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "CONTRACT_LOOP": "1", "TCHBOOK_INTERRUPT_GRACE": "60"})
    for line in looping.stdout:
        if line.startswith("looping"):
            break
    looping.send_signal(signal.SIGINT)
    looping.communicate(timeout=30)
    assert looping.returncode == 1, "ended by its own check, long before the grace period"
    stopped = json.loads(looping_record.read_text())["cells"][-1]["outputs"][-1]
    assert stopped["ename"] == "KeyboardInterrupt", stopped
    assert stopped["traceback"][1].startswith("  at cell line 11\n"), stopped["traceback"]
    assert "__point" not in "".join(stopped["traceback"])

    # So does a blocking wait of the cell's thread: a sleep, a wait for a child process. Each ends
    # at the interrupt (returns, or fails with ECANCELED), and the check after it, or the failed
    # call's unwrap, ends the cell as KeyboardInterrupt, long before the grace period.
    for wait, line in (("CONTRACT_SLEEP", 15), ("CONTRACT_CHILD", 19)):
        waiting_record = tmp_path / f"{wait}.json"
        waiting = subprocess.Popen([str(binary), "--record", str(waiting_record)], cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True,
                                   env={**os.environ, wait: "1", "TCHBOOK_INTERRUPT_GRACE": "60"})
        try:
            for printed in waiting.stdout:
                if printed.startswith("waiting"):
                    break
            time.sleep(0.2)  # into the wait
            waiting.send_signal(signal.SIGINT)
            _, stderr = waiting.communicate(timeout=30)
        finally:
            try:
                os.killpg(waiting.pid, signal.SIGKILL)  # the child `sleep`, if it is still there
            except ProcessLookupError:
                pass
        assert waiting.returncode == 1, (wait, waiting.returncode, stderr[-2000:])
        stopped = json.loads(waiting_record.read_text())["cells"][-1]["outputs"][-1]
        assert stopped["ename"] == "KeyboardInterrupt", (wait, stopped)
        assert stopped["traceback"][1].startswith(f"  at cell line {line}\n"), (wait, stopped["traceback"])

    # A record of other code is refused rather than merged into the wrong cells.
    nb.cells[1].source = "let a = 1;"
    nbformat.write(nb, merged)
    refused = subprocess.run([str(BIN), "export", "--merge", str(record_path), str(merged)],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "changed since it was exported" in refused.stderr


def test_export_overwrites_only_its_own_projects_unless_forced(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    contract_notebook(notebook)
    mine = tmp_path / "mine"
    (mine / "src").mkdir(parents=True)
    (mine / "Cargo.toml").write_text('[package]\nname = "mine"\nversion = "1.0.0"\n')
    (mine / "src" / "main.rs").write_text("fn main() {}\n")
    refused = subprocess.run([str(BIN), "export", str(notebook), "-o", str(mine)],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "--force" in refused.stderr, refused.stderr
    assert (mine / "src" / "main.rs").read_text() == "fn main() {}\n"
    # Its own export is written again, and --force writes anywhere.
    assert Path(tchbook("export", str(notebook)).strip()) == tmp_path / "nb"
    tchbook("export", str(notebook))
    tchbook("export", str(notebook), "-o", str(mine), "--force")
    assert "fn cells()" in (mine / "src" / "main.rs").read_text()


# 16 TiB of floats: more than any machine that runs this has, so libtorch's allocator refuses.
OUT_OF_MEMORY_CELL = "let big = Tensor::zeros([1i64 << 42], (Kind::Float, Device::Cpu));\nbig.numel()"
# The error a learner meets most: shapes that do not fit.
SHAPE_ERROR_CELL = "let t = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));\nlet u = t.matmul(&t);"


def test_an_exported_cells_torch_errors_report_what_the_kernel_reports(tmp_path):
    import nbclient

    notebook = tmp_path / "oom.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(OUT_OF_MEMORY_CELL),
                nbformat.v4.new_code_cell(SHAPE_ERROR_CELL), nbformat.v4.new_code_cell("1 + 1")]
    for cell in nb.cells[:2]:
        cell.metadata["tags"] = ["raises-exception"]
    nbformat.write(nb, notebook)

    project = Path(tchbook("export", str(notebook), "--prelude", str(PRELUDE)).strip())
    done = run(build(project), tmp_path / "record.json", cwd=tmp_path)
    assert done.returncode == 0, f"a raises-exception cell does not stop the run:\n{done.stderr[-3000:]}"
    recorded = json.loads((tmp_path / "record.json").read_text())["cells"]
    exported = recorded[0]["outputs"][-1]
    assert recorded[2]["outputs"][-1]["data"]["text/plain"] == "2", "the variables are kept"

    client = nbclient.NotebookClient(nbformat.read(notebook, as_version=4), kernel_name=KERNEL,
                                     timeout=600)
    cells = client.execute().cells
    kernel = cells[0].outputs[-1]

    assert exported["ename"] == kernel["ename"] == "OutOfMemoryError", (exported, kernel)
    assert "16.0 TiB on the CPU" in exported["evalue"], exported["evalue"]
    # (The kernel adds that `big` was not stored; a program has no variable store.)
    kernel_evalue = KERNEL_STORE_NOTE.sub("", kernel["evalue"])
    assert masked(exported["evalue"]) == masked(kernel_evalue), (exported, kernel)
    assert "frame #" not in exported["evalue"], "libtorch's C++ frames come after, in the traceback"
    assert exported["traceback"][1] == kernel["traceback"][1], "the cell line it happened on"

    # As PyTorch shows it: the message, the cell line and the call, without libtorch's C++
    # frames (TORCH_SHOW_CPP_STACKTRACES=1 brings them back), in both.
    exported, kernel = recorded[1]["outputs"][-1], cells[1].outputs[-1]
    assert exported["ename"] == kernel["ename"] == "TorchError", (exported, kernel)
    # (The kernel's last line says `t` and `u` were not stored; a program has no store.)
    assert exported["traceback"] == kernel["traceback"][:2], (exported, kernel)
    assert "in `matmul`" in exported["traceback"][1] and len(exported["traceback"]) == 2, exported
    assert "frame #" not in "".join(exported["traceback"]), exported
