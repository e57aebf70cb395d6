"""Trees edited in this process are the trees ``git fast-import`` builds from the same edits."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox.git_files import TreeEdit, imported_tree, tree_import
from sandbox.git_objects import EMPTY_TREE_SHA, GitError
from sandbox.git_tree_edit import MAX_NEW_BLOBS, edited_tree
from sandbox.gitstore import GitStore

REPO = "octo/trees"
ENV = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull}
EDITS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Few names, so that edits collide: a file where a directory is, a drop of a parent.
PATHS = st.lists(st.sampled_from(["a", "b", "c.txt"]), min_size=1, max_size=3).map("/".join)
FILE_MODES = st.sampled_from(["100644", "100755", "120000"])


def fast_import(git_dir: Path, base: str | None, edits: list[TreeEdit]) -> str:
    stream = tree_import(f"refs/scratch/{uuid.uuid4().hex}", base, edits)
    argv = ["git", "--git-dir", str(git_dir), "fast-import", "--quiet", "--done"]
    proc = subprocess.run([*argv, "--cat-blob-fd=1"], input=stream, capture_output=True, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return imported_tree(proc.stdout.decode())


def git_blob(git_dir: Path, data: bytes) -> str:
    argv = ["git", "--git-dir", str(git_dir), "hash-object", "-w", "--stdin"]
    return subprocess.run(argv, input=data, capture_output=True, env=ENV).stdout.decode().strip()


@pytest.fixture(scope="module")
def git_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = GitStore(tmp_path_factory.mktemp("trees"))
    store.init(REPO, "main")
    return store.path(REPO)


@st.composite
def edit_lists(draw: st.DrawFn, shas: list[str]) -> list[TreeEdit]:
    edits = []
    for _ in range(draw(st.integers(0, 6))):
        path = draw(PATHS)
        choice = draw(st.sampled_from(["file", "drop", "sha"] if shas else ["file", "drop"]))
        if choice == "drop":
            edits.append(TreeEdit(path))
        elif choice == "file":
            edits.append(TreeEdit(path, draw(FILE_MODES), draw(st.binary(max_size=3))))
        else:  # an existing object by sha: a blob, a tree or a submodule's commit
            mode, sha = draw(st.sampled_from(shas)).split(" ")
            edits.append(TreeEdit(path, mode, sha))
    return edits


@EDITS
@given(data=st.data())
def test_the_tree_is_the_one_fast_import_builds(git_dir: Path, data: st.DataObject) -> None:
    base_edits = data.draw(edit_lists([]))
    base = fast_import(git_dir, None, base_edits)
    one_file = fast_import(git_dir, None, [TreeEdit("x", "100644", b"x")])
    blob = git_blob(git_dir, b"x")
    known = [f"040000 {base}", f"040000 {one_file}", f"100644 {blob}", f"120000 {blob}"]
    known += [f"040000 {EMPTY_TREE_SHA}", f"160000 {'c' * 40}"]
    edits = data.draw(edit_lists(known))
    start = data.draw(st.sampled_from([None, base]))
    assert edited_tree(git_dir, start, edits) == fast_import(git_dir, start, edits)


def test_what_fast_import_must_do_is_left_to_it(git_dir: Path) -> None:
    base = fast_import(git_dir, None, [TreeEdit("f", "100644", b"f")])
    many = [TreeEdit(f"f{n}", "100644", b"%d" % n) for n in range(MAX_NEW_BLOBS + 1)]
    assert edited_tree(git_dir, base, many) is None
    assert edited_tree(git_dir, base, many[:-1]) == fast_import(git_dir, base, many[:-1])
    assert edited_tree(git_dir, "e" * 40, []) is None  # no such base tree
    assert edited_tree(git_dir, base, [TreeEdit("g", "100644", "e" * 40)]) is None  # no blob
    assert edited_tree(git_dir, base, [TreeEdit("g", "100644", base)]) is None  # a tree
    assert edited_tree(git_dir, base, [TreeEdit("g", "040000", "not a sha")]) is None
    assert edited_tree(git_dir, base, [TreeEdit("g", "100664", b"odd mode")]) is None
    assert edited_tree(git_dir.parent / "none.git", None, []) is None


def test_a_bad_path_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = GitStore(tmp_path)
    store.init(REPO, "main")
    with pytest.raises(GitError, match="invalid path"):
        store.write_files(REPO, None, {"a/../b": "x"})
