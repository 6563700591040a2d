"""The IPython magics: `%%rust` / `%rust EXPR`, `%rust_restart`, `%rust_status`."""
from __future__ import annotations

from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.error import UsageError

from .bridge import RustKernel, RustValue


@magics_class
class RustMagics(Magics):
    def __init__(self, shell, kernel: RustKernel):
        super().__init__(shell)
        self.kernel = kernel

    # Rust is full of `{}` and `$`, which IPython would otherwise expand in a line magic.
    @no_var_expand
    @line_cell_magic
    def rust(self, line: str, cell: str | None = None) -> RustValue | None:
        """Runs Rust in this notebook's tchbook kernel and shows what it shows.

        %%rust            the cell below is a Rust cell (items, statements, `:` commands)
        %rust EXPR        one line of Rust; its value is returned (a RustValue)

        Variables persist from cell to cell. Errors are raised as Python exceptions carrying the
        compiler's or the panic's text; interrupting the cell interrupts the Rust code."""
        if cell is None:
            if not line.strip():
                raise UsageError("%rust needs Rust code after it, e.g. `%rust 1 + 1`; "
                                 "use %%rust on the first line for a whole Rust cell")
            return self.kernel.run(line)
        if line.strip():
            raise UsageError(f"%%rust takes no arguments (got {line.strip()!r}): put Rust code "
                             "on the lines below it")
        return self.kernel.run(cell)

    @line_magic
    def rust_restart(self, line: str) -> None:
        """Starts a fresh Rust kernel: its variables, items and `:dep`s are gone."""
        self.kernel.restart()
        print("Rust kernel restarted")

    @line_magic
    def rust_status(self, line: str) -> None:
        """The Rust kernel's process, version, libtorch and how many cells it ran."""
        print(self.kernel.status())
