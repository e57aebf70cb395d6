"""Keep exactly one bump PR per pin, level-triggered.

``sync_repo`` reads the current state (config, upstream head, pinned value,
the PR on the deterministic branch) and makes only the writes needed to reach
the desired state. A push webhook and a reconcile tick both just call it, so a
missed webhook is healed by the next tick and a redelivery writes nothing.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot import bump_text, changes
from bot.allowlist_commit import AllowlistFile
from bot.blocking import BlockingRunner
from bot.changes import BranchHead, FileEdit, Repo
from bot.locks import KeyedLocks
from bot.pins import PinError, read_pin, set_pin
from bot.repo_config import (
    CONFIG_PATH,
    ConfigError,
    PinConfig,
    RepoConfig,
    parse_repo_config_bytes,
)
from bot.store import Store

log = logging.getLogger(__name__)

PinSelector = Callable[[PinConfig], bool]

STATE_KIND = "bump"
CONFIG_STATE_KIND = "config"
REPO_STATE_KIND = "repo"

REASON_NO_UPSTREAM_BRANCH = "upstream branch {upstream}@{branch} was not found"
REASON_NO_PIN_FILE = "{file} does not exist on {base}"
REASON_UNREACHABLE = (
    "pinned {value7} is not an ancestor of {upstream}@{branch} ({head7}): compare says "
    "{status}; upstream history was probably rewritten, so the bot will not guess a bump"
)
REASON_UNKNOWN_PIN = (
    "pinned {value!r} is not known to {upstream} (compare answered 404); "
    "the bot will not guess a bump"
)


class Outcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    CURRENT = "current"
    CLOSED = "closed"
    SKIPPED = "skipped"  # a human closed the PR for this very target
    HUMAN_OWNED = "human-owned"
    PAUSED = "paused"
    FAILED = "failed"  # could not decide; reason recorded, nothing written


@dataclass(frozen=True)
class PinResult:
    pin: str
    outcome: Outcome
    detail: str = ""
    pr: int | None = None


@dataclass
class PinState:
    """What the bot remembers about one pin's branch (a store document)."""

    head: str | None = None
    pending: str | None = None
    target: str | None = None
    source: str | None = None  # the pinned value the bump commit replaced
    pr: int | None = None
    human_push_notified: bool = False
    # allowlist follow-ups this bump carries: pattern → narrower patterns ([] = delete)
    prunes: dict[str, list[str]] = field(default_factory=dict)
    closed_comment_for: int | None = None
    last_result: str = ""
    last_failure: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, doc: Mapping[str, Any] | None) -> PinState:
        if not doc:
            return cls()
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(
            **{k: v for k, v in doc.items() if k in known},
            extra={k: v for k, v in doc.items() if k not in known},
        )

    def dump(self) -> dict[str, Any]:
        doc = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "extra"}
        return {**self.extra, **doc}


@dataclass(frozen=True)
class RepoContext:
    gh: GitHubAPI
    store: Store
    locks: KeyedLocks
    blocking: BlockingRunner  # parsing and editing files is CPU work: off the loop
    repo: Repo
    config: RepoConfig
    base: BranchHead
    clock: Callable[[], float]


async def load_config(
    gh: GitHubAPI, store: Store, blocking: BlockingRunner, repo: Repo
) -> RepoConfig | None:
    """The repo's config from its default branch; None (and a record) when absent or broken."""
    raw = await changes.read_file(gh, repo, CONFIG_PATH, None)
    if raw is None:
        log.info("%s has no %s; nothing to do", repo.full_name, CONFIG_PATH)
        return None
    try:
        config = await blocking.run(parse_repo_config_bytes, raw, filename=CONFIG_PATH)
    except ConfigError as exc:
        # A broken config must never crash the bot or cause writes: report it and stop.
        log.warning("config error in %s:\n%s", repo.full_name, exc)
        await store.put_state(CONFIG_STATE_KIND, repo.full_name, {"error": str(exc)})
        return None
    await store.delete_state(CONFIG_STATE_KIND, repo.full_name)
    return config


async def sync_repo(
    gh: GitHubAPI,
    store: Store,
    locks: KeyedLocks,
    blocking: BlockingRunner,
    full_name: str,
    *,
    clock: Callable[[], float],
    select: PinSelector = lambda _pin: True,
    refresh: bool = False,
) -> list[PinResult]:
    """Bring every selected pin of ``full_name`` to its desired state.

    ``refresh`` re-reads the repository's default branch (the reconcile tick
    does; a webhook uses the remembered one, saving a round trip).
    """
    repo = Repo.parse(full_name)
    config, base = await asyncio.gather(
        load_config(gh, store, blocking, repo),
        default_branch_head(gh, store, repo, refresh=refresh),
    )
    if config is None:
        return []
    pins = [pin for pin in config.pins if select(pin)]
    if not pins:
        return []
    ctx = RepoContext(gh, store, locks, blocking, repo, config, base, clock)
    return list(await asyncio.gather(*(sync_pin(ctx, pin) for pin in pins)))


async def default_branch_head(
    gh: GitHubAPI, store: Store, repo: Repo, *, refresh: bool = False
) -> BranchHead:
    """The default branch's head; the branch name is remembered between deliveries."""
    known = None if refresh else await store.get_state(REPO_STATE_KIND, repo.full_name)
    if known is not None:
        try:
            return await changes.branch_head(gh, repo, str(known["default_branch"]))
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            # The default branch was renamed since: learn the new name below.
    branch = await changes.default_branch(gh, repo)
    await store.put_state(REPO_STATE_KIND, repo.full_name, {"default_branch": branch})
    return await changes.branch_head(gh, repo, branch)


def pin_key(repo: str, pin: str) -> str:
    """The store key (and lock key) of one pin of one repository."""
    return f"{repo}#{pin}"


async def sync_pin(ctx: RepoContext, pin: PinConfig) -> PinResult:
    key = pin_key(ctx.repo.full_name, pin.name)
    async with ctx.locks.hold(key):
        state = PinState.load(await ctx.store.get_state(STATE_KIND, key))
        result = await _sync_pin_locked(ctx, pin, state)
        state.last_result = result.outcome.value
        if result.outcome is Outcome.FAILED:
            state.last_failure = result.detail
            log.warning("%s: %s", key, result.detail)
        else:
            log.info("%s: %s %s", key, result.outcome.value, result.detail)
        state.extra["updated_at"] = ctx.clock()
        await ctx.store.put_state(STATE_KIND, key, state.dump())
        return result


async def _sync_pin_locked(ctx: RepoContext, pin: PinConfig, state: PinState) -> PinResult:
    upstream = Repo.parse(pin.upstream)
    branch = bump_text.bump_branch(pin.name)
    head, pulls, raw = await asyncio.gather(
        changes.ref_sha(ctx.gh, upstream, pin.branch),
        changes.pulls_for_branch(ctx.gh, ctx.repo, branch),
        changes.read_file(ctx.gh, ctx.repo, pin.file, ctx.base.sha),
    )
    if head is None:
        reason = REASON_NO_UPSTREAM_BRANCH.format(upstream=pin.upstream, branch=pin.branch)
        return PinResult(pin.name, Outcome.FAILED, reason)
    if raw is None:
        reason = REASON_NO_PIN_FILE.format(file=pin.file, base=ctx.base.name)
        return PinResult(pin.name, Outcome.FAILED, reason)
    text = raw.decode("utf-8")
    try:
        pinned = (await ctx.blocking.run(read_pin, text, pin.dependency, filename=pin.file)).value
    except PinError as exc:
        return PinResult(pin.name, Outcome.FAILED, str(exc))
    open_pr = next((pr for pr in pulls if pr["state"] == "open"), None)
    if pin.paused:
        return PinResult(pin.name, Outcome.PAUSED, "paused in config", _number(open_pr))
    if pinned == head:
        return await _close_not_needed(ctx, pin, state, open_pr, pinned, head, current=True)

    owner = await _ownership(ctx, pin, state, open_pr)
    if open_pr is not None and owner is None:
        return await _human_owned(ctx, pin, state, open_pr, branch)
    if owner is not None and owner == head and state.source == pinned:
        return PinResult(pin.name, Outcome.UNCHANGED, f"already at {head[:7]}", _number(open_pr))
    newest = pulls[0] if pulls else None
    if open_pr is None and newest is not None and _closed_by_human_for(newest, head, state):
        detail = f"#{newest['number']} was closed without merging for {head[:7]}"
        return PinResult(pin.name, Outcome.SKIPPED, detail, int(newest["number"]))

    # Compare before any write: a pin that upstream history no longer reaches
    # must end with nothing written, not even an orphan blob.
    comparison, new_text = await asyncio.gather(
        _compare(ctx.gh, upstream, pinned, head),
        ctx.blocking.run(set_pin, text, pin.dependency, head, filename=pin.file),
    )
    if comparison is None:
        reason = REASON_UNKNOWN_PIN.format(value=pinned, upstream=pin.upstream)
        return PinResult(pin.name, Outcome.FAILED, reason)
    status = comparison["status"]
    if status == "behind":
        return await _close_not_needed(ctx, pin, state, open_pr, pinned, head, current=False)
    if status != "ahead":
        reason = REASON_UNREACHABLE.format(
            value7=pinned[:7],
            upstream=pin.upstream,
            branch=pin.branch,
            head7=head[:7],
            status=status,
        )
        return PinResult(pin.name, Outcome.FAILED, reason)

    text_out = bump_text.render(
        pin=pin.name,
        dependency=pin.dependency,
        file=pin.file,
        upstream=pin.upstream,
        branch=pin.branch,
        old=pinned,
        new=head,
        total_commits=int(comparison.get("total_commits") or 0),
        commits=bump_text.parse_compare_commits(comparison.get("commits") or []),
        compare_url=str(comparison["html_url"]),
    )
    entries = await changes.create_blobs(
        ctx.gh, ctx.repo, [FileEdit(pin.file, new_text.encode("utf-8"))]
    )
    commit = await changes.commit_tree(
        ctx.gh, ctx.repo, base=ctx.base, entries=entries, message=text_out.commit_message
    )
    if state.prunes and ctx.config.allowlist is not None:
        # The allowlist follow-ups this bump carried survive the rebuild, as their
        # own commit on top (if the entries are still there on the new base).
        file = AllowlistFile(ctx.gh, ctx.blocking, ctx.repo, ctx.config.allowlist)
        pruned = await file.prune_commit(commit, state.prunes, pin.name, read_at=ctx.base.sha)
        if pruned is not None:
            state.extra["prune_base"] = commit.sha
            commit = pruned
    sha = commit.sha
    # Record the commit before moving the ref, so a crash between the two is not
    # later mistaken for a human push.
    state.pending = sha
    await ctx.store.put_state(STATE_KIND, pin_key(ctx.repo.full_name, pin.name), state.dump())
    await changes.force_branch(ctx.gh, ctx.repo, branch, sha, exists=open_pr is not None)
    state.head, state.pending, state.target, state.source = sha, None, head, pinned
    if open_pr is not None:
        await changes.update_pull(
            ctx.gh, ctx.repo, int(open_pr["number"]), title=text_out.title, body=text_out.body
        )
        return PinResult(pin.name, Outcome.UPDATED, text_out.title, int(open_pr["number"]))
    number = await _open_pull(ctx, branch, text_out)
    state.pr, state.human_push_notified = number, False
    return PinResult(pin.name, Outcome.CREATED, text_out.title, number)


def _number(pr: Mapping[str, Any] | None) -> int | None:
    return int(pr["number"]) if pr is not None else None


async def _compare(gh: GitHubAPI, upstream: Repo, base: str, head: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = await gh.getitem(
            "/repos/{owner}/{repo}/compare/{basehead}",
            url_vars=upstream.vars(basehead=f"{base}...{head}"),
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise
    return data


async def _ownership(
    ctx: RepoContext, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any] | None
) -> str | None:
    """The upstream target of the open PR if its head is the bot's, else None."""
    if open_pr is None:
        return None
    pr_head = str(open_pr["head"]["sha"])
    if pr_head in {state.head, state.pending}:
        return state.target
    if state.head is not None:
        return None  # the bot remembers a different head: somebody else pushed
    # Nothing remembered (a new store): trust the bot's own commit trailers.
    trailers = bump_text.commit_trailers(await changes.commit_message(ctx.gh, ctx.repo, pr_head))
    if trailers.get(bump_text.TRAILER_PIN) != pin.name:
        return None
    state.head, state.target = pr_head, trailers.get(bump_text.TRAILER_TARGET)
    state.source = trailers.get(bump_text.TRAILER_FROM)
    return state.target


def _closed_by_human_for(pr: Mapping[str, Any], head: str, state: PinState) -> bool:
    if pr["state"] != "closed" or pr.get("merged_at"):
        return False
    if state.extra.get("closed_by_bot") == int(pr["number"]):
        return False
    target = bump_text.title_target(str(pr.get("title") or ""))
    return target is not None and head.startswith(target)


async def _human_owned(
    ctx: RepoContext, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any], branch: str
) -> PinResult:
    number = int(open_pr["number"])
    if not state.human_push_notified or state.pr != number:
        body = bump_text.COMMENT_HUMAN_PUSH.format(
            branch=branch, head7=str(open_pr["head"]["sha"])[:7]
        )
        state.human_push_notified, state.pr = True, number
        await ctx.store.put_state(STATE_KIND, pin_key(ctx.repo.full_name, pin.name), state.dump())
        await changes.comment(
            ctx.gh,
            ctx.repo,
            number,
            f"{body}\n\n{bump_text.MARKER_HUMAN_PUSH.format(pin=pin.name)}",
        )
    return PinResult(pin.name, Outcome.HUMAN_OWNED, "not force-pushing a human's branch", number)


async def _close_not_needed(
    ctx: RepoContext,
    pin: PinConfig,
    state: PinState,
    open_pr: Mapping[str, Any] | None,
    pinned: str,
    head: str,
    *,
    current: bool,
) -> PinResult:
    outcome = Outcome.CURRENT
    if open_pr is None:
        return PinResult(pin.name, outcome, f"pin {pinned[:7]} needs no bump")
    number = int(open_pr["number"])
    if await _ownership(ctx, pin, state, open_pr) is None and state.head is not None:
        # A human owns the branch; closing their PR is their call, not ours.
        return PinResult(pin.name, outcome, "pin current; human-owned PR left open", number)
    if state.closed_comment_for != number:
        body = bump_text.COMMENT_ALREADY_CURRENT.format(
            file=pin.file,
            dependency=pin.dependency,
            value7=pinned[:7],
            relation=bump_text.RELATION_CURRENT if current else bump_text.RELATION_AHEAD,
            upstream=pin.upstream,
            branch=pin.branch,
            head7=head[:7],
        )
        state.closed_comment_for = number
        await ctx.store.put_state(STATE_KIND, pin_key(ctx.repo.full_name, pin.name), state.dump())
        marker = bump_text.MARKER_ALREADY_CURRENT.format(pin=pin.name)
        await changes.comment(ctx.gh, ctx.repo, number, f"{body}\n\n{marker}")
    await changes.update_pull(ctx.gh, ctx.repo, number, state="closed")
    state.extra["closed_by_bot"] = number
    return PinResult(pin.name, Outcome.CLOSED, f"pin {pinned[:7]} needs no bump", number)


async def _open_pull(ctx: RepoContext, branch: str, text: bump_text.BumpText) -> int:
    try:
        pull = await changes.create_pull(
            ctx.gh, ctx.repo, title=text.title, body=text.body, head=branch, base=ctx.base.name
        )
    except gidgethub.BadRequest as exc:
        # 422: a PR for this head appeared since we listed (a concurrent run or a
        # delayed listing); update that one rather than failing or duplicating.
        if int(exc.status_code) != 422:
            raise
        pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, branch)
        existing = next((pr for pr in pulls if pr["state"] == "open"), None)
        if existing is None:
            raise
        number = int(existing["number"])
        await changes.update_pull(ctx.gh, ctx.repo, number, title=text.title, body=text.body)
        return number
    return int(pull["number"])
