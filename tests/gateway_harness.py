"""Jupyter Enterprise Gateway on loopback with tchbook's remote kernelspecs.

Shared by tests/test_remote_gateway.py and bench/remote_launch.py. The gateway is the real one
(scripts/requirements-gateway.txt, in a venv of its own: Enterprise Gateway 3.3 pins
jupyter_client<7), with its DistributedProcessProxy on `localhost`: for a host that is the
gateway's own it starts the kernelspec's argv directly instead of over ssh, and everything else
(the response manager's RSA key, the encrypted reply, the communication port for interrupts and
shutdown) is its ordinary remote-kernel path. Clients reach it as JupyterLab does when started
with `--gateway-url`: through jupyter_server's gateway client (GatewayKernelManager).
"""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = os.environ.get("TCHBOOK_BIN", str(ROOT / "target" / "release" / "tchbook"))
GATEWAY_REQUIREMENTS = ROOT / "scripts" / "requirements-gateway.txt"
GATEWAY_VENV = Path(
    os.environ.get("TCHBOOK_GATEWAY_VENV", Path.home() / ".cache" / "tchbook" / "gateway-venv")
)
# The range the gateway hands its launchers (--port-range); 1000 ports is its minimum.
PORT_RANGE = "41000..42999"


def gateway_venv() -> Path:
    """The gateway's venv, made or brought up to date from its pinned requirements."""
    want = hashlib.sha256(GATEWAY_REQUIREMENTS.read_bytes()).hexdigest()
    stamp = GATEWAY_VENV / ".tchbook-requirements"
    python = GATEWAY_VENV / "bin" / "python"
    if not (stamp.exists() and stamp.read_text().strip() == want and python.exists()):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(GATEWAY_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "-r", str(GATEWAY_REQUIREMENTS)],
            check=True,
        )
        stamp.write_text(want + "\n")
    return GATEWAY_VENV


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def private_binary(directory: Path) -> Path:
    """A copy of the kernel binary: a rebuild of the original must not pull it from under
    running kernels."""
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / "tchbook"
    shutil.copy2(BINARY, copy)
    return copy


class Gateway:
    """Enterprise Gateway serving tchbook's distributed kernelspec (and two variants: the
    image's entry point, and a launch given a key that is not the gateway's) on loopback."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.bin_dir = workdir / "bin"
        self.binary = private_binary(self.bin_dir)
        self.prefix = workdir / "prefix"
        self.kernel_logs = workdir / "kernel-logs"
        self.log_path = workdir / "gateway.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def kernel_dir(self, name: str) -> Path:
        return self.prefix / "share" / "jupyter" / "kernels" / name

    def install_specs(self) -> dict:
        """`tchbook install --remote distributed`, as a user would run it; returns its spec."""
        subprocess.run(
            [str(self.binary), "install", "--remote", "distributed", "--prefix", str(self.prefix)],
            check=True,
            capture_output=True,
        )
        spec_path = self.kernel_dir("tchbook_distributed") / "kernel.json"
        spec = json.loads(spec_path.read_text())
        # Loopback only: the kernel's sockets bind 127.0.0.1 instead of the launchers' 0.0.0.0.
        loopback = dict(spec, argv=spec["argv"] + ["--ip", "127.0.0.1"])
        spec_path.write_text(json.dumps(loopback, indent=2))
        # The image's entry point, started as a gateway's container launcher starts it: no
        # command, the four values in the environment (launch_docker.py, kernel-pod.yaml.j2).
        # PATH is the image's (its Dockerfile's ENV).
        self._write_variant("tchbook_entrypoint", spec, [
            "env", "RESPONSE_ADDRESS={response_address}", "PUBLIC_KEY={public_key}",
            "PORT_RANGE={port_range}", f"PATH={self.bin_dir}:{os.environ['PATH']}",
            str(ROOT / "docker" / "entrypoint.sh"),
        ])
        # A launch handed something that is not the gateway's key.
        argv = list(loopback["argv"])
        argv[argv.index("--public-key") + 1] = "bm90IGEga2V5"
        self._write_variant("tchbook_wrong_key", spec, argv)
        return spec

    def _write_variant(self, name: str, spec: dict, argv: list) -> None:
        directory = self.kernel_dir(name)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "kernel.json").write_text(
            json.dumps(dict(spec, argv=argv, display_name=name), indent=2)
        )

    def start(self) -> None:
        venv = gateway_venv()
        self.kernel_logs.mkdir(parents=True, exist_ok=True)
        # The gateway gives a kernel it starts on its own host only the variables named in
        # EG_INHERITED_ENVS: here tchbook's own settings of this run (TCHBOOK_CACHE_DIR, ...),
        # not HOME or PATH, which the launcher must then find as a gateway's users' kernels do.
        inherited = [name for name in os.environ if name.startswith("TCHBOOK_")]
        env = dict(
            os.environ,
            EG_INHERITED_ENVS=",".join(inherited),
            JUPYTER_PATH=str(self.prefix / "share" / "jupyter"),
            JUPYTER_DATA_DIR=str(self.workdir / "data"),
            JUPYTER_CONFIG_DIR=str(self.workdir / "config"),
            JUPYTER_RUNTIME_DIR=str(self.workdir / "runtime"),
            EG_REMOTE_HOSTS="localhost",
            EG_PORT_RANGE=PORT_RANGE,
            EG_RESPONSE_IP="127.0.0.1",
            EG_RESPONSE_PORT=str(free_port()),
            EG_KERNEL_LOG_DIR=str(self.kernel_logs),
        )
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [str(venv / "bin" / "jupyter-enterprisegateway"), "--ip=127.0.0.1",
             f"--port={self.port}", "--port_retries=0", "--log-level=DEBUG"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(self.url + "/api/kernelspecs", timeout=5) as reply:
                    specs = json.load(reply)["kernelspecs"]
                    assert "tchbook_distributed" in specs, sorted(specs)
                    return
            except (urllib.error.URLError, ConnectionError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("Enterprise Gateway did not start:\n" + self.log_text())
                time.sleep(0.3)

    def request(self, method: str, path: str, body=None, timeout: float = 60):
        """One REST call; returns (status, parsed JSON body)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                text = reply.read()
                return reply.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, json.loads(text) if text else None

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def kernel_log(self, kernel_id: str) -> str:
        path = self.kernel_logs / f"kernel-{kernel_id}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def gateway_kernel_manager(url: str, kernel_name: str):
    """jupyter_server's client side of `--gateway-url` (what JupyterLab's server runs), for
    kernels of `kernel_name`."""
    from jupyter_server.gateway.gateway_client import GatewayClient
    from jupyter_server.gateway.managers import GatewayKernelManager

    class NamedGatewayKernelManager(GatewayKernelManager):
        # jupyter_server names the kernel in each start request; nbclient, given a manager,
        # does not.
        async def start_kernel(self, **kwargs):
            kwargs.setdefault("kernel_name", self.kernel_name)
            return await super().start_kernel(**kwargs)

        # nbclient polls kc.is_alive() during a cell, which jupyter_client 8 answers from the
        # manager's local process (none here); the gateway manager's own check asks the gateway.
        async def _async_is_alive(self):
            return await self.is_alive()

    # The gateway runs kernels for the user the request names (and refuses root, which CI
    # is); jupyter_server sends every KERNEL_* variable of its environment.
    os.environ.setdefault("KERNEL_USERNAME", "jovyan")
    client = GatewayClient.instance()
    client.url = url
    client.request_timeout = 120.0
    client.connect_timeout = 120.0
    return NamedGatewayKernelManager(kernel_name=kernel_name)


def processes_of_kernel(kernel_id: str) -> set:
    """Pids of the processes the gateway started for `kernel_id` (it gives each launch
    KERNEL_ID in the environment, which the evaluation process inherits) and their children."""
    marker = f"KERNEL_ID={kernel_id}".encode()
    children: dict = {}
    roots = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        children.setdefault(parent, set()).add(int(entry.name))
        if marker in environ:
            roots.add(int(entry.name))
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def alive(pids: set) -> set:
    """Those of `pids` still running (zombies count as gone)."""
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living
