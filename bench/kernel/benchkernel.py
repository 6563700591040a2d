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


def start(binary: str, metadata: dict | None = None, timeout: float = 120,
          encryption: str = "disabled", env: dict | None = None):
    """`(manager, client)` of a fresh kernel of `binary`, ready; `metadata` goes into its
    kernelspec (`{"debugger": True}` is what JupyterLab reads to offer the Variables panel),
    `env` into its environment; `encryption` is jupyter_client's `transport_encryption`
    ("required": CurveZMQ)."""
    spec_root = Path(tempfile.mkdtemp(prefix="tchbook-bench-"))
    spec_dir = spec_root / "kernels" / "tchbook-bench"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [binary, "kernel", "--connection-file", "{connection_file}"],
        "display_name": "tchbook (bench)", "language": "rust",
        "metadata": dict(metadata or {}, supported_encryption=["curve"]),
        "env": env or {},
    }))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])
    km = KernelManager(kernel_name="tchbook-bench", kernel_spec_manager=ksm,
                       transport_encryption=encryption)
    km.start_kernel()
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=timeout)
    return km, client


def arguments(more=None, reps: int = 20) -> argparse.Namespace:
    """`--binary` (the tchbook binary; default $TCHBOOK_BIN, else the release build) and
    `--reps` (default `reps`), which every benchmark of this folder takes, and what
    `more(parser)` adds."""
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.environ.get(
        "TCHBOOK_BIN", str(root / "target" / "release" / "tchbook")))
    parser.add_argument("--reps", type=int, default=reps)
    if more is not None:
        more(parser)
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
