"""One tchbook kernel behind a Python kernel: what `%%rust` cells run on.

The Rust kernel is the native one (`tchbook kernel`), started with jupyter_client on loopback as a
child of this Python process; everything it sends for a cell is re-published through IPython's own
machinery while the cell runs, so a front end sees what the native kernel would have shown:

- `stream` is written to `sys.stdout`/`sys.stderr` and flushed at once, partial lines included
  (a progress line redrawn with `\\r` moves in place);
- `display_data`, `update_display_data` and `clear_output` go through
  `IPython.display.publish_display_data` / `clear_output`, with the same bundle and metadata.
  Display ids are global to a front end, so each Rust id is mapped to an id of our own
  (`tchbook-<uuid>`), kept across cells (a run table shown in one cell may be updated by a later
  one) and forgotten when the Rust kernel restarts;
- `comm_open`, `comm_msg` and `comm_close` of the Rust kernel's widgets are re-sent on the Python
  kernel's comm manager, each comm under an id of its own, and the front end's messages on them
  forwarded back (`widgets.py`), so ipywidgets made in Rust work wherever the Python kernel's
  front end renders ipywidgets (JupyterLab, Notebook, VS Code, Colab);
- `execute_result` becomes the magic's return value (a `RustValue`), which IPython shows as the
  cell's `Out[n]` with the same bundle;
- `error` is raised as a Python exception (`RustError`, or `KeyboardInterrupt` for an interrupt)
  whose `ename`, `evalue` and traceback are the native kernel's, so the cell fails and "run all"
  stops where a Python error would stop it;
- `input_request` on the Rust kernel's stdin is asked through `input()`/`getpass()`, which
  ipykernel turns into the front end's own input box (or an error when the front end has none:
  the Rust cell then reads an empty line, as in the native kernel without stdin).

Interrupts: while a Rust cell runs, SIGINT (what the front end's interrupt delivers to ipykernel)
only sets a flag that the message loop turns into an `interrupt_request` to the Rust kernel, so no
message is lost to a KeyboardInterrupt raised between two receives. The Rust kernel interrupts its
cell cooperatively, as natively (its variables live on; after a grace period it restarts the
evaluation process and says which variables were lost), and its `KeyboardInterrupt` error ends the
Python cell. The loop waits for the Rust kernel's `idle`, so every output of a Rust cell reaches
the front end before the Python cell's own `idle`.

The Rust kernel is shut down when the Python process exits (atexit), when the extension is
unloaded, and by `%rust_restart`; should the Python process die without running atexit, the Rust
kernel notices its parent is gone and exits by itself (it polls its parent, as ipykernel does).

The Rust variables are `rust` in the Python namespace (`variables`), so the Python kernel's
Variables panel lists them beside the Python ones.

The Rust kernel's GPUs are added to the Python kernel's `usage_reply` (`usage`), so a GPU panel
asking the Python notebook shows them.

One module per job: `errors` (the exceptions a Rust error becomes), `value` (a Rust cell's value),
`kernel` (the Rust kernel process and its lifetime), `interrupts` (SIGINT while a cell runs),
`cell` (one cell's message loop, its stdin and its payloads), `variables` (`rust`) and `usage`
(the GPUs in the Python kernel's usage_reply).
"""
from __future__ import annotations

from .errors import RustError, RustInterrupt, RustKernelDied, error_for
from .kernel import RustKernel
from .value import RustValue

__all__ = ["RustError", "RustInterrupt", "RustKernel", "RustKernelDied", "RustValue", "error_for"]

# Named where they are imported from, as when the bridge was one module: a traceback outside
# IPython says `tchbook.bridge.RustError`, and a pickled value names a module that stays.
for _public in (RustError, RustInterrupt, RustKernel, RustKernelDied, RustValue):
    _public.__module__ = __name__
del _public
