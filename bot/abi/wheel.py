"""Extract a wheel's compiled libraries for the audit, and nothing else.

A vLLM CUDA wheel is 240 to 320 MB of which the audit needs only the ``.so``
members; they are copied member by member in fixed-size chunks, so memory
stays flat however large a library is. The package root is the top-level
package directory (``vllm/``): allowlist patterns are relative to it.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

from bot.abi.model import (
    MSG_AMBIGUOUS_ROOT,
    MSG_NOT_A_WHEEL,
    MSG_UNSAFE_MEMBER,
    MSG_WHEEL_WITHOUT_SO,
    AuditError,
)
from bot.abi.names import refuse_cpu_variant

LIBRARY_SUFFIX = ".so"
_COPY_CHUNK = 1 << 20
# Wheel metadata directories, never the package.
_METADATA_SUFFIXES = (".dist-info", ".data")


def extract_libraries(wheel: Path, dest: Path) -> Path:
    """Copy the ``.so`` members of ``wheel``'s package into ``dest``; return the package root.

    Raises ``AuditError`` when the wheel is unreadable, holds no library, its
    package root is ambiguous, a member path would leave ``dest``, or it is a
    CPU-variant build (refused before anything is extracted).
    """
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = _package_libraries(wheel, archive.infolist())
            package = dest / members[0][0]
            for _, relative, info in members:
                target = package / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, target.open("wb") as sink:
                    shutil.copyfileobj(source, sink, _COPY_CHUNK)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise AuditError(MSG_NOT_A_WHEEL.format(wheel=wheel, reason=exc)) from exc
    return package


def _package_libraries(
    wheel: Path, infos: list[zipfile.ZipInfo]
) -> list[tuple[str, PurePosixPath, zipfile.ZipInfo]]:
    """(package dir, path inside it, member) for each library of the package."""
    found: dict[str, list[tuple[PurePosixPath, zipfile.ZipInfo]]] = {}
    for info in infos:
        if info.is_dir() or not info.filename.endswith(LIBRARY_SUFFIX):
            continue
        path = PurePosixPath(info.filename)
        if path.is_absolute() or ".." in path.parts or "\\" in info.filename:
            raise AuditError(MSG_UNSAFE_MEMBER.format(wheel=wheel, name=info.filename))
        if len(path.parts) < 2 or path.parts[0].endswith(_METADATA_SUFFIXES):
            continue
        found.setdefault(path.parts[0], []).append((path.relative_to(path.parts[0]), info))
    if not found:
        raise AuditError(MSG_WHEEL_WITHOUT_SO.format(wheel=wheel))

    root = _package_root(wheel, sorted(found))
    libraries = found[root]
    refuse_cpu_variant(relative.as_posix() for relative, _ in libraries)
    return [(root, relative, info) for relative, info in libraries]


def _package_root(wheel: Path, roots: list[str]) -> str:
    """The top-level directory that is the package the wheel is named after."""
    distribution = _normalise(wheel.name.split("-", 1)[0])
    named = [root for root in roots if _normalise(root) == distribution]
    if named:
        return named[0]
    if len(roots) == 1:
        return roots[0]
    raise AuditError(MSG_AMBIGUOUS_ROOT.format(wheel=wheel, roots=", ".join(roots)))


def _normalise(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")
