"""The remote-kernel image's recipe (Dockerfile, .dockerignore, docker/healthcheck.sh), read and run
without Docker: the image is not built here (README "Remote GPU kernels"), so what a build would
take on trust is checked from the text: the stages, the digest pins, the rustup-init checksum,
the health check, the base's CUDA against torch's, and the build context's exclusions.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEALTHCHECK = ROOT / "docker" / "healthcheck.sh"
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        out.append((keyword.upper(), args.strip()))
    return out


def stages(text: str) -> tuple[dict[str, str], list[dict]]:
    """The ARGs before the first FROM (name → default) and each stage: its image or parent stage
    (global ARGs substituted), its name, and its instructions."""
    global_args, found = {}, []
    for keyword, args in instructions(text):
        if keyword == "FROM":
            words = args.split()
            words = [w for w in words if not w.startswith("--platform")]
            source = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: global_args[m.group(1) or m.group(2)], words[0])
            name = words[2] if len(words) > 2 and words[1].upper() == "AS" else None
            found.append({"from": source, "name": name, "body": []})
        elif not found:
            if keyword == "ARG":
                name, _, default = args.partition("=")
                global_args[name] = default
        else:
            found[-1]["body"].append((keyword, args))
    return global_args, found


DOCKERFILE = (ROOT / "Dockerfile").read_text()
GLOBAL_ARGS, STAGES = stages(DOCKERFILE)
STAGE_NAMES = {s["name"] for s in STAGES if s["name"]}


def test_the_image_is_built_in_stages_and_takes_only_binaries_from_the_builder():
    assert len(STAGES) >= 2, [s["from"] for s in STAGES]
    final = STAGES[-1]
    builder = next(s for s in STAGES if s["name"] == "builder")
    assert any(k == "RUN" and "cargo build" in a for k, a in builder["body"]), "the builder builds no kernel"
    copies = [a for k, a in final["body"] if k in ("COPY", "ADD")]
    assert copies, "the final stage copies nothing from the builder"
    for args in copies:
        # Only from the builder, and never the build context (`COPY . ...`) into the image.
        assert "--from=builder" in args.split(), f"the final stage copies from the build context: {args}"
    assert not any(k == "RUN" and "cargo build" in a for k, a in final["body"])


def test_every_base_image_is_pinned_by_digest():
    images = [s["from"] for s in STAGES if s["from"] not in STAGE_NAMES]
    assert images, "no FROM names an image"
    for image in images:
        name, _, digest = image.partition("@sha256:")
        assert ":" in name and SHA256.match(digest), f"{image}: not pinned as NAME:TAG@sha256:DIGEST"


def test_rustup_init_is_downloaded_by_version_and_checked_by_sha256():
    base = STAGES[0]
    args = dict(a.partition("=")[::2] for k, a in base["body"] if k == "ARG")
    assert re.fullmatch(r"\d+\.\d+\.\d+", args["RUSTUP_VERSION"]), args
    sums = {k: v for k, v in args.items() if k.startswith("RUSTUP_SHA256_")}
    assert sums and all(SHA256.match(v) for v in sums.values()), sums
    run = next(a for k, a in base["body"] if k == "RUN" and "rustup-init" in a)
    assert "rustup/archive/${RUSTUP_VERSION}/" in run, "rustup-init is not fetched by version"
    assert "sha256sum -c" in run and all(f"${{{name}}}" in run for name in sums), run
    # The check comes before the binary runs.
    assert run.index("sha256sum -c") < run.index("/tmp/rustup-init -y"), run
    assert "sh.rustup.rs" not in DOCKERFILE


def test_the_image_has_a_health_check_that_runs_the_script():
    final = STAGES[-1]
    checks = [a for k, a in final["body"] if k == "HEALTHCHECK"]
    assert len(checks) == 1 and "tchbook-healthcheck" in checks[0], checks
    assert "docker/healthcheck.sh /opt/tchbook/bin/tchbook-healthcheck" in DOCKERFILE


def test_the_base_images_cuda_is_the_cuda_torch_was_built_for():
    import torch

    image = STAGES[0]["from"]
    m = re.match(r"nvidia/cuda:(\d+)\.(\d+)\.\d+-", image)
    assert m, f"the base {image} is not an nvidia/cuda image with a CUDA version in its tag"
    assert torch.version.cuda, "the venv's torch is a CPU build: it names no CUDA"
    assert f"{m.group(1)}.{m.group(2)}" == torch.version.cuda, (image, torch.version.cuda)
    assert f"torch=={torch.__version__.split('+')[0]}" in DOCKERFILE


# --- the build context -------------------------------------------------------------------------

def docker_form(pattern: str, folder: str) -> str:
    """A .gitignore pattern of `folder` (a path relative to the root, "" or ending in "/") as the
    .dockerignore pattern that excludes the same paths: Docker matches every pattern from the
    context's root, where git matches a pattern without an inner slash at any depth."""
    negated = pattern.startswith("!")
    p = pattern[1:] if negated else pattern
    anchored = "/" in p.rstrip("/")
    p = p.strip("/")
    if not anchored:
        p = "**/" + p
    p = folder + p
    return ("!" if negated else "") + p


def normal(pattern: str) -> str:
    negated = pattern.startswith("!")
    p = pattern[1:] if negated else pattern
    return ("!" if negated else "") + p.strip("/")


def patterns(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def test_dockerignore_covers_every_gitignore_pattern():
    ignored = {normal(p) for p in patterns(ROOT / ".dockerignore")}
    tracked = subprocess.run(["git", "ls-files", "*.gitignore", ".gitignore"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert ".gitignore" in tracked
    missing = []
    for name in tracked:
        folder = str(Path(name).parent) + "/" if "/" in name else ""
        for p in patterns(ROOT / name):
            want = docker_form(p, folder)
            if normal(want) not in ignored:
                missing.append(f"{name}: {p} (as {want})")
    assert not missing, "patterns .dockerignore lacks:\n" + "\n".join(missing)
    assert ".git" in ignored


# --- docker/healthcheck.sh ---------------------------------------------------------------------

def healthcheck(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(HEALTHCHECK)], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def runtime_env(tmp_path) -> dict:
    """An environment whose Jupyter runtime folder (where servers announce themselves) is empty."""
    env = {k: v for k, v in os.environ.items() if k not in ("KERNEL_ID", "RESPONSE_ADDRESS")}
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def test_healthcheck_passes_a_gateway_kernel_container_without_a_server(runtime_env):
    env = dict(runtime_env, KERNEL_ID="k-1", RESPONSE_ADDRESS="10.0.0.1:8877")
    assert healthcheck(env).returncode == 0


def test_healthcheck_fails_when_no_server_runs(runtime_env):
    done = healthcheck(runtime_env)
    assert done.returncode != 0 and "no Jupyter server is running" in done.stderr, done


def test_healthcheck_asks_the_server_under_its_base_url(runtime_env, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # As JupyterHub starts a single-user server: under /user/NAME/, with a token the check lacks.
    # The server answers only under its base URL (GET /api is a 404), so a pass means the check
    # asked the server's own URL.
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         "--ServerApp.base_url=/user/ada/", "--IdentityProvider.token=not-for-the-check",
         f"--ServerApp.root_dir={tmp_path}"],
        env=runtime_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while (done := healthcheck(runtime_env)).returncode != 0:
            assert server.poll() is None, f"the server exited: {server.stderr.read()}"
            assert time.monotonic() < deadline, f"never healthy: {done.stderr}"
            time.sleep(0.5)
        server.terminate()
        server.wait(timeout=30)
        assert healthcheck(runtime_env).returncode != 0, "healthy after the server stopped"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
