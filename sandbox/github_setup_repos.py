"""Setting up the GitHub stand-in's repositories, as tests and the demo do.

Synchronous calls (git runs in the calling thread) that stand for what happens
outside the bot: a repository is created or imported, a developer commits and
pushes, an admin grants a permission or protects a branch. Each emits the
webhooks GitHub would send for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sandbox import git_import
from sandbox.git_files import FileContent
from sandbox.git_objects import ZERO_SHA, Identity
from sandbox.github_core import GitHubCore
from sandbox.github_state import PERMISSION_LEVELS, Installation, Repo


class RepoSetup(GitHubCore):
    def create_repo(
        self,
        full_name: str,
        *,
        files: Mapping[str, FileContent] | None = None,
        default_branch: str = "main",
        installation_id: int | None = None,
        message: str = "Initial commit",
        private: bool = False,
        allow_auto_merge: bool = False,
    ) -> str:
        """A repository with one commit; ``installation_id`` None = the App is not installed.

        Any installation token can read a public repository (as on GitHub); only the
        installation's own token can write to it or see it at all when private. ``files``
        as in ``commit``.
        """
        self.store.init(full_name, default_branch)
        self._add_repo(full_name, default_branch, installation_id, private, allow_auto_merge)
        return self.commit(full_name, dict(files or {}), message, branch=default_branch)

    def import_repository(
        self,
        full_name: str,
        source: Path | str,
        *,
        refs: str | Sequence[str] | Mapping[str, str] = ("main",),
        installation_id: int | None = None,
        default_branch: str | None = None,
        private: bool = False,
        allow_auto_merge: bool = False,
    ) -> dict[str, str]:
        """Serve the existing local git repository ``source`` (a work tree or a git directory)
        as ``full_name``, and return the refs created (full name → sha).

        Nothing is copied: the stand-in borrows the source's object directory through
        ``objects/info/alternates``, so importing a large history takes a few git processes.
        Only the chosen ``refs`` exist in the stand-in: names of the source (a branch, tag,
        full ref, or ``origin/x`` which becomes branch ``x``), or a mapping from a name or
        commit of the source to the ref to create (a short name is a branch), e.g.
        ``{"v1.0": "main"}`` to start ``main`` at an old release and replay from there with
        ``set_ref``/``commit``. ``default_branch`` defaults to the first branch imported.

        Afterwards it is served like a created repository; everything written to it (the
        bot's blobs, trees, commits, refs) lands in the stand-in, never in the source. The
        source must stay where it is, and a ``git gc --prune`` there may drop objects the
        stand-in still uses. Any of the source's objects is readable by sha, imported ref or
        not. The import emits no webhook: the repository has always been there. Raises
        ValueError (with the reason) for a path that is not a git repository, a name the
        source does not have, or a ``full_name`` already taken.
        """
        if full_name in self.repos:
            raise ValueError(f"{full_name} already exists in the sandbox")
        wanted: list[tuple[str, str | None]]
        if isinstance(refs, Mapping):
            wanted = list(refs.items())
        else:
            wanted = [(refs, None)] if isinstance(refs, str) else [(name, None) for name in refs]
        plan = git_import.plan_import(self.store, Path(source), wanted)
        branches = plan.branches()
        default = default_branch or (branches[0] if branches else None)
        if default is None or default not in branches:
            raise ValueError(
                f"the default branch {default!r} is not among the imported branches {branches}"
            )
        git_import.link(self.store, full_name, plan, default)
        self._add_repo(full_name, default, installation_id, private, allow_auto_merge)
        return dict(plan.refs)

    def _add_repo(
        self,
        full_name: str,
        default_branch: str,
        installation_id: int | None,
        private: bool,
        allow_auto_merge: bool,
    ) -> Repo:
        owner_login, name = full_name.split("/", 1)
        owner = self.user(owner_login, kind="Organization")
        now = self.clock()
        # An account has one spelling: a second repository of "nvidia" is "NVIDIA/...".
        full_name = f"{owner.login}/{name}"
        repo = Repo(full_name, self.ids(), owner, default_branch, installation_id, now, now)
        repo.private = private
        repo.allow_auto_merge = allow_auto_merge
        self.repos[full_name] = repo
        if installation_id is not None and installation_id not in self.installations:
            self.installations[installation_id] = Installation(installation_id, owner, now)
        return repo

    def commit(
        self,
        full_name: str,
        files: Mapping[str, FileContent | None],
        message: str,
        *,
        branch: str = "main",
        author: tuple[str, str] = ("Ada Lovelace", "ada@example.com"),
        when: datetime | None = None,
        pushed_by: str | None = None,
    ) -> str:
        """Commit ``files`` on ``branch`` and push it (as the owner unless ``pushed_by``).

        A value is ``str`` (UTF-8), ``bytes``, or a ``GitFile`` with a mode (executable,
        symlink); None deletes the path, a file or a whole directory. All blobs and the
        tree are written by a fixed number of git processes, however many files.
        """
        repo = self.repo(full_name)
        ref = f"refs/heads/{branch}"
        before = self.store.get_ref(full_name, ref)
        parent = before or self.store.get_ref(full_name, f"refs/heads/{repo.default_branch}")
        base_tree = self.store.read_commit(full_name, parent).tree if parent else None
        tree = self.store.write_files(full_name, base_tree, files)
        stamp = int(when.timestamp()) if when else int(self.clock())
        who = Identity(author[0], author[1], stamp)
        sha = self.store.commit_tree(full_name, tree, [parent] if parent else [], message, who, who)
        if not self.store.update_ref(full_name, ref, sha, before or ZERO_SHA):
            raise RuntimeError(f"{ref} moved while committing")
        pusher = self.user(pushed_by or repo.owner.login)
        self._ref_changed_sync(repo, ref, before or ZERO_SHA, sha, pusher)
        return sha

    def set_ref(self, full_name: str, branch: str, sha: str) -> None:
        repo = self.repo(full_name)
        ref = f"refs/heads/{branch}"
        before = self.store.get_ref(full_name, ref) or ZERO_SHA
        if not self.store.update_ref(full_name, ref, sha, None):
            raise RuntimeError(f"cannot point {ref} at {sha}")
        self._ref_changed_sync(repo, ref, before, sha, self.user(repo.owner.login))

    def head(self, full_name: str, branch: str = "main") -> str:
        sha = self.store.get_ref(full_name, f"refs/heads/{branch}")
        if sha is None:
            raise KeyError(f"{full_name} has no branch {branch}")
        return sha

    def read_file(self, full_name: str, ref: str, path: str) -> str | None:
        commit = self.store.resolve_commit(full_name, ref)
        found = self.store.file_at(full_name, commit, path) if commit else None
        if found is None or found[0] != "blob":
            return None
        return self.store.read_blob(full_name, found[1]).decode()

    def set_permission(self, full_name: str, login: str, permission: str) -> None:
        if permission not in PERMISSION_LEVELS:
            raise ValueError(f"unknown permission {permission!r}")
        self.repo(full_name).permissions[self.user(login).login] = permission

    def require_checks(self, full_name: str, branch: str, contexts: Sequence[str]) -> None:
        """Protect ``branch``: merging into it needs each context's status to be success."""
        self.repo(full_name).required_contexts[branch] = tuple(contexts)

    async def push_commit(
        self, full_name: str, files: Mapping[str, FileContent | None], message: str, **kw: Any
    ) -> str:
        """Commit like a developer pushing, and wait until its ``push`` webhook is delivered."""
        sha = self.commit(full_name, files, message, **kw)
        await self.flush()
        return sha

    def push_payload(self, full_name: str, *, ref: str, before: str, after: str) -> dict[str, Any]:
        repo = self.repo(full_name)
        pushed = self.push_details(full_name, ref, before, after)
        return self.events.push(
            repo,
            ref=ref,
            before=before,
            after=after,
            pushed=pushed,
            sender=self.user(repo.owner.login),
        )

    async def deliver(
        self, event: str, payload: Mapping[str, Any], *, delivery_id: str | None = None
    ) -> int:
        return await self.sender.deliver(event, payload, delivery_id=delivery_id)
