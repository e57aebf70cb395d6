"""An existing git repository served as a stand-in: chosen refs, borrowed objects."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import INSTALLATION_ID, RawApi, Receiver

IMPORTED = "acme/imported"
GIT_ENV = {
    "PATH": os.environ.get("PATH", ""),
    "HOME": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Grace Hopper",
    "GIT_AUTHOR_EMAIL": "grace@example.com",
    "GIT_AUTHOR_DATE": "1700000000 +0000",
    "GIT_COMMITTER_NAME": "Grace Hopper",
    "GIT_COMMITTER_EMAIL": "grace@example.com",
    "GIT_COMMITTER_DATE": "1700000000 +0000",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, check=True, env=GIT_ENV
    )
    return done.stdout.decode().strip()


@dataclass(frozen=True)
class Source:
    path: Path
    first: str
    main: str
    feature: str


@pytest.fixture
def source(tmp_path: Path) -> Source:
    """A developer's clone: ``main`` with two commits, ``feature`` one ahead of it."""
    path = tmp_path / "source"
    git(tmp_path, "init", "--quiet", "--initial-branch=main", str(path))
    (path / "README.md").write_text("hello\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("print(1)\n")
    git(path, "add", ".")
    git(path, "commit", "--quiet", "-m", "First")
    first = git(path, "rev-parse", "HEAD")
    (path / "src" / "app.py").write_text("print(2)\n")
    git(path, "commit", "--quiet", "-am", "Second")
    main = git(path, "rev-parse", "HEAD")
    git(path, "checkout", "--quiet", "-b", "feature")
    (path / "run.sh").write_text("#!/bin/sh\n")
    (path / "run.sh").chmod(0o755)
    git(path, "add", "run.sh")
    git(path, "commit", "--quiet", "-m", "Add run.sh")
    feature = git(path, "rev-parse", "HEAD")
    git(path, "checkout", "--quiet", "main")
    return Source(path, first, main, feature)


def has_object(repo: Path, sha: str) -> bool:
    done = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", sha], env=GIT_ENV)
    return done.returncode == 0


def loose_and_packed(git_dir: Path) -> list[str]:
    objects = git_dir / "objects"
    return sorted(
        str(p.relative_to(objects))
        for p in objects.rglob("*")
        if p.is_file() and p.parent.name != "info"
    )


async def test_import_serves_only_the_chosen_ref(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi, source: Source
) -> None:
    created = sandbox.import_repository(IMPORTED, source.path, installation_id=INSTALLATION_ID)
    assert created == {"refs/heads/main": source.main}
    assert sandbox.store.list_refs(IMPORTED) == created
    standin = sandbox.store.path(IMPORTED)
    assert (standin / "objects/info/alternates").read_text().strip() == str(
        source.path / ".git/objects"
    )
    assert loose_and_packed(standin) == []  # borrowed, not copied

    ref = await gh.getitem(f"/repos/{IMPORTED}/git/ref/heads/main")
    assert ref["object"]["sha"] == source.main
    assert (await raw("GET", f"/repos/{IMPORTED}/git/ref/heads/feature")).status == 404
    assert (await gh.getitem(f"/repos/{IMPORTED}"))["default_branch"] == "main"
    commits = await gh.getitem(f"/repos/{IMPORTED}/commits?sha=main")
    assert [c["commit"]["message"] for c in commits] == ["Second\n", "First\n"]
    assert commits[0]["commit"]["author"]["name"] == "Grace Hopper"
    readme = await gh.getitem(f"/repos/{IMPORTED}/contents/README.md")
    assert readme["sha"] == git(source.path, "rev-parse", "main:README.md")
    tree = await gh.getitem(f"/repos/{IMPORTED}/git/trees/main?recursive=1")
    assert {e["path"] for e in tree["tree"]} == {"README.md", "src", "src/app.py"}
    assert sandbox.violations == []


async def test_import_maps_names_and_compares(
    sandbox: GitHubSandbox, gh: GitHubAPI, source: Source
) -> None:
    created = sandbox.import_repository(
        IMPORTED,
        str(source.path / ".git"),
        refs={"main": "main", "feature": "topic", source.first: "refs/tags/v0"},
        installation_id=INSTALLATION_ID,
    )
    assert created == {
        "refs/heads/main": source.main,
        "refs/heads/topic": source.feature,
        "refs/tags/v0": source.first,
    }
    compare = await gh.getitem(f"/repos/{IMPORTED}/compare/main...topic")
    assert (compare["status"], compare["ahead_by"], compare["behind_by"]) == ("ahead", 1, 0)
    assert [c["sha"] for c in compare["commits"]] == [source.feature]
    assert [(f["filename"], f["status"]) for f in compare["files"]] == [("run.sh", "added")]
    older = await gh.getitem(f"/repos/{IMPORTED}/compare/v0...main")
    assert older["ahead_by"] == 1
    tree = await gh.getitem(f"/repos/{IMPORTED}/git/trees/topic")
    assert {e["path"]: e["mode"] for e in tree["tree"]}["run.sh"] == "100755"
    assert sandbox.violations == []


async def test_writes_land_in_the_stand_in_never_in_the_source(
    sandbox: GitHubSandbox, gh: GitHubAPI, source: Source
) -> None:
    source_git = source.path / ".git"
    objects_before = loose_and_packed(source_git)
    refs_before = git(source.path, "for-each-ref")
    sandbox.import_repository(IMPORTED, source.path, installation_id=INSTALLATION_ID)

    # The bot's one commit through the Git Data API, on a branch of its own.
    blob = await gh.post(
        f"/repos/{IMPORTED}/git/blobs", data={"content": "print(3)\n", "encoding": "utf-8"}
    )
    base = await gh.getitem(f"/repos/{IMPORTED}/git/commits/{source.main}")
    entry = {"path": "src/app.py", "mode": "100644", "type": "blob", "sha": blob["sha"]}
    tree = await gh.post(
        f"/repos/{IMPORTED}/git/trees", data={"base_tree": base["tree"]["sha"], "tree": [entry]}
    )
    commit = await gh.post(
        f"/repos/{IMPORTED}/git/commits",
        data={"message": "bump", "tree": tree["sha"], "parents": [source.main]},
    )
    await gh.post(
        f"/repos/{IMPORTED}/git/refs",
        data={"ref": "refs/heads/followup-bot/x", "sha": commit["sha"]},
    )
    sandbox.commit(IMPORTED, {"NOTES.md": "by hand\n"}, "Notes")

    assert sandbox.head(IMPORTED, "followup-bot/x") == commit["sha"]
    assert sandbox.read_file(IMPORTED, "followup-bot/x", "src/app.py") == "print(3)\n"
    assert sandbox.read_file(IMPORTED, "main", "NOTES.md") == "by hand\n"
    assert loose_and_packed(sandbox.store.path(IMPORTED)) != []
    assert loose_and_packed(source_git) == objects_before
    assert git(source.path, "for-each-ref") == refs_before
    assert not has_object(source.path, commit["sha"])
    assert sandbox.violations == []


async def test_replaying_history_emits_the_pushes(
    sandbox: GitHubSandbox, receiver: Receiver, source: Source
) -> None:
    sandbox.import_repository(
        IMPORTED, source.path, refs={source.first: "main"}, installation_id=INSTALLATION_ID
    )
    await sandbox.flush()
    assert receiver.received == []  # importing is not a push
    for sha in git(source.path, "rev-list", "--reverse", f"{source.first}..feature").split():
        sandbox.set_ref(IMPORTED, "main", sha)
    await sandbox.flush()
    pushes = [r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "push"]
    assert [(p["before"], p["after"]) for p in pushes] == [
        (source.first, source.main),
        (source.main, source.feature),
    ]
    assert [c["message"] for p in pushes for c in p["commits"]] == ["Second\n", "Add run.sh\n"]


def test_import_refuses_with_the_reason(
    sandbox: GitHubSandbox, source: Source, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    cases: list[tuple[Path, dict[str, str] | tuple[str, ...], str]] = [
        (plain, ("main",), r"plain: not a git repository"),
        (source.path / "src", ("main",), r"src: not a git repository"),  # no walking up
        (tmp_path / "absent", ("main",), r"absent: no such directory"),
        (
            source.path,
            ("nope",),
            r"no branch, tag or commit 'nope' there \(branches: feature, main\)",
        ),
        (source.path, (source.first,), r"is a commit, not a ref; name the branch to create"),
        (source.path, {"main": "x", "feature": "x"}, r"refs/heads/x is asked for twice"),
        (source.path, ("refs/tags/none",), r"no branch, tag or commit 'refs/tags/none'"),
    ]
    for path, refs, message in cases:
        with pytest.raises(ValueError, match=message):
            sandbox.import_repository(IMPORTED, path, refs=refs)
    with pytest.raises(ValueError, match=r"default branch 'dev' is not among .*\['main'\]"):
        sandbox.import_repository(IMPORTED, source.path, default_branch="dev")
    assert IMPORTED not in sandbox.repos
    assert not sandbox.store.path(IMPORTED).exists()  # nothing half made

    sandbox.import_repository(IMPORTED, source.path, refs="feature")
    assert sandbox.repo(IMPORTED).default_branch == "feature"
    with pytest.raises(ValueError, match="acme/imported already exists"):
        sandbox.import_repository(IMPORTED, source.path)
