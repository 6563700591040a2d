"""The stand-in NVML (tests/nvml/libnvidia-ml.c) for the Python tests: built with cc into a folder
of the test's, with the script it answers from (the format is in the C file's header) and the
environment a kernel needs to open it."""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30


def gpu_line(used_gib: float, util: int, name: str = "NVIDIA Stand-in H100", total_gib: int = 80) -> str:
    """One GPU of the script: bytes in use, bytes in all, percent busy, name."""
    return f"gpu {int(used_gib * GIB)} {total_gib * GIB} {util} {name}\n"


class StandIn:
    def __init__(self, folder: Path):
        self.folder = folder
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / "libnvidia-ml.so.1"),
                        str(ROOT / "tests" / "nvml" / "libnvidia-ml.c")], check=True)

    def script(self, *lines: str) -> None:
        """Replaces the script at once (renamed over the old one): a driver, CUDA 12.4, `lines`."""
        (self.folder / "script.next").write_text("driver 550.54.15\ncuda 12040\n" + "".join(lines))
        (self.folder / "script.next").replace(self.folder / "script")

    def env(self) -> dict[str, str]:
        return {"TCHBOOK_NVML_LIBRARY": str(self.folder / "libnvidia-ml.so.1"),
                "TCHBOOK_FAKE_NVML_SCRIPT": str(self.folder / "script")}
