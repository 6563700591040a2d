"""A Rust cell's final value, for the Python cell to return."""
from __future__ import annotations


class RustValue:
    """A Rust cell's final value, as the Rust kernel displayed it: `data` is its MIME bundle
    (`text/plain` always; HTML or images for rich values) and `metadata` its metadata. IPython shows
    it with that bundle; `str(value)` is the text form."""

    def __init__(self, data: dict, metadata: dict):
        self.data = dict(data)
        self.metadata = dict(metadata)

    @property
    def text(self) -> str:
        return self.data.get("text/plain", "")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return dict(self.data), dict(self.metadata)

    def __repr__(self) -> str:
        return self.data.get("text/plain") or f"<Rust value: {', '.join(self.data)}>"

    __str__ = __repr__
