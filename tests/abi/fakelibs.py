"""Fake vLLM libraries for the audit tests, compiled with g++ (no torch needed).

torch-abi-audit judges a library by the symbols it imports, so three tiny
shared objects reproduce every verdict: one calling functions declared in
``namespace c10``/``namespace at`` (unstable), one calling the ``extern "C"``
stable shims ``aoti_torch_*``/``torch_*`` (stable), one calling neither
(no-torch). They are built once per session and copied into package layouts.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["unstable", "stable", "no-torch"]

UNSTABLE_SYMBOLS = (
    "at::fake_op_a()",
    "at::fake_op_b()",
    "at::fake_op_c()",
    "c10::fake_check(bool)",
    "c10::fake_warn(int)",
    "c10::fake_zero()",
    "torch::fake_register()",
)

SOURCES: dict[Kind, str] = {
    "unstable": """
namespace c10 { void fake_warn(int); void fake_check(bool); int fake_zero(); }
namespace at { void fake_op_a(); void fake_op_b(); void fake_op_c(); }
namespace torch { void fake_register(); }
extern "C" int fake_kernel(int x) {
    c10::fake_warn(x); c10::fake_check(x > 0); at::fake_op_a(); at::fake_op_b();
    at::fake_op_c(); torch::fake_register(); return c10::fake_zero();
}
""",
    "stable": """
extern "C" {
int aoti_torch_get_device_index(void* tensor, int* out);
int torch_call_dispatcher(const char* name, const char* overload, void* stack);
int fake_kernel(void* tensor) {
    int device = 0;
    aoti_torch_get_device_index(tensor, &device);
    return torch_call_dispatcher("fake::op", "", nullptr) + device;
}
}
""",
    "no-torch": """
extern "C" int fake_kernel(int x) { return 2 * x; }
""",
}

MISSING_COMPILER = (
    "g++ not found: the fake torch libraries for the audit tests cannot be built"
    " (apt-get install g++; make test installs it)"
)


@dataclass(frozen=True)
class FakeLibraries:
    """One compiled library per verdict, to copy into package layouts."""

    directory: Path

    def library(self, kind: Kind) -> Path:
        return self.directory / f"{kind}.so"

    def package(self, root: Path, layout: Mapping[str, Kind]) -> Path:
        """Lay out ``root`` with a copy of the ``kind`` library at each relative path."""
        for relative, kind in layout.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.library(kind), target)
        return root


def build_fake_libraries(directory: Path) -> FakeLibraries:
    """Compile the three libraries into ``directory`` (g++ must be on PATH)."""
    compiler = shutil.which("g++")
    if compiler is None:
        raise FileNotFoundError(MISSING_COMPILER)
    for kind, source in SOURCES.items():
        source_file = directory / f"{kind}.cpp"
        source_file.write_text(source)
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O0", "-o", str(directory / f"{kind}.so"), source_file],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return FakeLibraries(directory)
