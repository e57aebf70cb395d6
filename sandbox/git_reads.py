"""Answers of read-only git commands, kept so a repeated question costs no process.

A test asks the stand-in the same questions many times (``rev-parse`` of a branch before
every write, the diff of one compare, the same commit read by three endpoints), and
each answer cost a git process: about 70 of them a test, most of the suite's system time.

Two kinds of answer are kept:
- *content-addressed*: every revision the command names is a full sha (``sha``,
  ``^sha``, ``sha^{commit}``, ``sha:path``, ``a..b``), and it succeeded. Objects never
  change, so the answer holds for as long as the repository exists.
- *ref-dependent*: anything else read-only (a branch name, ``for-each-ref``, a missing
  object). Kept until the next write to that repository, whatever the write was.

Only the stand-in's own repositories are cached, and only writes made through the store
can happen to them; ``forget`` is for the writes that are not (``git init``).
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

# Subcommands that never change a repository's refs or its answers to other commands.
# merge-tree --write-tree writes tree objects, but only ones its inputs determine.
READ_ONLY = frozenset(
    {"cat-file", "rev-parse", "diff-tree", "rev-list", "merge-base", "merge-tree", "ls-tree"}
    | {"for-each-ref"}
)
_SHA_REVISION = re.compile(r"\^?[0-9a-f]{40}(\^\{[a-z]+\}|:.*|\.\.\.?\^?[0-9a-f]{40})?", re.S)
_OBJECT_TYPES = frozenset({"blob", "tree", "commit", "tag"})  # cat-file's <type> argument
_SHA_LINE = re.compile(rb"[0-9a-f]{40}")
MAX_ENTRIES = 20_000
MAX_ANSWER_BYTES = 1 << 20  # a bigger blob is read again rather than held

Key = tuple[str, tuple[str, ...], bytes | None]
Answer = subprocess.CompletedProcess[bytes]


def is_content_addressed(args: tuple[str, ...], stdin: bytes | None) -> bool:
    """Whether the command's answer depends on objects only, never on refs."""
    names = args[: args.index("--")] if "--" in args else args
    for arg in names[1:]:
        if arg.startswith("-") and not arg.startswith("^"):
            continue  # an option
        if _SHA_REVISION.fullmatch(arg) or (names[0] == "cat-file" and arg in _OBJECT_TYPES):
            continue
        return False
    return stdin is None or all(_SHA_LINE.fullmatch(line) for line in stdin.splitlines())


class ReadCache:
    """Thread-safe (the stand-in calls git from worker threads); bounded, oldest dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lasting: OrderedDict[Key, Answer] = OrderedDict()
        self._until_write: dict[str, dict[Key, Answer]] = {}
        self._writes: dict[str, int] = {}

    def answer(
        self, git_dir: Path, args: tuple[str, ...], stdin: bytes | None, git: Callable[[], Answer]
    ) -> Answer:
        """The kept answer, else ``git()``'s, kept if it may be; a write voids answers."""
        found = self.lookup(git_dir, args, stdin)
        if found is not None:
            return found
        seen = self.writes(git_dir)
        answer = git()
        if args[0] in READ_ONLY:
            self.keep(git_dir, args, stdin, answer, seen)
        else:
            self.wrote(git_dir)
        return answer

    def lookup(self, git_dir: Path, args: tuple[str, ...], stdin: bytes | None) -> Answer | None:
        key = (str(git_dir), args, stdin)
        with self._lock:
            found = self._lasting.get(key)
            if found is not None:
                self._lasting.move_to_end(key)
                return found
            return self._until_write.get(key[0], {}).get(key)

    def writes(self, git_dir: Path) -> int:
        """A counter that moves on every write: taken before a read, checked after it."""
        with self._lock:
            return self._writes.get(str(git_dir), 0)

    def keep(
        self, git_dir: Path, args: tuple[str, ...], stdin: bytes | None, answer: Answer, seen: int
    ) -> None:
        """Keep the answer of a read that started when the write counter read ``seen``."""
        if args[0] not in READ_ONLY or len(answer.stdout) > MAX_ANSWER_BYTES:
            return
        key = (str(git_dir), args, stdin)
        with self._lock:
            if answer.returncode == 0 and is_content_addressed(args, stdin):
                self._lasting[key] = answer
                if len(self._lasting) > MAX_ENTRIES:
                    self._lasting.popitem(last=False)
            elif self._writes.get(key[0], 0) == seen:  # no write raced the read
                self._until_write.setdefault(key[0], {})[key] = answer

    def wrote(self, git_dir: Path) -> None:
        """After any write: the ref-dependent answers of that repository are void."""
        with self._lock:
            self._void(str(git_dir))

    def forget(self, git_dir: Path) -> None:
        """The repository was made or removed outside ``run``: nothing of it is kept."""
        with self._lock:
            self._void(str(git_dir))
            for key in [key for key in self._lasting if key[0] == str(git_dir)]:
                del self._lasting[key]

    def _void(self, name: str) -> None:
        self._writes[name] = self._writes.get(name, 0) + 1
        self._until_write.pop(name, None)
