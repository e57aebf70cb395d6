"""New repositories are copies of one ``git init``: the same files as git makes at any path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox.git_init import init_bare
from sandbox.gitstore import GitStore

ENV = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull}


def git_init(path: Path, branch: str) -> None:
    subprocess.run(
        ["git", "init", "--bare", "--quiet", "--template=", f"--initial-branch={branch}", path],
        env=ENV,
        check=True,
        capture_output=True,
    )


def files(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root``: a file's bytes, None for a directory."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("branch", ["main", "trunk"])
def test_each_repository_is_what_git_init_makes_there(tmp_path: Path, branch: str) -> None:
    for name in ("a", "b/deeper"):
        init_bare(tmp_path / "copies" / f"{name}.git", branch, ENV)
        git_init(tmp_path / "git" / f"{name}.git", branch)
        made = files(tmp_path / "copies" / f"{name}.git")
        assert made == files(tmp_path / "git" / f"{name}.git")
        assert made["HEAD"] == f"ref: refs/heads/{branch}\n".encode()


def test_a_path_in_use_is_initialised_by_git_again_and_keeps_its_objects(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "store")
    store.init("acme/app", "main")
    blob = store.hash_blob("acme/app", b"kept\n")
    store.init("acme/app", "trunk")
    # git's re-init leaves HEAD alone (it warns that --initial-branch was ignored).
    assert (store.path("acme/app") / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert store.object_type("acme/app", blob) == "blob"
    store.close()
