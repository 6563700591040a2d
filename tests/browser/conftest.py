"""What a person sees: the tchbook kernel in JupyterLab, in a real browser.

One JupyterLab server (pinned in scripts/requirements.txt) and one headless Chromium (Debian's
`chromium`, driven by the `playwright` package) serve the whole session. The server is started
here on a free loopback port with a random token, rooted in a temporary folder that holds copies
of the shipped notebooks (the committed files are never touched) and the notebooks the
interaction tests write. Its settings and workspaces live in that folder too, so a developer's own
JupyterLab settings change nothing here; the one setting written turns off JupyterLab's news
check, whose toast would otherwise cover the page (the machine may have no network at all).
Everything else is JupyterLab's default, the completer's 1000 ms provider timeout included, but
for one setting a hub would make: `KernelManager.transport_encryption=auto`, so every kernel whose
spec declares CurveZMQ (tchbook's does) runs with encrypted ports, and every test here runs on
one.

Needs: the `tchbook` kernelspec installed where this Python's Jupyter finds it (scripts/test runs
`tchbook install --sys-prefix`), and Chromium at $TCHBOOK_CHROMIUM (default /usr/bin/chromium;
`apt-get install chromium`). Playwright's own browser download is never used. tchbook's own
JupyterLab extension (the GPU panel) is taken from where scripts/build-labextension builds it.

Screenshots (each notebook in full after Run All, and its tagged cells that show a table or a
picture, one by one) go to $TCHBOOK_SCREENSHOTS, default `$CARGO_TARGET_DIR/browser-screenshots`
(or `target/...`); nothing commits them. The README shows three, copied by hand into
docs/screenshots/: `00-tour--live-training.png` as live-training.png, `00-tour--device-card.png`
as device-card.png and `04-deeplizard-pytorch-on-the-gpu--run-table.png` as run-table.png;
test_panels.py's `variables-panel.png` and `kernel-usage.png`, test_gpu_panel.py's `gpu-panel.png`
and test_breakpoints.py's `debugger-stopped.png` under their own names.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from labpage import KERNEL, NOTEBOOKS, ROOT, Lab, Notebook

# The only places these variables are read.
CHROMIUM = os.environ.get("TCHBOOK_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("TCHBOOK_SCREENSHOTS")
                   or Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "browser-screenshots")

# Headless as root on a machine without a GPU or network: no sandbox (it needs user namespaces
# root does not get in a container), no GPU process, and none of the background fetches
# (component updates, sync, first-run pages) that would wait on a network that is not there.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1200, "height": 900}
LABEXTENSION = ROOT / "python" / "tchbook.data" / "data" / "share" / "jupyter"
SERVER_START_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_settings(folder: Path) -> None:
    """User settings of the server under test: JupyterLab's defaults, less the news check."""
    notification = folder / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test item, so fixtures can tell that their test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


def failed(request) -> bool:
    return any(getattr(request.node, f"report_{when}", None) is not None
               and getattr(request.node, f"report_{when}").failed for when in ("setup", "call"))


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory) -> Path:
    """The folder JupyterLab serves: copies of the shipped notebooks beside `data/`.

    `data` links to notebooks/data, so the notebooks find the same data sets (real ones a
    developer fetched, or the stand-ins the prelude writes) without writing them twice."""
    root = tmp_path_factory.mktemp("lab")
    for nb in sorted(NOTEBOOKS.glob("0*.ipynb")):
        shutil.copy(nb, root / nb.name)
    (NOTEBOOKS / "data").mkdir(exist_ok=True)
    (root / "data").symlink_to(NOTEBOOKS / "data", target_is_directory=True)
    return root


@pytest.fixture(scope="session")
def lab(lab_root, tmp_path_factory):
    """A JupyterLab server for the session, stopped (with its kernels) at the end."""
    home = tmp_path_factory.mktemp("lab-home")
    write_settings(home / "settings")
    port, token = free_port(), secrets.token_hex(16)
    # Kernelspecs a test adds go to `server.jupyter_path / "kernels"` (tests/browser/test_hosted.py).
    jupyter_path = home / "jupyter-path"
    # tchbook's JupyterLab extension as scripts/build-labextension built it, where the wheel
    # takes it from (an installed wheel puts the same folder in the environment's share/jupyter).
    if not (LABEXTENSION / "labextensions" / "tchbook-gpu-panel" / "package.json").is_file():
        pytest.fail(f"tchbook's JupyterLab extension is not built in {LABEXTENSION}: run "
                    f"scripts/build-labextension (source scripts/env.sh does)")
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTER_PATH=os.pathsep.join(p for p in [str(jupyter_path), os.environ.get("JUPYTER_PATH", ""),
                                                        str(LABEXTENSION)] if p))
    log_path = home / "jupyterlab.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.allow_root=True",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={lab_root}",
         f"--LabApp.user_settings_dir={home / 'settings'}",
         f"--LabApp.workspaces_dir={home / 'workspaces'}",
         "--KernelManager.transport_encryption=auto"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=lab_root)
    server = Lab(f"http://127.0.0.1:{port}", token, lab_root)

    def log_tail() -> str:
        return log_path.read_text(errors="replace")[-3000:]

    deadline = time.monotonic() + SERVER_START_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with status {proc.returncode} before serving; its log:\n{log_tail()}")
        try:
            server.api("GET", "/api/status")
            break
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"JupyterLab did not answer on port {port} within {SERVER_START_S} s; its log:\n{log_tail()}")
            time.sleep(0.25)
    specs = server.api("GET", "/api/kernelspecs")["kernelspecs"]
    if KERNEL not in specs:
        proc.terminate()
        pytest.fail(f"JupyterLab finds no {KERNEL!r} kernelspec (it has {sorted(specs)}): run "
                    f"`cargo build --release -p tchbook && target/release/tchbook install --sys-prefix` "
                    f"with this Python's environment active (scripts/test does this)")
    server.log_tail = log_tail
    server.jupyter_path = jupyter_path
    server.runtime_dir = home / "runtime"
    yield server
    proc.terminate()  # JupyterLab shuts its kernels down on SIGTERM
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's with `apt-get install chromium` "
                    f"(scripts/test does it when run as root), or point TCHBOOK_CHROMIUM at a Chromium or Chrome")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the `playwright` package is missing: `source scripts/env.sh` installs "
                    "scripts/requirements.txt into the tooling venv")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def context(browser, lab):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    ctx.set_default_timeout(30_000)
    yield ctx
    ctx.close()


@pytest.fixture
def notebook(lab, context, screenshots, request):
    """Opens a notebook of the given code cells, written for the test, on a fresh kernel; on
    failure the page is saved as `failed--<test>.png` beside the screenshots."""
    opened = []

    def open_notebook(*sources: str) -> Notebook:
        name = f"{request.node.name}.ipynb"
        lab.write_notebook(name, list(sources))
        nb = Notebook.open(lab, context, name)
        opened.append(nb)
        nb.wait_idle()
        return nb

    yield open_notebook
    for nb in opened:
        if failed(request):
            nb.page.screenshot(path=str(screenshots / f"failed--{request.node.name}.png"))
        nb.close()
