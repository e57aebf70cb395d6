"""Reading and editing the allowlist file of a repository through GitHub.

Shared by the allowlist follow-ups and the bump flow (which re-applies a
bump's recorded prunes when it rebuilds the branch), so it knows neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gidgethub.abc import GitHubAPI

from bot.allowlist import text as allowlist_text
from bot.config.models import AllowlistConfig
from bot.core.blocking import BlockingRunner
from bot.edit.allowlist import edit_allowlist, read_allowlist
from bot.github import changes
from bot.github.changes import BranchHead, FileEdit, Repo


@dataclass(frozen=True)
class Edit:
    remove: tuple[str, ...]
    replace: dict[str, list[str]]

    def __bool__(self) -> bool:
        return bool(self.remove or self.replace)

    def describe(self) -> str:
        return allowlist_text.describe_changes(self.remove, self.replace)


def plan_edit(prunes: Mapping[str, Sequence[str]], entries: Sequence[str]) -> Edit:
    """The edit that applies ``prunes`` (pattern → narrower, [] = delete) to what is left."""
    present = set(entries)
    remove = tuple(p for p, narrower in prunes.items() if not narrower and p in present)
    replace = {p: list(narrower) for p, narrower in prunes.items() if narrower and p in present}
    return Edit(remove, replace)


@dataclass(frozen=True)
class AllowlistFile:
    """The allowlist file of one repository, read and written through the GitHub API."""

    gh: GitHubAPI
    blocking: BlockingRunner  # parsing and formatting are CPU work: off the loop
    repo: Repo
    config: AllowlistConfig

    async def read(self, ref: str) -> str | None:
        raw = await changes.read_file(self.gh, self.repo, self.config.file, ref)
        return None if raw is None else raw.decode("utf-8")

    async def entries(self, text: str) -> tuple[str, ...]:
        found = await self.blocking.run(
            read_allowlist, text, variable=self.config.variable, filename=self.config.file
        )
        return tuple(found.entries)

    async def edited(self, text: str, edit: Edit) -> str:
        return await self.blocking.run(
            edit_allowlist,
            text,
            variable=self.config.variable,
            remove=edit.remove,
            replace=edit.replace,
            filename=self.config.file,
            line_length=self.config.line_length,
        )

    async def commit(self, head: BranchHead, text: str, message: str) -> BranchHead:
        """A commit on ``head`` with the file replaced by ``text``."""
        entries = await changes.tree_entries(
            self.gh, self.repo, [FileEdit(self.config.file, text.encode("utf-8"))]
        )
        return await changes.commit_tree(
            self.gh, self.repo, base=head, entries=entries, message=message
        )

    async def prune_commit(
        self,
        head: BranchHead,
        prunes: Mapping[str, Sequence[str]],
        pin: str,
        *,
        read_at: str,
        trailers: str | None,
    ) -> BranchHead | None:
        """A commit on ``head`` applying a bump's recorded prunes to the file as it is at
        ``read_at``, or None if none of them still apply."""
        text = await self.read(read_at)
        if text is None:
            return None
        edit = plan_edit(prunes, await self.entries(text))
        if not edit:
            return None
        message = allowlist_text.prune_message(pin, edit.describe(), trailers)
        return await self.commit(head, await self.edited(text, edit), message)
