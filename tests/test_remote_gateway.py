"""tchbook as a remote kernel: `tchbook launch` under Jupyter Enterprise Gateway and
gateway_provisioners, on loopback, with their real code.

- A notebook runs through Enterprise Gateway (pinned, scripts/requirements-gateway.txt) the way
  a JupyterLab started with `--gateway-url` runs it: nbclient through jupyter_server's gateway
  client. It draws a live plot, is interrupted (over the launcher's communication port) and keeps
  its variables, is restarted, and is shut down leaving no process behind.
- The image's entry point (docker/entrypoint.sh) starts a kernel for the gateway as a kernel
  container would.
- A launch with a key that is not the gateway's fails with an error in the gateway's reply and
  the kernel log, and a closed response port ends the launcher at once.
- gateway_provisioners' DistributedProvisioner (jupyter_client 8) starts, interrupts and stops
  the kernel too; the Kubernetes kernelspec renders, through gateway_provisioners' own pod
  template, a pod in our image asking for one GPU; the KubeSpawner profile asks for one.

Run with the tooling venv's Python after `tchbook install` (the build cache must be warm):

    TCHBOOK_BIN=target/release/tchbook python -m pytest tests/test_remote_gateway.py -v

The first run makes the gateway's venv (~/.cache/tchbook/gateway-venv, about 20 s).
"""

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway_harness as harness  # noqa: E402

# A cell's first build in a fresh kernel takes seconds; the tch build itself is done by
# `tchbook install` before the tests.
CELL_TIMEOUT = 300
INTERRUPT_AFTER = 12


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    gateway = harness.Gateway(tmp_path_factory.mktemp("gateway"))
    gateway.install_specs()
    gateway.start()
    yield gateway
    gateway.stop()


def wait_until_gone(pids: set, seconds: float = 20) -> set:
    deadline = time.monotonic() + seconds
    while harness.alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return harness.alive(pids)


class RecordingClient(NotebookClient):
    """nbclient, also keeping the type of every message each cell produced."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.messages: dict = {}

    def process_message(self, msg, cell, cell_index):
        self.messages.setdefault(cell_index, []).append(msg["msg_type"])
        return super().process_message(msg, cell, cell_index)


def code_cell(source: str, *tags: str):
    return nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)})


def output_data(cell) -> list:
    return [out.get("data", {}) for out in cell.outputs if "data" in out]


def text_of(cell) -> str:
    return "".join(data.get("text/plain", "") for data in output_data(cell))


def test_notebook_runs_through_enterprise_gateway(gateway):
    """Live plot, interrupt keeping variables, restart, shutdown without leftovers."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        code_cell("let kept = 6 * 7;\nkept"),
        code_cell(
            'let mut plot = LossPlot::new("loss through the gateway");\n'
            "for step in 0..24 {\n"
            "    plot.push(step as f64, 1.0 / (1.0 + step as f64));\n"
            "    std::thread::sleep(std::time::Duration::from_millis(100));\n"
            "}\n"
            "plot.finish();"
        ),
        code_cell(
            "loop {\n"
            "    tchbook_prelude::interrupt::check();\n"
            "    std::thread::sleep(std::time::Duration::from_millis(20));\n"
            "}",
            "raises-exception",
            "interrupt-me",
        ),
        code_cell("kept + 1"),
    ]
    km = harness.gateway_kernel_manager(gateway.url, "tchbook_distributed")
    client = RecordingClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        startup_timeout=120,
        interrupt_on_timeout=True,
        timeout_func=lambda cell: INTERRUPT_AFTER
        if "interrupt-me" in cell.metadata.get("tags", [])
        else CELL_TIMEOUT,
    )

    async def run():
        async with client.async_setup_kernel():
            for index, cell in enumerate(nb.cells):
                await client.async_execute_cell(cell, index)
            kernel_id = km.kernel_id
            before_restart = harness.processes_of_kernel(kernel_id)
            await km.restart_kernel()
            # As JupyterLab does after a restart: a new connection to the restarted kernel.
            client.kc.stop_channels()
            client.kc = km.client()
            await client.kc.start_channels()
            await client.kc.wait_for_ready(timeout=120)
            after_restart = [code_cell("kept", "raises-exception"), code_cell("2 + 3")]
            nb.cells.extend(after_restart)
            for index in range(len(nb.cells) - 2, len(nb.cells)):
                await client.async_execute_cell(nb.cells[index], index)
            running = harness.processes_of_kernel(kernel_id)
            # The kernel was handed to nbclient, so ending its session leaves it running; a
            # user's shutdown is this request.
            client.kc.stop_channels()
            await km.shutdown_kernel()
        return kernel_id, before_restart, running

    kernel_id, before_restart, running = asyncio.run(run())
    first, plot, interrupted, after, lost, fresh = nb.cells

    assert text_of(first) == "42", first.outputs
    # The plot was shown once and then redrawn in place while the cell ran.
    assert client.messages[1].count("display_data") == 1, client.messages[1]
    assert client.messages[1].count("update_display_data") >= 2, client.messages[1]
    (bundle,) = [data for data in output_data(plot) if "image/png" in data]
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    numbers = [value for key, value in bundle.items() if "json" in key]
    assert numbers and len(numbers[0]["series"][0]["y"]) == 24, bundle.keys()

    errors = [out for out in interrupted.outputs if out.output_type == "error"]
    assert errors and errors[0].ename == "KeyboardInterrupt", interrupted.outputs
    assert text_of(after) == "43", after.outputs

    assert [out.output_type for out in lost.outputs] == ["error"], lost.outputs
    assert text_of(fresh) == "5", fresh.outputs

    # The kernel and its evaluation process; a restart replaces both, a shutdown ends all.
    assert len(before_restart) >= 2, before_restart
    assert not harness.alive(before_restart), "processes of the restarted kernel are still there"
    assert running and not running & before_restart
    assert not wait_until_gone(running), harness.processes_of_kernel(kernel_id)
    assert not harness.processes_of_kernel(kernel_id)


def test_image_entry_point_launches_for_the_gateway(gateway):
    """docker/entrypoint.sh with no command and a gateway's environment runs `tchbook launch`."""

    async def run():
        km = harness.gateway_kernel_manager(gateway.url, "tchbook_entrypoint")
        await km.start_kernel()
        kc = km.client()
        await kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=120)
            reply = await kc.execute("6 * 7", reply=True, timeout=CELL_TIMEOUT)
            assert reply["content"]["status"] == "ok", reply["content"]
            pids = harness.processes_of_kernel(km.kernel_id)
        finally:
            kc.stop_channels()
            await km.shutdown_kernel()
        return km.kernel_id, pids

    kernel_id, pids = asyncio.run(run())
    assert pids, "no process had the kernel's id"
    assert not wait_until_gone(pids), gateway.kernel_log(kernel_id)


def test_a_key_that_is_not_the_gateways_is_a_launch_error(gateway):
    """The launcher stops at once and says why; the gateway answers the start request with an
    error at its launch timeout (given here as 8 s) instead of waiting forever."""
    started = time.monotonic()
    status, body = gateway.request(
        "POST",
        "/api/kernels",
        {"name": "tchbook_wrong_key",
         "env": {"KERNEL_USERNAME": "jovyan", "KERNEL_LAUNCH_TIMEOUT": "8"}},
    )
    elapsed = time.monotonic() - started
    assert status == 500, (status, body)
    reason = body.get("reason") or body.get("message")
    assert "Waited too long" in reason, body
    assert elapsed < 30, elapsed
    kernel_id = reason.split("KernelID: '")[1].split("'")[0]
    log = gateway.kernel_log(kernel_id)
    assert "--public-key" in log and "cannot be read" in log, log
    assert not harness.processes_of_kernel(kernel_id)


def gateway_style_public_key() -> str:
    """An RSA public key as the gateways pass it: the PEM body on one line."""
    from Cryptodome.PublicKey import RSA

    pem = RSA.generate(1024).publickey().export_key("PEM").decode()
    return "".join(line for line in pem.splitlines() if "-----" not in line)


def test_a_closed_response_port_ends_the_launch_at_once(tmp_path):
    binary = harness.private_binary(tmp_path / "bin")
    port = harness.free_port()  # closed again: nothing listens there
    started = time.monotonic()
    result = subprocess.run(
        [str(binary), "launch", "--kernel-id", "closed-port-test", "--ip", "127.0.0.1",
         "--response-address", f"127.0.0.1:{port}", "--public-key", gateway_style_public_key()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert time.monotonic() - started < 15
    assert f"response address 127.0.0.1:{port}" in result.stderr, result.stderr


def test_gateway_provisioners_distributed_provisioner(gateway, tmp_path):
    """The same kernelspec under jupyter_client 8 with gateway_provisioners (what Jupyter Server
    and Kernel Gateway run), with transport encryption required: its response manager decodes
    our reply, with the CurveZMQ keys the launcher made, the client reaches the kernel through
    them, its interrupt reaches the cell over the communication port, and shutdown leaves
    nothing. (Enterprise Gateway 3.3, above, fills no `{transport_encryption}`: unencrypted.)"""
    script = f"""
import asyncio, json, os, sys
from jupyter_client.manager import AsyncKernelManager

def print_nothing(msg):
    pass

async def main():
    km = AsyncKernelManager(kernel_name="tchbook_distributed", transport_encryption="required")
    await km.start_kernel()
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=120)
    encrypted = km.curve_publickey is not None
    first = await kc.execute_interactive("let kept = 7; kept", timeout={CELL_TIMEOUT}, output_hook=print_nothing)
    msg_id = kc.execute("loop {{ tchbook_prelude::interrupt::check(); "
                        "std::thread::sleep(std::time::Duration::from_millis(20)); }}")
    await asyncio.sleep(8)
    await km.interrupt_kernel()
    while True:
        reply = await kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    kept = await kc.execute_interactive("kept * 6", timeout={CELL_TIMEOUT}, output_hook=print_nothing)
    kc.stop_channels()
    await km.shutdown_kernel()
    print(json.dumps({{"encrypted": encrypted,
                      "first": first["content"]["status"],
                      "interrupted": reply["content"].get("ename"),
                      "kept": kept["content"]["status"], "kernel_id": km.kernel_id}}))

asyncio.run(main())
"""
    env = dict(
        os.environ,
        JUPYTER_PATH=str(gateway.prefix / "share" / "jupyter"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        PATH=f"{gateway.bin_dir}{os.pathsep}{os.environ['PATH']}",
        GP_RESPONSE_IP="127.0.0.1",
        GP_RESPONSE_PORT=str(harness.free_port()),
        GP_REMOTE_HOSTS="localhost",
        GP_PORT_RANGE=harness.PORT_RANGE,
    )
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-4000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["encrypted"] and outcome["first"] == "ok" and outcome["kept"] == "ok", outcome
    assert outcome["interrupted"] == "KeyboardInterrupt", outcome
    assert not wait_until_gone(harness.processes_of_kernel(outcome["kernel_id"]))


def test_kubernetes_kernelspec_renders_a_gpu_pod_of_our_image(gateway, tmp_path):
    prefix = tmp_path / "prefix"
    image = "registry.example.com/tchbook:0.1.0"
    subprocess.run(
        [str(gateway.binary), "install", "--remote", "kubernetes", "--image", image,
         "--prefix", str(prefix)],
        check=True,
        capture_output=True,
    )
    spec_dir = prefix / "share" / "jupyter" / "kernels" / "tchbook_kubernetes"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    provisioner = spec["metadata"]["kernel_provisioner"]
    assert provisioner["provisioner_name"] == "kubernetes-provisioner"
    assert provisioner["config"]["image_name"] == image
    assert provisioner["config"]["launch_timeout"] >= 300
    assert spec["metadata"]["process_proxy"]["config"]["image_name"] == image
    assert spec["env"]["KERNEL_GPUS"] == "1"
    assert Path(spec["argv"][1]).is_file(), spec["argv"]
    # The pod gateway_provisioners' own launcher would create for this spec, rendered by its
    # own code from the spec's KERNEL_* variables (as it reads them from its environment).
    keywords = {name.lower(): value for name, value in spec["env"].items()
                if name.startswith("KERNEL_")}
    keywords.update(kernel_id="k1", kernel_image=image, kernel_namespace="default",
                    kernel_pod_name="tchbook-k1", kernel_service_account_name="default")
    render = (
        "import json, sys, yaml; sys.path.insert(0, sys.argv[1]); import launch_kubernetes as l; "
        "print(json.dumps(yaml.safe_load(l.generate_kernel_pod_yaml(json.loads(sys.argv[2])))))"
    )
    python = harness.gateway_venv() / "bin" / "python"
    pod = json.loads(subprocess.run(
        [str(python), "-c", render, str(spec_dir / "scripts"), json.dumps(keywords)],
        check=True, capture_output=True, text=True,
    ).stdout)
    container = pod["spec"]["containers"][0]
    assert container["image"] == image
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert pod["spec"]["securityContext"]["runAsUser"] == 1000

    subprocess.run(
        [str(gateway.binary), "install", "--remote", "docker", "--image", image,
         "--prefix", str(prefix)],
        check=True,
        capture_output=True,
    )
    docker = json.loads((spec_dir.parent / "tchbook_docker" / "kernel.json").read_text())
    assert docker["metadata"]["kernel_provisioner"]["provisioner_name"] == "docker-provisioner"
    assert docker["metadata"]["kernel_provisioner"]["config"]["image_name"] == image
    assert Path(docker["argv"][1]).name == "launch_docker.py" and Path(docker["argv"][1]).is_file()


def test_kubespawner_profile_asks_for_one_gpu_in_our_image():
    from traitlets.config import Config

    config = Config()
    source = (harness.ROOT / "docker" / "jupyterhub_config.py").read_text()
    exec(compile(source, "jupyterhub_config.py", "exec"), {"get_config": lambda: config})
    gpu = config.KubeSpawner.profile_list[0]["kubespawner_override"]
    assert gpu["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    assert gpu["uid"] == 1000 and gpu["cmd"] == ["jupyterhub-singleuser"]
    dockerfile = (harness.ROOT / "Dockerfile").read_text()
    assert "torch==2.11.0" in dockerfile and "USER 1000" in dockerfile
