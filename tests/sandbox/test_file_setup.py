"""File setup (create_repo, commit): bytes and modes, many files in a fixed number of processes."""

from __future__ import annotations

import base64
import subprocess
from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.git_files import GitFile
from sandbox.github_server import GitHubSandbox

from .helpers import INSTALLATION_ID

SETUP = "acme/setup"
BINARY = bytes(range(256)) * 3


async def tree_modes(gh: GitHubAPI, full_name: str, ref: str) -> dict[str, str]:
    tree = await gh.getitem(f"/repos/{full_name}/git/trees/{ref}?recursive=1")
    return {entry["path"]: entry["mode"] for entry in tree["tree"]}


async def test_bytes_and_modes_round_trip(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    sandbox.create_repo(
        SETUP,
        files={
            "README.md": "héllo\n",
            "data/blob.bin": BINARY,
            "bin/run.sh": GitFile.executable("#!/bin/sh\necho hi\n"),
            "run": GitFile.symlink("bin/run.sh"),
            "with space.txt": "a\n",
            '"quoted"\nname': "b\n",
            "ünï/cödé.txt": "c\n",
        },
        installation_id=INSTALLATION_ID,
    )
    assert await tree_modes(gh, SETUP, "main") == {
        "README.md": "100644",
        "data": "040000",
        "data/blob.bin": "100644",
        "bin": "040000",
        "bin/run.sh": "100755",
        "run": "120000",
        "with space.txt": "100644",
        '"quoted"\nname': "100644",
        "ünï": "040000",
        "ünï/cödé.txt": "100644",
    }
    content = await gh.getitem(f"/repos/{SETUP}/contents/data/blob.bin")
    assert base64.b64decode(content["content"]) == BINARY
    assert content["size"] == len(BINARY)
    text = await gh.getitem(f"/repos/{SETUP}/contents/README.md")
    assert base64.b64decode(text["content"]).decode() == "héllo\n"
    link = sandbox.store.file_at(SETUP, sandbox.head(SETUP), "run")
    assert link is not None
    assert sandbox.store.read_blob(SETUP, link[1]) == b"bin/run.sh"
    assert sandbox.violations == []


async def test_commit_changes_modes_and_deletes_files_and_directories(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sandbox.create_repo(
        SETUP,
        files={"tool": "x\n", "docs/a.md": "a\n", "docs/deep/b.md": "b\n", "keep.txt": "k\n"},
        installation_id=INSTALLATION_ID,
    )
    sandbox.commit(
        SETUP,
        {"tool": GitFile.executable(b"x\n"), "docs": None, "gone.txt": None, "docs/new.md": "n\n"},
        "Rework",
    )
    assert await tree_modes(gh, SETUP, "main") == {
        "tool": "100755",
        "keep.txt": "100644",
        "docs": "040000",
        "docs/new.md": "100644",
    }
    # A file where a directory was, and a directory where a file was.
    sandbox.commit(SETUP, {"docs": "now a file\n", "keep.txt/inner": b"\x00"}, "Swap")
    assert await tree_modes(gh, SETUP, "main") == {
        "tool": "100755",
        "docs": "100644",
        "keep.txt": "040000",
        "keep.txt/inner": "100644",
    }
    assert sandbox.violations == []


def test_a_file_mode_must_be_a_file_mode() -> None:
    with pytest.raises(ValueError, match="file mode '040000' is not one of 100644, 100755"):
        GitFile(b"", "040000")


def count_git_processes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_run = subprocess.run

    def counting(args: list[str], **kwargs: Any) -> Any:
        calls.append(args[3] if args[1] == "--git-dir" else args[1])
        return real_run(args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)  # what gitstore calls for every git
    return calls


async def test_many_files_take_one_git_process_more_than_a_few(
    sandbox: GitHubSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_git_processes(monkeypatch)
    few = {f"few/{i}.txt": f"{i}\n" for i in range(3)}
    sandbox.create_repo("acme/few", files=few, installation_id=INSTALLATION_ID)
    few_calls = list(calls)
    calls.clear()
    many = {f"d{i % 7}/s{i % 5}/f{i}.txt": f"line {i}\n" for i in range(1500)}
    sandbox.create_repo("acme/many", files=many, installation_id=INSTALLATION_ID)
    # A few files are written in this process (git_tree_edit); many go to one fast-import,
    # not to a process per file.
    assert "fast-import" not in few_calls
    assert sorted(calls) == sorted([*few_calls, "fast-import"])
    assert "hash-object" not in calls

    listed = sandbox.store.ls_tree("acme/many", sandbox.head("acme/many"), recursive=True)
    assert {e.path for e in listed if e.type == "blob"} == set(many)
    assert sandbox.read_file("acme/many", "main", "d3/s3/f1228.txt") == "line 1228\n"

    calls.clear()
    sandbox.commit("acme/many", {f"d0/s0/f{i}.txt": None for i in range(0, 1500, 35)}, "Prune")
    assert "fast-import" not in calls  # no new file: the tree is edited in this process
    assert "d0/s0" not in {
        e.path for e in sandbox.store.ls_tree("acme/many", "main", recursive=True)
    }
