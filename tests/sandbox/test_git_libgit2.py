"""Writes and history questions answered through libgit2 are answered as git answers them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygit2.enums import ConfigLevel

from sandbox import git_libgit2
from sandbox.git_objects import ZERO_SHA, GitError, Identity
from sandbox.gitstore import GitStore

REPO = "octo/lg2"
WHO = Identity("A U Thor", "author@example.com", 1_700_000_000)
ENV = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull}
EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def git(git_dir: Path, *args: str, stdin: bytes | None = None, **env: str) -> str:
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args],
        input=stdin,
        capture_output=True,
        env={**ENV, **env},
        check=False,
    )
    return proc.stdout.decode().strip() if proc.returncode == 0 else f"failed {proc.returncode}"


def git_commit(git_dir: Path, tree: str, parents: list[str], message: str, a: Identity) -> str:
    dates = {"GIT_AUTHOR_DATE": f"{a.timestamp} +0000", "GIT_COMMITTER_DATE": "1000000000 +0000"}
    names = {"GIT_AUTHOR_NAME": a.name, "GIT_AUTHOR_EMAIL": a.email}
    names |= {"GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL": "c@example.com"}
    parent_args = [arg for p in parents for arg in ("-p", p)]
    return git(git_dir, "commit-tree", tree, *parent_args, stdin=message.encode(), **dates, **names)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitStore, Path, str]:
    store = GitStore(tmp_path_factory.mktemp("lg2"))
    store.init(REPO, "main")
    tree = store.write_files(REPO, None, {"a.txt": "a\n"})
    return store, store.path(REPO), tree


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    store = GitStore(tmp_path / "git")
    store.init(REPO, "main")
    return store


def commit(store: GitStore, parents: list[str], message: str = "m\n", when: int = 0) -> str:
    tree = store.write_files(REPO, None, {"a.txt": message})
    who = Identity(WHO.name, WHO.email, WHO.timestamp + when)
    return store.commit_tree(REPO, tree, parents, message, who, who)


PLAIN_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=0, max_size=30)
NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ._@+-]{0,20}[A-Za-z0-9]", fullmatch=True)


@EXAMPLES
@given(
    name=NAMES,
    email=NAMES,
    stamp=st.integers(100_000_000, 4_102_444_799),
    message=PLAIN_TEXT,
    with_parent=st.booleans(),
)
def test_a_commit_is_the_object_git_writes(
    shared: tuple[GitStore, Path, str],
    name: str,
    email: str,
    stamp: int,
    message: str,
    with_parent: bool,
) -> None:
    _, git_dir, tree = shared
    author = Identity(name, email, stamp)
    committer = Identity("C", "c@example.com", 1_000_000_000)
    parents = [git_commit(git_dir, tree, [], "root\n", WHO)] if with_parent else []
    ours = git_libgit2.commit_tree(git_dir, tree, parents, message, author, committer)
    assert ours is not None
    assert ours == git_commit(git_dir, tree, parents, message, author)


@pytest.mark.parametrize(
    "who",
    [
        Identity(" padded ", "a@example.com", WHO.timestamp),
        Identity("A", "<a@example.com>", WHO.timestamp),
        Identity("A.", "a@example.com", WHO.timestamp),
        Identity("with\nnewline", "a@example.com", WHO.timestamp),
    ],
)
def test_an_identity_git_would_clean_up_is_written_by_git(store: GitStore, who: Identity) -> None:
    git_dir = store.path(REPO)
    tree = store.write_files(REPO, None, {"a.txt": "a\n"})
    assert git_libgit2.commit_tree(git_dir, tree, [], "m\n", who, who) is None
    via_store = store.commit_tree(REPO, tree, [], "m\n", who, who)
    expected = git_commit(git_dir, tree, [], "m\n", who)
    # The committer differs from git_commit's; compare the authors git recorded.
    assert git(git_dir, "show", "-s", "--format=%an|%ae", via_store) == git(
        git_dir, "show", "-s", "--format=%an|%ae", expected
    )


def test_a_repeated_parent_and_a_missing_object_are_left_to_git(store: GitStore) -> None:
    git_dir = store.path(REPO)
    root = commit(store, [])
    tree = store.read_commit(REPO, root).tree
    assert git_libgit2.commit_tree(git_dir, tree, [root, root], "m", WHO, WHO) is None
    assert store.read_commit(REPO, store.commit_tree(REPO, tree, [root, root], "m", WHO, WHO))
    assert git_libgit2.commit_tree(git_dir, "f" * 40, [], "m", WHO, WHO) is None
    assert git_libgit2.commit_tree(git_dir, tree, ["f" * 40], "m", WHO, WHO) is None
    assert git_libgit2.commit_tree(git_dir, root, [], "m", WHO, WHO) is None  # not a tree
    for stamp in (99_999_999, 4_102_444_800):  # dates git does not read as epoch seconds
        early_or_late = Identity(WHO.name, WHO.email, stamp)
        assert git_libgit2.commit_tree(git_dir, tree, [], "m", early_or_late, WHO) is None
        with pytest.raises(GitError, match="invalid date format"):
            store.commit_tree(REPO, tree, [], "m", early_or_late, WHO)


def test_a_blob_is_the_object_git_writes(store: GitStore) -> None:
    data = b"some bytes\n\0and more"
    sha = store.hash_blob(REPO, data)
    assert sha == git(store.path(REPO), "hash-object", "--stdin", stdin=data)
    assert store.read_blob(REPO, sha) == data


# -- refs ---------------------------------------------------------------------------------

Step = tuple[str, str, str, str | None]  # (op, ref, new or "", old)


def ref_steps(a: str, b: str, tree: str) -> list[Step]:
    return [
        ("update", "refs/heads/main", a, ZERO_SHA),  # created
        ("update", "refs/heads/main", b, ZERO_SHA),  # exists already
        ("update", "refs/heads/main", b, b),  # not at b
        ("update", "refs/heads/main", b, a),  # compare and swap
        ("update", "refs/heads/main", a, None),  # forced back
        ("update", "refs/heads/main/sub", a, ZERO_SHA),  # main is a file in the way
        ("update", "refs/heads/x", a, b),  # missing, so not at b
        ("update", "refs/heads/y", "e" * 40, None),  # no such object
        ("update", "refs/heads/z", tree, None),  # a tree on a branch
        ("update", "refs/tags/t", tree, ZERO_SHA),  # anything may be tagged
        ("update", "refs/heads/odd@{name", a, None),  # not a plain name: git's answer
        ("update", "refs/heads/fine.name_1-2", a, ZERO_SHA),
        ("delete", "refs/heads/main", "", b),  # not at b
        ("delete", "refs/heads/gone", "", a),  # not there
        ("delete", "refs/heads/main", "", a),
        ("update", "refs/heads/main", b, None),  # made again
    ]


def run_steps(store: GitStore, steps: list[Step]) -> tuple[list[bool], dict[str, str]]:
    results = [
        store.update_ref(REPO, ref, new, old)
        if op == "update"
        else store.delete_ref(REPO, ref, old or "")
        for op, ref, new, old in steps
    ]
    return results, store.list_refs(REPO)


def test_refs_move_as_git_moves_them(store: GitStore, tmp_path: Path) -> None:
    a = commit(store, [])
    b = commit(store, [a], "second\n", 1)
    tree = store.read_commit(REPO, a).tree
    results, refs = run_steps(store, ref_steps(a, b, tree))

    twin = tmp_path / "twin.git"
    subprocess.run(["git", "init", "--bare", "-q", str(twin)], check=True, env=ENV)
    git(store.path(REPO), "push", "-q", str(twin), f"{b}:refs/keep/b")
    expected = []
    for op, ref, new, old in ref_steps(a, b, tree):
        args = (
            ["update-ref", ref, new] + ([old] if old else [])
            if op == "update"
            else [
                "update-ref",
                "-d",
                ref,
                old or "",
            ]
        )
        expected.append(not git(twin, *args).startswith("failed"))
    twin_refs = dict(
        line.split(" ")[::-1]
        for line in git(twin, "for-each-ref", "--format=%(objectname) %(refname)").splitlines()
        if not line.endswith("refs/keep/b")
    )
    assert results == expected
    assert refs == twin_refs


def test_plain_names_are_left_to_libgit2_and_others_to_git(store: GitStore) -> None:
    a = commit(store, [])
    git_dir = store.path(REPO)
    assert git_libgit2.update_ref(git_dir, "refs/heads/feature/x-1.2", a, None) is True
    for odd in ("refs/heads/a..b", "refs/heads/x.lock", "refs/heads/.hidden", "HEAD"):
        assert git_libgit2.update_ref(git_dir, odd, a, None) is None
    assert git_libgit2.update_ref(git_dir, "refs/heads/short", "abc", None) is None


@given(
    st.from_regex(
        r"refs(/[A-Za-z0-9_][A-Za-z0-9_-]{0,8}(\.[A-Za-z0-9_-]{1,4}){0,2}){1,4}", fullmatch=True
    )
)
def test_every_plain_name_is_one_git_accepts(name: str) -> None:
    plain = git_libgit2._plain_ref(name)
    if plain:
        proc = subprocess.run(["git", "check-ref-format", name], env=ENV, check=False)
        assert proc.returncode == 0


def test_a_symbolic_ref_is_moved_by_git(store: GitStore) -> None:
    a = commit(store, [])
    b = commit(store, [a], "b\n", 1)
    git_dir = store.path(REPO)
    store.update_ref(REPO, "refs/heads/main", a, None)
    git(git_dir, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    assert git_libgit2.update_ref(git_dir, "refs/heads/alias", b, a) is None
    assert store.update_ref(REPO, "refs/heads/alias", b, a)
    assert store.get_ref(REPO, "refs/heads/main") == b  # git moved the ref it names


def test_a_write_voids_the_kept_answers(store: GitStore) -> None:
    a = commit(store, [])
    assert store.list_refs(REPO) == {}
    assert store.update_ref(REPO, "refs/heads/main", a, ZERO_SHA)
    assert store.list_refs(REPO) == {"refs/heads/main": a}
    assert store.delete_ref(REPO, "refs/heads/main", a)
    assert store.list_refs(REPO) == {}


def test_a_missing_repository_is_left_to_git(tmp_path: Path) -> None:
    missing = tmp_path / "none.git"
    assert git_libgit2.update_ref(missing, "refs/heads/main", "a" * 40, None) is None
    assert git_libgit2.hash_blob(missing, b"x") is None
    assert git_libgit2.is_ancestor(missing, "a" * 40, "b" * 40) is None
    assert git_libgit2.rev_list(missing, ["a" * 40], reverse=False, limit=None, skip=0) is None


# -- history ------------------------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn) -> list[tuple[int, ...]]:
    size = draw(st.integers(1, 10))
    return [
        tuple(draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True)) if n else ())
        for n in range(size)
    ]


def build(store: GitStore, dag: list[tuple[int, ...]], dates: Callable[[int], int]) -> list[str]:
    tree = store.write_files(REPO, None, {"a.txt": "a\n"})
    shas: list[str] = []
    for n, parents in enumerate(dag):
        who = Identity(WHO.name, WHO.email, WHO.timestamp + dates(n))
        shas.append(store.commit_tree(REPO, tree, [shas[p] for p in parents], f"c{n}\n", who, who))
    return shas


@EXAMPLES
@given(dag=dags(), data=st.data())
def test_ancestry_and_merge_bases_are_gits(
    tmp_path_factory: pytest.TempPathFactory, dag: list[tuple[int, ...]], data: st.DataObject
) -> None:
    store = GitStore(tmp_path_factory.mktemp("dag"))
    store.init(REPO, "main")
    shas = build(store, dag, lambda n: n)
    git_dir = store.path(REPO)
    pick = st.sampled_from(shas)
    a, b = data.draw(pick), data.draw(pick)
    assert git_libgit2.is_ancestor(git_dir, a, b) == (
        git(git_dir, "merge-base", "--is-ancestor", a, b) == ""
    )
    base = git(git_dir, "merge-base", a, b)
    assert git_libgit2.merge_base(git_dir, a, b) == (None if base.startswith("failed") else base,)
    count = git(git_dir, "rev-list", "--count", f"{a}..{b}")
    assert store.count(REPO, f"{a}..{b}") == int(count)


def test_revisions_that_are_not_commit_shas_are_left_to_git(store: GitStore) -> None:
    a = commit(store, [])
    git_dir = store.path(REPO)
    store.update_ref(REPO, "refs/heads/main", a, None)
    tree = store.read_commit(REPO, a).tree
    for revs in (["main"], [f"{a}...{a}"], [tree], ["f" * 40], [f"..{a}"]):
        assert git_libgit2.rev_list(git_dir, revs, reverse=False, limit=None, skip=0) is None
    assert store.rev_list(REPO, "main") == [a]
    assert git_libgit2.merge_base(git_dir, a, tree) is None
    assert git_libgit2.is_ancestor(git_dir, "main", a) is None
    assert store.is_ancestor(REPO, a, a)


def test_libgit2_reads_no_configuration_but_the_stores_empty_home(store: GitStore) -> None:
    """As the store's git processes (HOME is its empty folder, no system file): a
    developer's global `core.logAllRefUpdates` or hooks never change what libgit2 writes."""
    home = str(store.root / ".git-home")
    for level in (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL):
        assert pygit2.settings.search_path[level] == home
    assert not any((store.root / ".git-home").iterdir())
