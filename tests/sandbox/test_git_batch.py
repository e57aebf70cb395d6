"""Object reads through a long-lived ``git cat-file --batch-command`` per repository."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sandbox import git_batch
from sandbox.git_batch import BatchReader
from sandbox.git_files import FileContent
from sandbox.git_objects import ZERO_SHA, GitError, Identity
from sandbox.gitstore import GitStore

REPO = "octo/batch"
WHO = Identity("A", "a@example.com", 1_700_000_000)
ENV = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    store = GitStore(tmp_path / "git")
    store.init(REPO, "main")
    return store


def commit(store: GitStore, files: dict[str, FileContent | None], parents: list[str]) -> str:
    base = store.read_commit(REPO, parents[0]).tree if parents else None
    tree = store.write_files(REPO, base, dict(files))
    return store.commit_tree(REPO, tree, parents, "m", WHO, WHO)


def test_objects_written_after_the_reader_started_are_found(store: GitStore) -> None:
    first = commit(store, {"a.txt": "1\n"}, [])
    assert store.object_type(REPO, first) == "commit"  # the reader starts here
    second = commit(store, {"dir/b c.txt": "2\n"}, [first])
    assert store.read_commit(REPO, second).parents == (first,)
    kind, blob = store.file_at(REPO, second, "dir/b c.txt") or ("", "")
    assert (kind, store.read_blob(REPO, blob)) == ("blob", b"2\n")
    assert store.file_at(REPO, second, "dir") is not None
    assert store.resolve_commit(REPO, second) == second
    store.close()


def test_missing_objects_and_wrong_types(store: GitStore) -> None:
    first = commit(store, {"a.txt": "1\n"}, [])
    assert store.object_type(REPO, "0" * 40) is None
    assert store.object_type(REPO, "not a sha") is None
    assert store.file_at(REPO, first, "no such file") is None
    assert store.resolve_commit(REPO, "f" * 40) is None
    tree = store.read_commit(REPO, first).tree
    assert store.resolve_commit(REPO, tree) is None  # a tree is not a commit
    with pytest.raises(GitError, match="not a valid blob"):
        store.read_blob(REPO, first)
    with pytest.raises(GitError, match="not a valid commit"):
        store.read_commit(REPO, "0" * 40)
    store.close()


def test_a_reader_that_died_is_replaced(store: GitStore, tmp_path: Path) -> None:
    first = commit(store, {"a.txt": "1\n"}, [])
    reader = BatchReader(ENV)
    git_dir = store.path(REPO)
    assert reader.info(git_dir, first) is not None
    reader._processes[git_dir].proc.kill()  # what a crash of git would leave
    reader._processes[git_dir].proc.wait()
    info = reader.info(git_dir, first)
    assert info is not None
    assert (info.sha, info.kind) == (first, "commit")
    reader.close()


def test_names_the_protocol_cannot_carry_are_refused(store: GitStore) -> None:
    reader = BatchReader(ENV)
    for name in ("", "a\nb"):
        with pytest.raises(ValueError, match="cannot ask"):
            reader.info(store.path(REPO), name)


def test_the_least_recently_used_reader_ends_beyond_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_batch, "MAX_PROCESSES", 2)
    store = GitStore(tmp_path / "git")
    shas = {}
    for n in range(3):
        store.init(f"octo/r{n}", "main")
        tree = store.write_files(f"octo/r{n}", None, {"a": str(n)})
        shas[n] = store.commit_tree(f"octo/r{n}", tree, [], "m", WHO, WHO)
    reader = BatchReader(ENV)
    for n in range(3):
        assert reader.info(store.path(f"octo/r{n}"), shas[n]) is not None
    assert list(reader._processes) == [store.path("octo/r1"), store.path("octo/r2")]
    assert reader.info(store.path("octo/r0"), shas[0]) is not None  # started again
    reader.close()
    assert reader._processes == {}


def test_threads_share_one_reader(store: GitStore) -> None:
    shas = [commit(store, {"a.txt": f"{n}\n"}, []) for n in range(4)]
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for sha in shas * 10:
                assert store.read_commit(REPO, sha).message == "m"
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    store.close()


def test_a_ref_asked_again_is_where_it_was_last_moved_deleted_or_packed(store: GitStore) -> None:
    # The ref answers come from the same long-lived reader; each must be what a new
    # process would say, however quickly the ref moves (same second, same file size).
    commits = [commit(store, {"a.txt": f"{n}\n"}, []) for n in range(5)]
    ref, before = "refs/heads/main", None
    for step in range(200):
        target = commits[step % len(commits)]
        assert store.update_ref(REPO, ref, target, before or ZERO_SHA)
        assert store.get_ref(REPO, ref) == target
        assert store.resolve_commit(REPO, "main") == target
        before = target
        if step % 7 == 0:
            assert store.delete_ref(REPO, ref, target)
            assert store.get_ref(REPO, ref) is None
            assert store.resolve_commit(REPO, "main") is None
            before = None
        if step % 50 == 0:
            store.run(store.path(REPO), "pack-refs", "--all")  # the ref moves into packed-refs
    store.close()


def test_names_that_are_no_full_ref_have_none(store: GitStore) -> None:
    first = commit(store, {"a.txt": "1\n"}, [])
    assert store.update_ref(REPO, "refs/heads/main", first, ZERO_SHA)
    assert store.get_ref(REPO, "refs/heads/main") == first
    for name in ("main", first, "refs/heads/main\nrefs/heads/x", "refs/heads/no-such"):
        assert store.get_ref(REPO, name) is None
    assert store.resolve_commit(REPO, "main\nx") is None
    assert store.resolve_commit(REPO, first[:10]) == first  # an abbreviated sha
    store.close()


def test_a_repository_that_does_not_exist_has_no_refs_and_no_objects(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "git")
    assert store.get_ref("no/such", "refs/heads/main") is None
    assert store.resolve_commit("no/such", "main") is None
    assert store.object_type("no/such", "0" * 40) is None
    store.close()
