"""A module-scoped fixture per shipped notebook: its run (runs.py's `execute`, once per session)."""
from __future__ import annotations

import pytest

from .runs import BOOTCAMP, CIFAR, CPU_CUDA_MPS, DEEPLIZARD, TOUR, USING_GPU, Run, execute
from .runs import fresh_stand_ins  # noqa: F401 (a fixture)


def _executed(name: str):
    @pytest.fixture(scope="module")
    def fixture(fresh_stand_ins) -> Run:
        return execute(name)
    return fixture


# Named as runs.FIXTURES names them.
tour = _executed(TOUR)
using_gpu = _executed(USING_GPU)
cpu_cuda_mps = _executed(CPU_CUDA_MPS)
cifar = _executed(CIFAR)
deeplizard = _executed(DEEPLIZARD)
bootcamp = _executed(BOOTCAMP)
