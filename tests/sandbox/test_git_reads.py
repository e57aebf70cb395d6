"""The stand-in answers repeated git questions from memory, never with a stale answer."""

from __future__ import annotations

import itertools
import subprocess
import threading
from pathlib import Path

import pytest

from sandbox.git_objects import Identity
from sandbox.git_reads import ReadCache, is_content_addressed
from sandbox.gitstore import GitStore

SHA = "a" * 40
OTHER = "b" * 40
REPO = "octo/cache"


@pytest.mark.parametrize(
    "args",
    [
        ("cat-file", "commit", SHA),
        ("cat-file", "-t", SHA),
        ("rev-parse", "--verify", "--quiet", f"{SHA}^{{commit}}"),
        ("rev-parse", "--verify", "--quiet", f"{SHA}:csrc/a b.cu"),
        ("diff-tree", "-r", "-z", "-M", "--numstat", SHA, OTHER),
        ("rev-list", "--max-count=5", SHA, f"^{OTHER}", "--", "cmake/x.cmake"),
        ("rev-list", f"{OTHER}..{SHA}"),
        ("merge-base", "--is-ancestor", SHA, OTHER),
    ],
)
def test_questions_about_shas_only_are_content_addressed(args: tuple[str, ...]) -> None:
    assert is_content_addressed(args, None)


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (("rev-parse", "--verify", "--quiet", "refs/heads/main"), None),
        (("rev-parse", "--verify", "--quiet", "main^{commit}"), None),
        (("rev-list", "main", f"^{SHA}"), None),
        (("rev-list", SHA[:12]), None),  # an abbreviation can become ambiguous
        (("for-each-ref", "--format=%(refname)", "refs/"), None),
        (("cat-file", "--batch"), f"{SHA}\nmain\n".encode()),
    ],
)
def test_questions_naming_a_ref_are_not(args: tuple[str, ...], stdin: bytes | None) -> None:
    assert not is_content_addressed(args, stdin)


def test_a_sha_batch_on_stdin_is_content_addressed() -> None:
    assert is_content_addressed(("cat-file", "--batch"), f"{SHA}\n{OTHER}\n".encode())


def answer(out: bytes, code: int = 0) -> subprocess.CompletedProcess[bytes]:
    return subprocess.CompletedProcess(["git"], code, out, b"")


def stdout(found: subprocess.CompletedProcess[bytes] | None) -> bytes | None:
    return None if found is None else found.stdout


def test_a_ref_answer_lasts_until_the_next_write(tmp_path: Path) -> None:
    cache, repo = ReadCache(), tmp_path / "o" / "r.git"
    question = ("rev-parse", "--verify", "--quiet", "refs/heads/main")
    cache.keep(repo, question, None, answer(b"x"), cache.writes(repo))
    assert stdout(cache.lookup(repo, question, None)) == b"x"
    cache.wrote(tmp_path / "o" / "other.git")  # another repository's write changes nothing
    assert stdout(cache.lookup(repo, question, None)) == b"x"
    cache.wrote(repo)
    assert cache.lookup(repo, question, None) is None


def test_an_answer_read_across_a_write_is_not_kept(tmp_path: Path) -> None:
    cache, repo = ReadCache(), tmp_path / "o" / "r.git"
    question = ("rev-parse", "--verify", "--quiet", "refs/heads/main")
    seen = cache.writes(repo)
    cache.wrote(repo)  # the write finished while the read was running
    cache.keep(repo, question, None, answer(b"old"), seen)
    assert cache.lookup(repo, question, None) is None


def test_object_answers_outlive_writes_but_not_failures(tmp_path: Path) -> None:
    cache, repo = ReadCache(), tmp_path / "o" / "r.git"
    found, missing = ("cat-file", "commit", SHA), ("cat-file", "-t", OTHER)
    cache.keep(repo, found, None, answer(b"tree ..."), cache.writes(repo))
    cache.keep(repo, missing, None, answer(b"", 128), cache.writes(repo))
    cache.wrote(repo)  # e.g. the missing object was just written
    assert stdout(cache.lookup(repo, found, None)) == b"tree ..."
    assert cache.lookup(repo, missing, None) is None
    cache.forget(repo)  # the repository is made anew: nothing of it is kept
    assert cache.lookup(repo, found, None) is None


def test_writes_and_huge_answers_are_never_kept(tmp_path: Path) -> None:
    cache, repo = ReadCache(), tmp_path / "o" / "r.git"
    write = ("update-ref", "refs/heads/main", SHA)
    cache.keep(repo, write, None, answer(b""), cache.writes(repo))
    huge = ("cat-file", "blob", SHA)
    cache.keep(repo, huge, None, answer(b"x" * (2 << 20)), cache.writes(repo))
    assert cache.lookup(repo, write, None) is None
    assert cache.lookup(repo, huge, None) is None


def test_the_store_sees_its_own_ref_moves_at_once(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "git")
    store.init(REPO, "main")
    tree = store.write_files(REPO, None, {"a.txt": "1\n"})
    first = store.commit_tree(REPO, tree, [], "one", *_who())
    assert store.get_ref(REPO, "refs/heads/main") is None
    assert store.update_ref(REPO, "refs/heads/main", first, None)
    assert store.get_ref(REPO, "refs/heads/main") == first
    second = store.commit_tree(REPO, tree, [first], "two", *_who())
    assert store.update_ref(REPO, "refs/heads/main", second, first)
    assert store.get_ref(REPO, "refs/heads/main") == second
    assert store.resolve_commit(REPO, "main") == second
    assert store.rev_list(REPO, "main") == [second, first]
    assert store.delete_ref(REPO, "refs/heads/main", second)
    assert store.get_ref(REPO, "refs/heads/main") is None


def test_threads_reading_while_one_writes_end_on_the_written_value(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "git")
    store.init(REPO, "main")
    tree = store.write_files(REPO, None, {"a.txt": "1\n"})
    commits = [store.commit_tree(REPO, tree, [], f"c{n}", *_who()) for n in range(8)]
    store.update_ref(REPO, "refs/heads/main", commits[0], None)

    def read() -> None:
        for _ in range(20):
            store.get_ref(REPO, "refs/heads/main")

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    for before, after in itertools.pairwise(commits):
        assert store.update_ref(REPO, "refs/heads/main", after, before)
    for thread in readers:
        thread.join()
    assert store.get_ref(REPO, "refs/heads/main") == commits[-1]


def _who() -> tuple[Identity, Identity]:
    who = Identity("Ada", "ada@example.com", 1_700_000_000)
    return who, who
