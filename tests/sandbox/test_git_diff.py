"""The files between two commits, from one ``diff-tree --raw --numstat`` process."""

from __future__ import annotations

from pathlib import Path

from sandbox.git_files import GitFile
from sandbox.git_objects import FileDiff
from sandbox.gitstore import GitStore
from tests.sandbox.test_git_batch import REPO, commit

FIFTY = "".join(f"{n}\n" for n in range(50))


def test_every_kind_of_change_with_its_line_counts(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "git")
    store.init(REPO, "main")
    first = commit(store, {"f1": "a\nb\n", ":odd": "x\n", "big": FIFTY}, [])
    binary = GitFile(b"\0\1", "100644")
    second = commit(
        store, {"f1": "a\nc\nd\n", ":odd": None, "big": None, "big2": FIFTY, "bin": binary}, [first]
    )
    blob = {
        name: (store.file_at(REPO, second, name) or ("", ""))[1] for name in ("big2", "bin", "f1")
    }
    assert store.diff(REPO, first, second) == [
        FileDiff(":odd", "removed", 0, 1, None, None),  # a path is never read as a record
        FileDiff("big2", "renamed", 0, 0, blob["big2"], "big"),
        FileDiff("bin", "added", 0, 0, blob["bin"], None),  # binary: no line counts
        FileDiff("f1", "modified", 2, 1, blob["f1"], None),
    ]
    assert store.diff(REPO, second, second) == []
    store.close()
