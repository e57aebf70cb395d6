"""File edits as one commit through GitHub's Git Data API, and branch/PR upserts.

Every function here is one or two GitHub calls with a clear idempotency story:
the branch name is deterministic, PRs are found by head branch (never by title
search), and a ref that already exists is moved rather than duplicated.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.core import metrics
from bot.core.errors import PermanentError

FILE_MODE = "100644"
DEFAULT_BOT_LOGIN = "followup-bot[bot]"
NOREPLY_DOMAIN = "users.noreply.github.com"
ERROR_NOT_A_FILE = "{repo}: {path} at {ref} is not a regular file"
ERROR_TOO_LARGE = "{repo}: {path} at {ref} is too large for the contents API"
ERROR_NOT_A_PATH = "refusing to put {path!r} in a URL: it has an empty, '.' or '..' name"


@dataclass(frozen=True)
class Repo:
    owner: str
    name: str

    @classmethod
    def parse(cls, full_name: str) -> Repo:
        owner, _, name = full_name.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"not an owner/name repository: {full_name!r}")
        return cls(owner, name)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def vars(self, **extra: str) -> dict[str, str]:
        return {"owner": self.owner, "repo": self.name, **extra}


@dataclass(frozen=True)
class BranchHead:
    name: str
    sha: str
    tree: str


@dataclass(frozen=True)
class FileEdit:
    path: str
    content: bytes


def url_path(path: str) -> str:
    """``path`` as URL path segments, for a ``{+var}`` template expansion.

    Each '/'-separated name is percent-encoded on its own (``?``, ``#``, ``%``, ``&``,
    spaces and non-ASCII become data, never query, fragment or an escape of ours) and
    the '/' between names is kept: GitHub reads a file path and ``heads/<branch>`` as
    segments. Reserved expansion keeps ``%XX`` as written, so nothing is encoded twice.
    Empty, '.' and '..' names are refused: HTTP clients fold them (even as ``%2E%2E``)
    into another endpoint before the request leaves.
    """
    names = path.split("/")
    if any(name in ("", ".", "..") for name in names):
        raise PermanentError(ERROR_NOT_A_PATH.format(path=path))
    return "/".join(quote(name, safe="") for name in names)


def _heads(branch: str) -> str:
    """The ``git/ref(s)/{+ref}`` value of a branch."""
    return url_path(f"heads/{branch}")


async def default_branch(gh: GitHubAPI, repo: Repo) -> str:
    data = await gh.getitem("/repos/{owner}/{repo}", url_vars=repo.vars())
    return str(data["default_branch"])


async def branch_head(gh: GitHubAPI, repo: Repo, branch: str) -> BranchHead:
    """The branch's head commit and its tree, in one call (repos/get-branch)."""
    data = await gh.getitem(
        "/repos/{owner}/{repo}/branches/{+branch}", url_vars=repo.vars(branch=url_path(branch))
    )
    commit = data["commit"]
    return BranchHead(name=branch, sha=commit["sha"], tree=commit["commit"]["tree"]["sha"])


async def commit_head(gh: GitHubAPI, repo: Repo, sha: str, *, name: str) -> BranchHead:
    """A commit and its tree, to build another commit on (git/get-commit)."""
    data = await gh.getitem("/repos/{owner}/{repo}/git/commits/{sha}", url_vars=repo.vars(sha=sha))
    return BranchHead(name=name, sha=str(data["sha"]), tree=str(data["tree"]["sha"]))


async def ref_sha(gh: GitHubAPI, repo: Repo, branch: str) -> str | None:
    """A branch's head sha, or None when the branch does not exist."""
    try:
        data = await gh.getitem(
            "/repos/{owner}/{repo}/git/ref/{+ref}", url_vars=repo.vars(ref=_heads(branch))
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise
    return str(data["object"]["sha"])


async def read_file(gh: GitHubAPI, repo: Repo, path: str, ref: str | None) -> bytes | None:
    """A file's bytes at ``ref`` (None: the default branch), or None when it does not exist."""
    try:
        data = await gh.getitem(
            "/repos/{owner}/{repo}/contents/{+path}{?ref}",
            url_vars=repo.vars(path=url_path(path), **({"ref": ref} if ref else {})),
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise
    where = {"repo": repo.full_name, "path": path, "ref": ref or "the default branch"}
    if not isinstance(data, dict) or data.get("type") != "file":
        raise PermanentError(ERROR_NOT_A_FILE.format(**where))
    if data.get("encoding") != "base64":
        raise PermanentError(ERROR_TOO_LARGE.format(**where))
    return base64.b64decode(data["content"])


async def tree_entries(
    gh: GitHubAPI, repo: Repo, edits: Sequence[FileEdit]
) -> list[dict[str, str]]:
    """The tree entries of ``edits``: a text file's content goes inline in the tree (GitHub
    writes its blob; one request fewer per commit), anything else is uploaded as a blob
    first (concurrently)."""

    async def one(edit: FileEdit) -> dict[str, str]:
        entry = {"path": edit.path, "mode": FILE_MODE, "type": "blob"}
        try:
            return {**entry, "content": edit.content.decode("utf-8")}
        except UnicodeDecodeError:
            pass  # bytes the JSON text of a tree cannot carry: a blob of its own
        blob = await gh.post(
            "/repos/{owner}/{repo}/git/blobs",
            url_vars=repo.vars(),
            data={"content": base64.b64encode(edit.content).decode(), "encoding": "base64"},
        )
        return {**entry, "sha": blob["sha"]}

    return list(await asyncio.gather(*(one(edit) for edit in edits)))


async def commit_tree(
    gh: GitHubAPI,
    repo: Repo,
    *,
    base: BranchHead,
    entries: Sequence[dict[str, str]],
    message: str,
) -> BranchHead:
    """A tree on top of ``base`` with ``entries``, and a commit of it (as a head of ``base``'s
    branch-to-be, so another commit can go on top)."""
    tree = await gh.post(
        "/repos/{owner}/{repo}/git/trees",
        url_vars=repo.vars(),
        data={"base_tree": base.tree, "tree": list(entries)},
    )
    commit = await gh.post(
        "/repos/{owner}/{repo}/git/commits",
        url_vars=repo.vars(),
        data={"message": message, "tree": tree["sha"], "parents": [base.sha]},
    )
    return BranchHead(name=base.name, sha=str(commit["sha"]), tree=str(tree["sha"]))


async def force_branch(gh: GitHubAPI, repo: Repo, branch: str, sha: str, *, exists: bool) -> None:
    """Point ``branch`` at ``sha``, creating it if needed.

    ``exists`` is the caller's belief; a branch left over from a closed PR makes
    the create answer 422, which is handled by moving the ref instead.
    """
    if not exists:
        try:
            await gh.post(
                "/repos/{owner}/{repo}/git/refs",
                url_vars=repo.vars(),
                data={"ref": f"refs/heads/{branch}", "sha": sha},
            )
            return
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 422:
                raise
    await gh.patch(
        "/repos/{owner}/{repo}/git/refs/{+ref}",
        url_vars=repo.vars(ref=_heads(branch)),
        data={"sha": sha, "force": True},
    )


async def advance_branch(gh: GitHubAPI, repo: Repo, branch: str, sha: str) -> None:
    """Move ``branch`` forward to ``sha``; GitHub refuses (422) if that is not a fast-forward,
    so a commit someone pushed meanwhile is never overwritten."""
    await gh.patch(
        "/repos/{owner}/{repo}/git/refs/{+ref}",
        url_vars=repo.vars(ref=_heads(branch)),
        data={"sha": sha, "force": False},
    )


async def pulls_for_branch(gh: GitHubAPI, repo: Repo, branch: str) -> list[dict[str, Any]]:
    """Every PR (open or closed) whose head is ``owner:branch``, newest first."""
    pulls = await gh.getitem(
        "/repos/{owner}/{repo}/pulls{?head,state,sort,direction,per_page}",
        url_vars=repo.vars(
            head=f"{repo.owner}:{branch}",
            state="all",
            sort="created",
            direction="desc",
            per_page="20",
        ),
    )
    return sorted(pulls, key=lambda pr: int(pr["number"]), reverse=True)


async def create_pull(
    gh: GitHubAPI, repo: Repo, *, title: str, body: str, head: str, base: str
) -> dict[str, Any]:
    pull: dict[str, Any] = await gh.post(
        "/repos/{owner}/{repo}/pulls",
        url_vars=repo.vars(),
        data={"title": title, "body": body, "head": head, "base": base},
    )
    metrics.pull_request(metrics.PR_OPENED)
    return pull


async def update_pull(gh: GitHubAPI, repo: Repo, number: int, **fields: str) -> None:
    await gh.patch(
        "/repos/{owner}/{repo}/pulls/{number}",
        url_vars=repo.vars(number=str(number)),
        data=fields,
    )
    closed = fields.get("state") == "closed"
    metrics.pull_request(metrics.PR_CLOSED if closed else metrics.PR_UPDATED)


async def comment(gh: GitHubAPI, repo: Repo, number: int, body: str) -> int:
    created = await gh.post(
        "/repos/{owner}/{repo}/issues/{number}/comments",
        url_vars=repo.vars(number=str(number)),
        data={"body": body},
    )
    return int(created["id"])


async def edit_comment(gh: GitHubAPI, repo: Repo, comment_id: int, body: str) -> None:
    """Replace a comment's body (setting it twice is harmless)."""
    await gh.patch(
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        url_vars=repo.vars(comment_id=str(comment_id)),
        data={"body": body},
    )


async def git_commit(gh: GitHubAPI, repo: Repo, sha: str) -> dict[str, Any]:
    """A commit as the Git Data API shows it: message, author, committer, tree, parents."""
    data: dict[str, Any] = await gh.getitem(
        "/repos/{owner}/{repo}/git/commits/{sha}", url_vars=repo.vars(sha=sha)
    )
    return data


def is_bot_identity(person: object, bot_login: str) -> bool:
    """Whether a git author/committer is the App's bot account.

    Commits the App makes through the Git Data API are attributed to its bot
    user: named after its login, with GitHub's no-reply address for it.
    """
    if not isinstance(person, Mapping):
        return False
    email = str(person.get("email") or "").lower()
    local, _, domain = email.partition("@")
    login = bot_login.lower()
    return domain == NOREPLY_DOMAIN and (local == login or local.endswith("+" + login))
