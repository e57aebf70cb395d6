"""Serving an existing local git repository through the GitHub stand-in, without a copy.

``plan_import`` checks the source and resolves the refs asked for, writing nothing;
``link`` then creates the stand-in's repository, borrowing the source's object
directory through ``objects/info/alternates``. Whatever git writes afterwards lands
in the stand-in, never in the source.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox.gitstore import GitStore


@dataclass(frozen=True)
class ImportPlan:
    """What importing an existing repository will serve: its object directory and the refs
    to create in the stand-in (full ref name → object), in the order asked."""

    objects: Path
    shallow: Path | None
    refs: dict[str, str]

    def branches(self) -> list[str]:
        return [
            ref.removeprefix("refs/heads/") for ref in self.refs if ref.startswith("refs/heads/")
        ]


def plan_import(
    store: GitStore, source: Path, wanted: Sequence[tuple[str, str | None]]
) -> ImportPlan:
    """Check ``source`` and resolve each ``(name, target)`` in it; ValueError says why not.

    ``name`` is a branch, tag, full ref or commit of the source; ``target`` the ref to
    create (a short name is a branch), or None for the same ref (a remote-tracking
    ``origin/x`` becomes branch ``x``). Nothing is written: a refused import leaves
    no half-made stand-in behind.
    """
    git_dir = _source_git_dir(store, source)
    out = (
        store.run(
            git_dir,
            "rev-parse",
            "--show-object-format",
            "--git-path",
            "objects",
            "--git-path",
            "shallow",
        )
        .stdout.decode()
        .splitlines()
    )
    object_format, objects, shallow = out[0], Path(out[1]), Path(out[2])
    if object_format != "sha1":
        # The stand-in's repositories are SHA-1; alternates cannot mix object formats.
        raise ValueError(f"cannot import {source}: its objects are {object_format}, not sha1")
    refs: dict[str, str] = {}
    for name, target in wanted:
        ref, sha = _source_ref(store, source, git_dir, name, target)
        if ref in refs:
            raise ValueError(f"cannot import {source}: {ref} is asked for twice")
        refs[ref] = sha
    return ImportPlan(objects, shallow if shallow.is_file() else None, refs)


def link(store: GitStore, full_name: str, plan: ImportPlan, default_branch: str) -> None:
    """A new stand-in serving ``plan``: the source's object directory is borrowed through
    ``objects/info/alternates`` (nothing copied), the refs are written in one process,
    and whatever git writes afterwards lands here, never in the source."""
    store.init(full_name, default_branch)
    path = store.path(full_name)
    try:
        info = path / "objects" / "info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "alternates").write_text(f"{plan.objects}\n")
        if plan.shallow is not None:
            # Without the source's shallow boundary a history walk hits missing parents.
            shutil.copyfile(plan.shallow, path / "shallow")
        commands = "".join(f"create {ref} {sha}\n" for ref, sha in plan.refs.items())
        store.run(path, "update-ref", "--stdin", stdin=commands.encode())
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def _source_git_dir(store: GitStore, source: Path) -> Path:
    path = Path(os.path.abspath(source.expanduser()))
    if not path.is_dir():
        raise ValueError(f"cannot import {source}: no such directory")
    # An explicit --git-dir: git never walks up into a parent repository, and a work
    # tree's .git (a directory, or a file for a linked work tree) is found here.
    candidate = path / ".git" if (path / ".git").exists() else path
    proc = store.run(candidate, "rev-parse", "--absolute-git-dir", ok_codes=(0, 128))
    if proc.returncode != 0:
        raise ValueError(
            f"cannot import {source}: not a git repository "
            "(neither a work tree with a .git nor a git directory)"
        )
    return Path(proc.stdout.decode().strip())


def _source_ref(
    store: GitStore, source: Path, git_dir: Path, name: str, target: str | None
) -> tuple[str, str]:
    """``(ref to create, object it points at)`` for ``name`` of the source."""
    commit = (
        _source_rev(store, git_dir, f"{name}^{{commit}}") if name[:1] not in ("", "-") else None
    )
    if commit is None:
        branches = (
            store.run(
                git_dir,
                "for-each-ref",
                "--count=10",
                "--format=%(refname:short)",
                "refs/heads/",
            )
            .stdout.decode()
            .split()
        )
        raise ValueError(
            f"cannot import {source}: no branch, tag or commit {name!r} there "
            f"(branches: {', '.join(branches) or 'none'})"
        )
    full = _source_rev(store, git_dir, "--symbolic-full-name", name)
    if target is not None:
        ref = target if target.startswith("refs/") else f"refs/heads/{target}"
    elif full is None:
        raise ValueError(
            f"cannot import {source}: {name!r} is a commit, not a ref; "
            f"name the branch to create for it, e.g. refs={{{name!r}: 'main'}}"
        )
    elif full.startswith("refs/remotes/"):
        ref = "refs/heads/" + full.split("/", 3)[3]
    else:
        ref = full
    # Branches must point at commits; other refs keep what they point at (a tag object).
    value = commit if ref.startswith("refs/heads/") else _source_rev(store, git_dir, name)
    return ref, value or commit


def _source_rev(store: GitStore, git_dir: Path, *args: str) -> str | None:
    proc = store.run(git_dir, "rev-parse", "--verify", "--quiet", *args, ok_codes=(0, 1, 128))
    return (proc.stdout.decode().strip() or None) if proc.returncode == 0 else None
