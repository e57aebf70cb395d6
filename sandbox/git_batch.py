"""Object reads through one long-lived ``git cat-file --batch-command`` per repository.

Starting git costs ~1.6 ms of CPU, and the stand-in read objects one process at a time:
~6,000 ``cat-file`` and ``rev-parse`` processes in a run of the end-to-end tests, after
``git_reads`` had answered the repeated ones. Here each repository keeps one ``cat-file``
process and asks it a line at a time.

Content-addressed names (a full sha, ``sha^{commit}``, ``sha:path``) have answers that
never change. Ref names (``refs/heads/main``, ``refs/tags/v1^{commit}``) are asked too:
git reads a loose ref's file on every lookup and takes ``packed-refs`` again when its
stat changes (it caches loose refs only to list them, which nothing here asks), so the
answer is the one a new process would give. ``tests/sandbox/test_git_batch.py`` moves,
deletes and packs a branch between asks to hold it to that. Objects written since the
process started are found (git looks for new packs when an object is missing). A
repository's process ends when the store is closed or when more than ``MAX_PROCESSES``
repositories have one (the least recently used ends).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MAX_PROCESSES = 8


@dataclass(frozen=True)
class ObjectInfo:
    sha: str
    kind: str
    size: int


class _Process:
    """One ``cat-file --batch-command``: a question written, its answer read."""

    def __init__(self, git_dir: Path, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch-command"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
        )

    def ask(self, command: str, name: str) -> tuple[ObjectInfo | None, bytes]:
        stdin, stdout = self._pipes()
        stdin.write(f"{command} {name}\n".encode())
        stdin.flush()
        header = stdout.readline()
        if not header:
            raise BrokenPipeError("git cat-file ended")
        parts = header.split()
        if parts[-1] in (b"missing", b"ambiguous"):  # "<name> missing", and a name may hold spaces
            return None, b""
        info = ObjectInfo(parts[0].decode(), parts[1].decode(), int(parts[2]))
        if command != "contents":
            return info, b""
        data = stdout.read(info.size + 1)  # the object, then a newline
        if len(data) != info.size + 1:
            raise BrokenPipeError("git cat-file ended mid-object")
        return info, data[:-1]

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def close(self) -> None:
        stdin, stdout = self._pipes()
        with contextlib.suppress(OSError):  # it ended first
            stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        stdout.close()


class BatchReader:
    """Thread-safe (the stand-in reads from worker threads): one question at a time."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._lock = threading.Lock()
        self._processes: OrderedDict[Path, _Process] = OrderedDict()

    def info(self, git_dir: Path, name: str) -> ObjectInfo | None:
        """The object ``name`` names, or None when there is none."""
        return self._ask(git_dir, "info", name)[0]

    def contents(self, git_dir: Path, name: str) -> tuple[ObjectInfo, bytes] | None:
        info, data = self._ask(git_dir, "contents", name)
        return None if info is None else (info, data)

    def _ask(self, git_dir: Path, command: str, name: str) -> tuple[ObjectInfo | None, bytes]:
        if "\n" in name or not name:
            raise ValueError(f"cannot ask git cat-file for {name!r}")
        with self._lock:
            if git_dir not in self._processes and not git_dir.is_dir():
                return None, b""  # no repository (never made, or removed): nothing in it
            try:
                return self._process(git_dir).ask(command, name)
            except (BrokenPipeError, ValueError):
                self._end(git_dir)  # once more with a new process, then let it fail
                return self._process(git_dir).ask(command, name)

    def _process(self, git_dir: Path) -> _Process:
        process = self._processes.get(git_dir)
        if process is None:
            process = self._processes[git_dir] = _Process(git_dir, self._env)
            while len(self._processes) > MAX_PROCESSES:
                self._processes.popitem(last=False)[1].close()
        self._processes.move_to_end(git_dir)
        return process

    def _end(self, git_dir: Path) -> None:
        process = self._processes.pop(git_dir, None)
        if process is not None:
            process.close()

    def forget(self, git_dir: Path) -> None:
        """The repository was made anew or removed: its process ends."""
        with self._lock:
            self._end(git_dir)

    def close(self) -> None:
        with self._lock:
            while self._processes:
                self._processes.popitem()[1].close()
