"""The kernel the benchmarks in this folder measure: a tchbook binary started from a temporary
kernelspec (nothing in the user's Jupyter is touched), with a client whose channels are open."""

import json
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def start(binary: str, metadata: dict | None = None, timeout: float = 120, env: dict | None = None):
    """`(manager, client)` of a fresh kernel of `binary`, ready; `metadata` goes into its
    kernelspec (`{"debugger": True}` is what JupyterLab reads to offer the Variables panel), and
    `env` into its environment."""
    spec_root = Path(tempfile.mkdtemp(prefix="tchbook-bench-"))
    spec_dir = spec_root / "kernels" / "tchbook-bench"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [binary, "kernel", "--connection-file", "{connection_file}"],
        "display_name": "tchbook (bench)", "language": "rust",
        "metadata": metadata or {},
        "env": env or {},
    }))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])
    km = KernelManager(kernel_name="tchbook-bench", kernel_spec_manager=ksm)
    km.start_kernel()
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=timeout)
    return km, client
