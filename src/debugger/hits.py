"""A hit count as JupyterLab's protocol means it (debugpy's reading): `$_tchbook_hit(key, op, n)`,
called in a breakpoint's condition by the kernel (`for_gdb` in src/debugger/cells.rs), counts one
more hit of the breakpoint `key` and says whether this hit stops: op 0 the n-th only, 1 after the
n-th, 2 from the n-th on, 3 before the n-th, 4 up to the n-th, 5 every n-th.

gdb's own hit count is an ignore count: after the n-th hit it stops at every hit, where debugpy
stops once. Counting here keeps debugpy's meaning, in any language gdb parses the condition in
(the cells' Rust included). The key is new each time JupyterLab sets a cell's breakpoints, so the
count starts again then.

The kernel writes this file and has gdb `source` it (src/debugger/gdb.rs)."""
import gdb

COUNTS = {}
STOPS = {
    0: lambda hits, n: hits == n,
    1: lambda hits, n: hits > n,
    2: lambda hits, n: hits >= n,
    3: lambda hits, n: hits < n,
    4: lambda hits, n: hits <= n,
    5: lambda hits, n: n > 0 and hits % n == 0,
}


class Hit(gdb.Function):
    """$_tchbook_hit(key, op, n): counts a hit of breakpoint `key`; true where it stops."""

    def __init__(self):
        super().__init__("_tchbook_hit")

    def invoke(self, key, op, n):
        key = int(key)
        COUNTS[key] = COUNTS.get(key, 0) + 1
        stops = STOPS.get(int(op), STOPS[0])
        return gdb.Value(bool(stops(COUNTS[key], int(n))))


Hit()
