"""The in-process commit walk lists what ``git rev-list`` lists, in git's order."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox.git_walk import Walked, listed, reachable

# Each example writes its history with libgit2 and asks git a few questions.
WALKS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ENV = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull}


@dataclass(frozen=True)
class History:
    """Commit n's parents (earlier commits) and committer date."""

    parents: tuple[tuple[int, ...], ...]
    dates: tuple[int, ...]


@st.composite
def histories(draw: st.DrawFn, *, dates_go_forward: bool) -> History:
    size = draw(st.integers(1, 12))
    parents: list[tuple[int, ...]] = []
    dates: list[int] = []
    for n in range(size):
        chosen = draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True)) if n else []
        parents.append(tuple(chosen))
        if dates_go_forward:  # steps of 0 make the ties git breaks by queue order
            latest = max((dates[p] for p in chosen), default=1_700_000_000)
            dates.append(latest + draw(st.integers(0, 1)))
        else:
            dates.append(1_700_000_000 + draw(st.integers(0, 3)))
    return History(tuple(parents), tuple(dates))


@dataclass(frozen=True)
class Ask:
    shown: tuple[int, ...]
    hidden: tuple[int, ...]
    skip: int
    limit: int | None
    reverse: bool


def asks(history: History, *, hide: bool) -> st.SearchStrategy[Ask]:
    commits = st.integers(0, len(history.parents) - 1)
    return st.builds(
        Ask,
        shown=st.lists(commits, min_size=1, max_size=3).map(tuple),
        hidden=st.lists(commits, max_size=2 if hide else 0).map(tuple),
        skip=st.integers(0, 3),
        limit=st.none() | st.integers(0, 5),
        reverse=st.booleans(),
    )


def written(root: Path, history: History) -> tuple[str, list[str]]:
    """The history as real commits (one empty tree) in a new repository: its git
    directory and the shas by index."""
    git_dir = str(root / f"walk-{len(list(root.iterdir()))}.git")
    repo = pygit2.init_repository(git_dir, bare=True)
    tree = repo.TreeBuilder().write()
    shas: list[str] = []
    for parents, date in zip(history.parents, history.dates, strict=True):
        who = pygit2.Signature("A", "a@example.com", date, 0)
        message = f"commit {len(shas)}\n"
        oid = repo.create_commit(None, who, who, message, tree, [shas[p] for p in parents])
        shas.append(str(oid))
    return git_dir, shas


def git_rev_list(git_dir: str, shas: list[str], ask: Ask) -> list[str]:
    args = ["git", "--git-dir", git_dir, "rev-list", f"--skip={ask.skip}"]
    args += ["--reverse"] if ask.reverse else []
    args += [] if ask.limit is None else [f"--max-count={ask.limit}"]
    args += [shas[n] for n in ask.shown] + [f"^{shas[n]}" for n in ask.hidden]
    return subprocess.run(args, capture_output=True, check=True, env=ENV).stdout.decode().split()


def walk(git_dir: str, shas: list[str], ask: Ask) -> list[str]:
    repo = pygit2.Repository(git_dir)

    def read(sha: str) -> Walked:
        commit = repo[sha]
        assert isinstance(commit, pygit2.Commit)
        return Walked(commit.commit_time, tuple(str(p) for p in commit.parent_ids))

    return listed(
        [shas[n] for n in ask.shown],
        [shas[n] for n in ask.hidden],
        read,
        skip=ask.skip,
        limit=ask.limit,
        reverse=ask.reverse,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("walks")


@pytest.mark.parametrize(
    ("dates_go_forward", "hide"),
    [(True, True), (False, False)],
    ids=["dates go forward", "nothing hidden, any dates"],
)
@WALKS
@given(data=st.data())
def test_lists_what_git_lists(
    root: Path, data: st.DataObject, dates_go_forward: bool, hide: bool
) -> None:
    history = data.draw(histories(dates_go_forward=dates_go_forward))
    git_dir, shas = written(root, history)
    ask = data.draw(asks(history, hide=hide))
    assert walk(git_dir, shas, ask) == git_rev_list(git_dir, shas, ask)


@given(
    history=histories(dates_go_forward=False),
    shown=st.lists(st.integers(0, 11), min_size=1, max_size=3),
    hidden=st.lists(st.integers(0, 11), max_size=3),
)
def test_a_range_lists_each_commit_it_means_once_whatever_the_dates(
    history: History, shown: list[int], hidden: list[int]
) -> None:
    """Where git may stop early (hidden commits newer than what they hide), the walk still
    lists exactly the commits reachable from the shown ones and not from the hidden."""
    size = len(history.parents)
    names = [str(n) for n in range(size)]

    def read(sha: str) -> Walked:
        n = int(sha)
        return Walked(history.dates[n], tuple(names[p] for p in history.parents[n]))

    shown_names = [names[n % size] for n in shown]
    hidden_names = [names[n % size] for n in hidden]
    out = listed(shown_names, hidden_names, read)
    assert len(out) == len(set(out))
    assert set(out) == reachable(shown_names, read) - reachable(hidden_names, read)
