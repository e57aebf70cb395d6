"""Diffs read through libgit2 are the diffs ``git diff-tree -M --raw --numstat`` reads."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sandbox.git_diff import tree_diff
from sandbox.git_files import GitFile
from sandbox.git_objects import EMPTY_TREE_SHA, FileDiff, Identity, parse_diff
from sandbox.gitstore import GitStore

REPO = "octo/diffs"
DIFFS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  x", "long line " * 3]), max_size=12)
TEXTS = st.builds(
    lambda lines, end: "\n".join(lines) + end, LINES, st.sampled_from(["", "\n"])
).map(str.encode)
CONTENTS = st.one_of(
    TEXTS.map(GitFile),
    TEXTS.map(lambda data: GitFile(data, "100755")),
    st.binary(max_size=40).map(GitFile),  # NULs and bytes libgit2 may call binary
    st.sampled_from(["target", "other"]).map(GitFile.symlink),
)
PATHS = st.sampled_from(["a.txt", "b.txt", "d/a.txt", "d/e/f.py", "d.txt", "d-e"])
TREES = st.dictionaries(PATHS, CONTENTS, max_size=5)


def git_diff(store: GitStore, old: str, new: str) -> list[FileDiff]:
    """The store's answer through git itself, as before libgit2 was asked."""
    args = ("diff-tree", "-r", "-z", "-M", "--raw", "--numstat", old, new)
    return parse_diff(store.run(store.path(REPO), *args).stdout)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> GitStore:
    store = GitStore(tmp_path_factory.mktemp("diffs"))
    store.init(REPO, "main")
    return store


def tree_of(store: GitStore, files: dict[str, GitFile]) -> str:
    clean: dict[str, GitFile | None] = {}
    for path, file in files.items():  # a file and a directory of one name cannot both be
        if not any(other.startswith(path + "/") for other in files):
            clean[path] = file
    return store.write_files(REPO, None, dict(clean))


@DIFFS
@given(old=TREES, new=TREES, from_empty=st.booleans())
def test_a_diff_is_the_one_git_reads(
    store: GitStore, old: dict[str, GitFile], new: dict[str, GitFile], from_empty: bool
) -> None:
    before = EMPTY_TREE_SHA if from_empty else tree_of(store, old)
    after = tree_of(store, new)
    ours = tree_diff(store.path(REPO), before, after)
    event("answered in process" if ours is not None else "left to git")
    if ours is not None:
        assert ours == git_diff(store, before, after)
    assert store.diff(REPO, before, after) == git_diff(store, before, after)


def test_what_git_must_read_is_left_to_it(store: GitStore) -> None:
    git_dir = store.path(REPO)
    text = b"one\ntwo\nthree\nfour\n"
    moved = (tree_of(store, {"a.txt": GitFile(text)}), tree_of(store, {"b.txt": GitFile(text)}))
    assert tree_diff(git_dir, *moved) is None  # a removal and an add: maybe a rename
    assert [f.status for f in store.diff(REPO, *moved)] == ["renamed"]
    retyped = (
        tree_of(store, {"a": GitFile(b"target")}),
        tree_of(store, {"a": GitFile.symlink("target")}),
    )
    assert tree_diff(git_dir, *retyped) is None
    binary = (tree_of(store, {"a": GitFile(b"\0\1")}), tree_of(store, {"a": GitFile(b"\0\2")}))
    assert tree_diff(git_dir, *binary) is None
    assert tree_diff(git_dir, "e" * 40, moved[1]) is None
    assert tree_diff(git_dir, moved[0], "not a sha") is None
    assert tree_diff(git_dir.parent / "none.git", moved[0], moved[1]) is None


def test_commits_are_diffed_by_their_trees(store: GitStore) -> None:
    first = tree_of(store, {"a.txt": GitFile(b"1\n")})
    second = tree_of(store, {"a.txt": GitFile(b"1\n2\n"), "b.txt": GitFile(b"b\n")})
    me = Identity("A", "a@example.com", 1_700_000_000)
    parent = store.commit_tree(REPO, first, [], "one\n", me, me)
    child = store.commit_tree(REPO, second, [parent], "two\n", me, me)
    ours = tree_diff(store.path(REPO), parent, child)
    assert ours == git_diff(store, parent, child)
    assert [(f.filename, f.status, f.additions, f.deletions) for f in ours or []] == [
        ("a.txt", "modified", 1, 0),
        ("b.txt", "added", 1, 0),
    ]
