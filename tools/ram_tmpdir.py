"""Print the RAM-backed directory the test suite should keep its temporary files in, if any.

The suite writes and removes ~100k small files a run: the GitHub stand-in's git
repositories (every loose object, ref lock and pack is a new file), SQLite databases, and
the PostgreSQL databases ``make test``'s server creates per test. On a disk file system
(ext4) finding and freeing inodes for them was half of the suite's system time and a
quarter of its wall time; a RAM file system takes the same files for next to nothing.
``make test`` puts ``TMPDIR`` and its PostgreSQL server's files here when this prints a
directory, and leaves them alone when it prints nothing (no such file system, not writable,
or too little room).

Usage: ``python tools/ram_tmpdir.py`` prints a directory or nothing, and exits 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

# Where Linux mounts a RAM file system for every user (POSIX shared memory).
CANDIDATES = (Path("/dev/shm"),)
MOUNTS = Path("/proc/self/mounts")
RAM_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs"})
# A run's peak is a few hundred MB (a failing test's files are kept); a container's default
# /dev/shm of 64 MB would run out, so such a small one is not used.
MIN_FREE_BYTES = 2 << 30


def file_system_of(path: Path, mounts: str) -> str | None:
    """The type of the file system ``path`` is on, by the longest mount point above it."""
    best: tuple[int, str] | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        # /proc/self/mounts writes a space in a mount point as \040.
        point = Path(fields[1].replace("\\040", " "))
        if (path == point or point in path.parents) and (
            best is None or len(point.parts) > best[0]
        ):
            best = (len(point.parts), fields[2])
    return best[1] if best else None


def choose(
    candidates: Iterable[Path],
    mounts: str,
    free_bytes: Callable[[Path], int],
    writable: Callable[[Path], bool],
) -> Path | None:
    """The first candidate on a RAM file system with room to spare that we may write."""
    for candidate in candidates:
        if file_system_of(candidate, mounts) not in RAM_FILE_SYSTEMS:
            continue
        if writable(candidate) and free_bytes(candidate) >= MIN_FREE_BYTES:
            return candidate
    return None


def _free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def main() -> int:
    try:
        mounts = MOUNTS.read_text()
    except OSError:  # not Linux: no /proc, and no /dev/shm to use either
        return 0
    chosen = choose(CANDIDATES, mounts, _free_bytes, _writable)
    if chosen is not None:
        print(chosen)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
