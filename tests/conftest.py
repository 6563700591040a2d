"""Fixtures the Python tests share (tests/browser has its own conftest.py beside this one)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from wheel_venv import build_wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The tchbook wheel: $TCHBOOK_WHEEL (scripts/test builds it), else built here once."""
    built = os.environ.get("TCHBOOK_WHEEL")
    if built:
        assert Path(built).is_file(), f"TCHBOOK_WHEEL names {built}, which is not a file"
        return Path(built)
    return build_wheel(tmp_path_factory.mktemp("wheel"))
