"""Tab completion in `%%rust` cells and after `%rust`: the Rust kernel answers, not Python's.

A Python notebook's front end sends its complete_request to the Python kernel, whose completer
knows nothing of Rust: in a `%%rust` cell it offered Python names. Here the Rust part of the cell
and the cursor go to the Rust kernel as a complete_request, and its matches (with their kinds) come
back with offsets into the whole cell.

Two places ask: ipykernel's `do_complete` (JupyterLab, Notebook, VS Code, Colab's and Kaggle's
kernels, all ipykernel underneath), which is wrapped so that a Rust cell gets the Rust kernel's
reply and nothing else, even when it has no match (a Python name is never right there); and
IPython's own completer (a terminal IPython has no ipykernel), through the matcher API of
IPython 8.6 and later. Everything else goes to Python's completer as before.

The Rust kernel is asked only if it is running (a completion never starts one: the first cell
does), and waited for at most COMPLETE_TIMEOUT_S: JupyterLab drops a reply slower than 1 s. Its
first Tab answers in milliseconds from the kernel's index (see the README).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bridge import RustKernel

COMPLETE_TIMEOUT_S = 0.8
TYPES_KEY = "_jupyter_types_experimental"
LINE_MAGIC = re.compile(r"[ \t]*%rust[ \t]+")


def rust_part(code: str, cursor: int) -> tuple[str, int, int] | None:
    """Where the cursor is in Rust: (the Rust code, the cursor in it, the Rust code's offset in
    `code`), or None in Python. A `%%rust` cell's Rust is everything after its first line; a
    `%rust EXPR` line's is what follows `%rust`, up to the end of that line."""
    first_end = code.find("\n")
    head = code[: first_end if first_end >= 0 else len(code)]
    if head.strip() == "%%rust" and not head.startswith(" "):
        start = first_end + 1
        return (code[start:], cursor - start, start) if first_end >= 0 and cursor >= start else None
    line_start = code.rfind("\n", 0, cursor) + 1
    line_end = code.find("\n", cursor)
    line = code[line_start: line_end if line_end >= 0 else len(code)]
    magic = LINE_MAGIC.match(line)
    if magic and cursor - line_start >= magic.end():
        start = line_start + magic.end()
        return line[magic.end():], cursor - start, start
    return None


def complete(kernel: "RustKernel", code: str, cursor: int) -> dict | None:
    """The complete_reply content for a cursor in Rust, offsets into `code`; None in Python."""
    where = rust_part(code, cursor)
    if where is None:
        return None
    rust, at, offset = where
    reply = kernel.complete(rust, at, COMPLETE_TIMEOUT_S)
    if not reply or reply.get("status") != "ok":
        # Not running, too slow, or failed: no match rather than Python's names.
        return {"status": "ok", "matches": [], "cursor_start": cursor, "cursor_end": cursor,
                "metadata": {}}
    types = [dict(t, start=t["start"] + offset, end=t["end"] + offset)
             for t in (reply.get("metadata") or {}).get(TYPES_KEY, [])]
    return {"status": "ok", "matches": list(reply.get("matches", [])),
            "cursor_start": reply["cursor_start"] + offset, "cursor_end": reply["cursor_end"] + offset,
            "metadata": {TYPES_KEY: types} if types else {}}


def install(shell, kernel: "RustKernel") -> None:
    """Routes completion in Rust to `kernel`, in the ipykernel `shell` runs in (if any) and in
    `shell`'s own completer. Installing twice (a second %load_ext) replaces the first."""
    uninstall(shell)
    ipykernel = getattr(shell, "kernel", None)
    if ipykernel is not None and hasattr(ipykernel, "do_complete"):
        python_complete = ipykernel.do_complete

        def do_complete(code, cursor_pos):
            reply = complete(kernel, code, len(code) if cursor_pos is None else cursor_pos)
            return reply if reply is not None else python_complete(code, cursor_pos)

        do_complete.tchbook_python_complete = python_complete
        ipykernel.do_complete = do_complete
        return
    matcher = _ipython_matcher(kernel)
    if matcher is not None:
        shell.Completer.custom_matchers.insert(0, matcher)


def uninstall(shell) -> None:
    """Gives completion back to Python alone."""
    ipykernel = getattr(shell, "kernel", None)
    python_complete = getattr(getattr(ipykernel, "do_complete", None), "tchbook_python_complete", None)
    if python_complete is not None:
        ipykernel.do_complete = python_complete
    completer = getattr(shell, "Completer", None)
    if completer is not None and hasattr(completer, "custom_matchers"):
        completer.custom_matchers[:] = [m for m in completer.custom_matchers
                                        if not getattr(m, "tchbook", False)]


def _ipython_matcher(kernel: "RustKernel"):
    """A matcher for IPython's completer (API v2, IPython 8.6+); None on an older IPython."""
    try:
        from IPython.core.completer import SimpleCompletion, context_matcher
    except ImportError:
        return None

    @context_matcher(identifier="tchbook.rust")
    def rust_matcher(context):
        lines = context.full_text.split("\n")
        cursor = sum(len(line) + 1 for line in lines[: context.cursor_line]) + context.cursor_position
        reply = complete(kernel, context.full_text, cursor)
        if reply is None:
            return {"completions": []}
        kinds = {t["text"]: t.get("type") for t in reply["metadata"].get(TYPES_KEY, [])}
        return {
            "completions": [SimpleCompletion(m, type=kinds.get(m)) for m in reply["matches"]],
            # IPython replaces the text from the fragment's start to the cursor.
            "matched_fragment": context.full_text[reply["cursor_start"]:cursor],
            "suppress": True,
            "ordered": True,  # the kernel's order: by relevance
        }

    rust_matcher.tchbook = True
    return rust_matcher
