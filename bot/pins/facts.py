"""What one pin's sync reads before it decides anything.

``BumpScope`` is the repository's scope plus the default branch head the sync
works against; ``read_facts`` reads the upstream head, the bump branch's PRs
and the pinned value (or the reason there is nothing to decide on); the
compare and commit listings of upstream are read here too. After an upstream push
the head comes off the compare of the pinned value with the branch (``compared``).
A sync of several pins reads all their bump branches' PRs in one GraphQL query first
(``prefetch_pulls``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.config.models import PinConfig
from bot.context.scope import RepoScope
from bot.core import delivery_memo
from bot.core.delivery_memo import memoized
from bot.edit.cmake_pin import PinError, read_pin
from bot.github import changes
from bot.github.changes import BranchHead, Repo
from bot.github.pull_states import pulls_by_branch
from bot.pins import compared
from bot.pins import text as bump_text
from bot.pins.state import Outcome, PinResult, PinState
from bot.pins.tags import TagChoice, choose_tag, list_tags

UPSTREAM_HEAD = "upstream-head"
COMPARED = "compared"
FILE_AT = "file-at"
BUMP_PULLS = "bump-pulls"
REASON_NO_UPSTREAM_BRANCH = "upstream branch {upstream}@{branch} was not found"
REASON_NO_PIN_FILE = "{file} does not exist on {base}"
REASON_OTHER_REPOSITORY = (
    "{file} fetches {repository}, not the configured upstream {upstream}; "
    "the bot will not pin one repository's commit for another"
)


@dataclass(frozen=True, kw_only=True)
class BumpScope(RepoScope):
    """A repository's scope plus the default branch head one sync works against."""

    base: BranchHead
    # Puts a bump's recorded allowlist prunes back on top of its rebuilt commit. Handed in
    # by whoever runs the sync (the allowlist feature makes it): pins never reach into
    # the allowlist's I/O. None: the prunes are dropped with the old commit.
    replay_prunes: PruneReplay | None = None
    # An upstream push: every pin on its branch compares with the new head anyway, so
    # the head is read off that compare (``pinned...branch``) instead of a ref read.
    head_by_compare: bool = False


# (scope, the new bump commit, the recorded prunes by pattern, the pin, the commit's
# trailers, the base the file is read at) -> the prune commit on top, or None when none
# of the prunes still applies.
PruneReplay = Callable[
    [RepoScope, BranchHead, Mapping[str, Sequence[str]], str, str | None, str],
    Awaitable[BranchHead | None],
]


@dataclass(frozen=True)
class PinFacts:
    """What one sync reads before deciding anything."""

    head: str  # upstream branch head, or for a tag pin the newest tag
    pulls: list[dict[str, Any]]  # PRs of the bump branch, newest first
    text: str  # the pin file on the base
    pinned: str  # the value pinned there
    tags: TagChoice | None = None  # a tag pin's upstream tags and their commits
    companions: Mapping[str, bytes | None] = field(default_factory=dict)  # also: files
    comparison: Mapping[str, Any] | None = None  # pinned...head, when read with the head

    @property
    def open_pr(self) -> dict[str, Any] | None:
        return next((pr for pr in self.pulls if pr["state"] == "open"), None)


@dataclass(frozen=True)
class _Pinned:
    text: str  # the pin file on the base
    value: str  # the value pinned there


@dataclass(frozen=True)
class _Upstream:
    value: str | dict[str, str]  # a branch's head, or a tag pin's tags and their commits
    comparison: Mapping[str, Any] | None = None  # pinned...head, when read off a compare


async def read_facts(ctx: BumpScope, pin: PinConfig) -> PinFacts | PinResult:
    (pinned, upstream), pulls, companions = await asyncio.gather(
        _pinned_and_upstream(ctx, pin), bump_pulls(ctx, pin), _read_companions(ctx, pin)
    )
    if isinstance(upstream, PinResult):
        return upstream
    if isinstance(pinned, PinResult):
        return pinned
    if isinstance(upstream.value, str):
        return PinFacts(
            upstream.value,
            pulls,
            pinned.text,
            pinned.value,
            companions=companions,
            comparison=upstream.comparison,
        )
    choice = choose_tag(pin, pinned.value, upstream.value)
    if isinstance(choice, str):
        return PinResult(pin.name, Outcome.FAILED, choice)
    return PinFacts(choice.tag, pulls, pinned.text, pinned.value, choice, companions)


async def _pinned_and_upstream(
    ctx: BumpScope, pin: PinConfig
) -> tuple[_Pinned | PinResult, _Upstream | PinResult]:
    """The pinned value and upstream's side: read side by side, or (an upstream push)
    upstream's head off the compare with the pinned value, so after it."""
    if not (ctx.head_by_compare and pin.track == "branch"):
        pinned, upstream = await asyncio.gather(_read_pinned(ctx, pin), _upstream(ctx, pin))
        return pinned, upstream
    pinned = await _read_pinned(ctx, pin)
    if isinstance(pinned, PinResult):
        return pinned, _Upstream("")  # nothing to compare with
    return pinned, await _upstream_by_compare(ctx, pin, pinned.value)


async def _read_pinned(ctx: BumpScope, pin: PinConfig) -> _Pinned | PinResult:
    """The pin file on the base and the value pinned in it (or why there is none)."""
    raw = await file_at_base(ctx, pin.file)
    if raw is None:
        reason = REASON_NO_PIN_FILE.format(file=pin.file, base=ctx.base.name)
        return PinResult(pin.name, Outcome.FAILED, reason)
    text = raw.decode("utf-8")
    try:
        found = await ctx.blocking.run(read_pin, text, pin.dependency, filename=pin.file)
    except PinError as exc:
        return PinResult(pin.name, Outcome.FAILED, str(exc))
    if found.repository is not None and not same_repository(found.repository, pin.upstream):
        reason = REASON_OTHER_REPOSITORY.format(
            file=pin.file, repository=found.repository, upstream=pin.upstream
        )
        return PinResult(pin.name, Outcome.FAILED, reason)
    return _Pinned(text, found.value)


async def _upstream(ctx: BumpScope, pin: PinConfig) -> _Upstream | PinResult:
    """A tag pin's tags, or a branch pin's head from a ref read."""
    if pin.track == "tags":
        return _Upstream(await list_tags(ctx.gh, Repo.parse(pin.upstream)))
    head = await upstream_head(ctx, pin)
    if head is None:
        reason = REASON_NO_UPSTREAM_BRANCH.format(upstream=pin.upstream, branch=pin.branch)
        return PinResult(pin.name, Outcome.FAILED, reason)
    return _Upstream(head)


async def _upstream_by_compare(
    ctx: BumpScope, pin: PinConfig, pinned: str
) -> _Upstream | PinResult:
    """The head read off ``pinned...branch``; where that compare does not tell the head
    (404, or more than 250 commits), a ref read does, as on a tick."""
    upstream = Repo.parse(pin.upstream)
    key = (COMPARED, upstream.full_name.casefold(), pinned, pin.branch)
    comparison = await memoized(key, lambda: compare(ctx.gh, upstream, pinned, pin.branch))
    head = compared.head_of(comparison) if comparison is not None else None
    if comparison is None or head is None:
        return await _upstream(ctx, pin)
    return _Upstream(head, compared.pinned_to(comparison, pinned, head))


async def _read_companions(ctx: BumpScope, pin: PinConfig) -> dict[str, bytes | None]:
    """The ``also:`` files on the base, each read once (None: not there)."""
    files = list(dict.fromkeys(companion.file for companion in pin.also))
    raws = await asyncio.gather(*(file_at_base(ctx, file) for file in files))
    return dict(zip(files, raws, strict=True))


def bump_pulls_key(repo: Repo, pin: PinConfig) -> tuple[str, str, str]:
    return (BUMP_PULLS, repo.full_name.casefold(), bump_text.bump_branch(pin.name))


async def bump_pulls(ctx: BumpScope, pin: PinConfig) -> list[dict[str, Any]]:
    """The PRs of the pin's bump branch, newest first: the sync's prefetched answer, else
    (one pin alone, or outside a delivery) its own REST listing."""
    branch = bump_text.bump_branch(pin.name)
    key = bump_pulls_key(ctx.repo, pin)
    return await memoized(key, lambda: changes.pulls_for_branch(ctx.gh, ctx.repo, branch))


async def prefetch_pulls(ctx: BumpScope, pins: Sequence[PinConfig]) -> None:
    """Read the bump-branch PRs of ``pins`` in one GraphQL query, kept for this delivery.

    Only for two pins or more: one branch's REST listing is as many requests, and its
    304 (when nothing changed) costs nothing, where a query costs a GraphQL point. A
    failed query raises, so the delivery is retried (an empty answer would open
    duplicate PRs). Each pin's sync forgets its answer when done (``forget_pulls``).
    """
    if not delivery_memo.active():
        return  # nowhere to keep the answer: each pin reads its own
    missing = [pin for pin in pins if not delivery_memo.known(bump_pulls_key(ctx.repo, pin))]
    if len(missing) < 2:
        return
    branches = [bump_text.bump_branch(pin.name) for pin in missing]
    answer = await pulls_by_branch(ctx.gh, ctx.repo, branches)
    for pin, branch in zip(missing, branches, strict=True):
        delivery_memo.remember(bump_pulls_key(ctx.repo, pin), answer[branch])


def forget_pulls(ctx: BumpScope, pin: PinConfig) -> None:
    """Drop the pin's PR list: its sync may have opened, closed, retitled or moved its PR."""
    delivery_memo.forget(bump_pulls_key(ctx.repo, pin))


async def upstream_head(ctx: BumpScope, pin: PinConfig) -> str | None:
    """The head of the pin's upstream branch, read once per delivery however many pins
    follow it (a reconcile tick of 50 pins on one upstream reads it once)."""
    upstream = Repo.parse(pin.upstream)
    key = (UPSTREAM_HEAD, upstream.full_name.casefold(), pin.branch)
    return await memoized(key, lambda: changes.ref_sha(ctx.gh, upstream, pin.branch))


async def file_at_base(ctx: BumpScope, path: str) -> bytes | None:
    """A file of the base commit: a commit never changes, so it is read once and kept in
    the services' short-lived cache (a push that moves no pin reads no pin file)."""
    key = (FILE_AT, ctx.repo.full_name, path, ctx.base.sha)
    if key not in ctx.cache:
        ctx.cache[key] = await changes.read_file(ctx.gh, ctx.repo, path, ctx.base.sha)
    found: bytes | None = ctx.cache[key]
    return found


def same_repository(git_repository: str, upstream: str) -> bool:
    """Whether a ``GIT_REPOSITORY`` URL names ``owner/name`` (any host, with or without
    ``.git``); a value the bot cannot read as a URL (a ``${VAR}``) is not contradicted."""
    value = git_repository.strip()
    if "${" in value:
        return True
    path = value.removesuffix("/").removesuffix(".git")
    path = path.split(":", 1)[-1] if path.startswith("git@") else path
    return "/".join(path.split("/")[-2:]).lower() == upstream.lower()


def target_of(state: PinState, head: str) -> str:
    """Upstream's head, unless a maintainer chose a commit (`@bot bump PIN --to SHA`) and
    upstream has not moved since (a choice upstream moved past is forgotten)."""
    target = chosen_target(state, head)
    if target is None:
        state.extra.pop("manual", None)
        return head
    return target


def chosen_target(state: PinState, head: str) -> str | None:
    """A maintainer's chosen target while upstream's head is the one it was chosen at."""
    manual = state.extra.get("manual")
    if isinstance(manual, dict) and manual.get("while_head") == head:
        return str(manual["target"])
    return None


async def compare(
    gh: GitHubAPI, upstream: Repo, base: str, head: str, *, page: tuple[int, int] | None = None
) -> dict[str, Any] | None:
    """Upstream's compare of ``base...head`` (None: GitHub does not know one of them).
    Either may be a branch name, slashes and all (``release/v1``), as on GitHub's web.
    With ``page`` (its number and size), that page of the range's commits."""
    basehead = f"{quote(base, safe='/')}...{quote(head, safe='/')}"
    paging = {} if page is None else {"page": str(page[0]), "per_page": str(page[1])}
    try:
        data: dict[str, Any] = await gh.getitem(
            "/repos/{owner}/{repo}/compare/{+basehead}{?per_page,page}",
            url_vars=upstream.vars(basehead=basehead, **paging),
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise
    return data


async def newest_commits(
    ctx: BumpScope, upstream: Repo, base: str, target: str, comparison: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The commits the PR body lists, in the compare's order (oldest first), ending at
    ``target``: all of ``base...target``, or past the 250 an unpaged compare lists, the
    newest ``MAX_LISTED_COMMITS`` of the range, read off its last page (or two).

    Paging the compare, not listing the commits of the target: that list walks all the
    target reaches by date, so a long-lived branch merged since the pin (old dates, new
    commits) would lose its commits to ones the pin already had.
    """
    listed: list[dict[str, Any]] = list(comparison.get("commits") or [])
    total = int(comparison.get("total_commits") or 0)
    if total <= len(listed):
        return listed
    want = bump_text.MAX_LISTED_COMMITS
    plan = compared.newest_pages(total, want)
    answers = await asyncio.gather(
        *(
            compare(ctx.gh, upstream, base, target, page=(page, plan.per_page))
            for page in plan.pages
        )
    )
    paged = [commit for answer in answers for commit in (answer or {}).get("commits") or []]
    return paged[-want:]
