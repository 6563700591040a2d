"""The kernel the benchmarks in this folder measure: a tchbook binary started from a temporary
kernelspec (nothing in the user's Jupyter is touched), with a client whose channels are open."""

import argparse
import contextlib
import json
import os
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def start(binary: str, metadata: dict | None = None, timeout: float = 120):
    """`(manager, client)` of a fresh kernel of `binary`, ready; `metadata` goes into its
    kernelspec (`{"debugger": True}` is what JupyterLab reads to offer the Variables panel)."""
    spec_root = Path(tempfile.mkdtemp(prefix="tchbook-bench-"))
    spec_dir = spec_root / "kernels" / "tchbook-bench"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [binary, "kernel", "--connection-file", "{connection_file}"],
        "display_name": "tchbook (bench)", "language": "rust",
        "metadata": metadata or {},
    }))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])
    km = KernelManager(kernel_name="tchbook-bench", kernel_spec_manager=ksm)
    km.start_kernel()
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=timeout)
    return km, client


def arguments(reps: int) -> argparse.Namespace:
    """`--binary` (default $TCHBOOK_BIN, else the workspace's release build) and `--reps`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.environ.get(
        "TCHBOOK_BIN", str(Path(__file__).resolve().parents[2] / "target" / "release" / "tchbook")))
    parser.add_argument("--reps", type=int, default=reps)
    return parser.parse_args()


@contextlib.contextmanager
def running(binary: str, metadata: dict | None = None):
    """A client of a fresh kernel (`start`), shut down when the block ends."""
    km, client = start(binary, metadata)
    try:
        yield client
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)
