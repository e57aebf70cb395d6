"""Keep exactly one bump PR per pin, level-triggered.

``sync_repo`` reads the current state (config, upstream head, pinned value,
the PR on the deterministic branch) and makes only the writes needed to reach
the desired state. A push webhook and a reconcile tick both just call it, so a
missed webhook is healed by the next tick and a redelivery writes nothing.

A bump is several writes (commit, ref, PR). Before the ref moves, the bot
records its *intent*: the commit it built and what for. A rerun after a crash
or a lost answer finds the intent, recognises the branch head as its own, and
finishes the remaining writes with the same commit instead of building
another, so it never pushes twice nor takes its own PR for a human's. Whose a
head is that the bot does not remember is read from the commit itself: the
bot's trailer for this pin and the bot as committer.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.allowlist.commit import AllowlistFile
from bot.config.load import load_config
from bot.config.models import (
    PinConfig,
)
from bot.dashboard.text import pin_snapshot
from bot.edit.cmake_pin import PinError, read_pin, set_pin
from bot.github import changes, effects
from bot.github.changes import DEFAULT_BOT_LOGIN, BranchHead, FileEdit, Repo, is_bot_identity
from bot.github.default_branch import default_branch_head
from bot.pins import text as bump_text
from bot.service.blocking import BlockingRunner
from bot.service.locks import KeyedLocks
from bot.service.scope import RepoScope
from bot.store.kinds import Kind, pin_key
from bot.store.protocol import Store
from bot.store.state_doc import StateDoc

log = logging.getLogger(__name__)

PinSelector = Callable[[PinConfig], bool]

MAX_PUSHES_PER_TARGET = 3  # like AutoRoll: at most 3 changes to the same revision

REASON_NO_UPSTREAM_BRANCH = "upstream branch {upstream}@{branch} was not found"
REASON_NO_PIN_FILE = "{file} does not exist on {base}"
REASON_UNREACHABLE = (
    "pinned {value7} is not an ancestor of {upstream}@{branch} ({head7}): compare says "
    "{status}; upstream history was probably rewritten, so the bot will not guess a bump"
)
REASON_THROTTLED = (
    "the bot already pushed {count} times for upstream {target7}; it waits for a new "
    "upstream commit (or `@bot recreate`) rather than keep rebuilding"
)
REASON_OTHER_REPOSITORY = (
    "{file} fetches {repository}, not the configured upstream {upstream}; "
    "the bot will not pin one repository's commit for another"
)
REASON_REWRITTEN = (
    "#{number} pins {old7}, which upstream history no longer has on {upstream}@{branch}; "
    "left to humans (close it for a fresh bump)"
)
REASON_COOLDOWN = "a bump of this pin landed a moment ago; waiting out the cooldown"
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
    THROTTLED = "throttled"  # too many pushes for one upstream commit
    COOLDOWN = "cooldown"  # a bump of this pin landed a moment ago
    FAILED = "failed"  # could not decide; reason recorded, nothing written


SUCCESSES = frozenset(
    {Outcome.CREATED, Outcome.UPDATED, Outcome.UNCHANGED, Outcome.CURRENT, Outcome.CLOSED}
)


@dataclass(frozen=True)
class PinResult:
    pin: str
    outcome: Outcome
    detail: str = ""
    pr: int | None = None


@dataclass
class PinState(StateDoc):
    """What the bot remembers about one pin's branch (a store document)."""

    head: str | None = None
    pending: str | None = None
    target: str | None = None
    source: str | None = None  # the pinned value the bump commit replaced
    pr: int | None = None
    human_push_notified: bool = False
    # allowlist follow-ups this bump carries: pattern → narrower patterns ([] = delete)
    prunes: dict[str, list[str]] = field(default_factory=dict)
    # Write-ahead record of a bump in progress: {sha, target, source, base, pushed}.
    intent: dict[str, Any] | None = None
    last_result: str = ""
    last_failure: str | None = None


@dataclass(frozen=True, kw_only=True)
class BumpScope(RepoScope):
    """A repository's scope plus the default branch head one sync works against."""

    base: BranchHead


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
    bot_login: str = DEFAULT_BOT_LOGIN,
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
    ctx = BumpScope(
        gh=gh,
        store=store,
        locks=locks,
        blocking=blocking,
        repo=repo,
        config=config,
        base=base,
        clock=clock,
        bot_login=bot_login,
    )
    return list(await asyncio.gather(*(sync_pin(ctx, pin) for pin in pins)))


async def sync_pin(ctx: BumpScope, pin: PinConfig) -> PinResult:
    key = pin_key(ctx.repo.full_name, pin.name)
    async with ctx.locks.hold(key):
        state = PinState.load(await ctx.store.get_state(Kind.BUMP, key))
        result = await _sync_pin_locked(ctx, pin, state)
        state.last_result = result.outcome.value
        if result.outcome in SUCCESSES:
            state.last_failure = None  # the dashboard shows problems that still stand
        if result.outcome is Outcome.FAILED:
            state.last_failure = result.detail
            log.warning("%s: %s", key, result.detail)
        else:
            log.info("%s: %s %s", key, result.outcome.value, result.detail)
        state.extra["updated_at"] = ctx.clock()
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
        return result


@dataclass(frozen=True)
class PinFacts:
    """What one sync reads before deciding anything."""

    head: str  # upstream branch head
    pulls: list[dict[str, Any]]  # PRs of the bump branch, newest first
    text: str  # the pin file on the base
    pinned: str  # the value pinned there

    @property
    def open_pr(self) -> dict[str, Any] | None:
        return next((pr for pr in self.pulls if pr["state"] == "open"), None)


async def _facts(ctx: BumpScope, pin: PinConfig) -> PinFacts | PinResult:
    upstream = Repo.parse(pin.upstream)
    head, pulls, raw = await asyncio.gather(
        changes.ref_sha(ctx.gh, upstream, pin.branch),
        changes.pulls_for_branch(ctx.gh, ctx.repo, bump_text.bump_branch(pin.name)),
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
        found = await ctx.blocking.run(read_pin, text, pin.dependency, filename=pin.file)
    except PinError as exc:
        return PinResult(pin.name, Outcome.FAILED, str(exc))
    if found.repository is not None and not same_repository(found.repository, pin.upstream):
        reason = REASON_OTHER_REPOSITORY.format(
            file=pin.file, repository=found.repository, upstream=pin.upstream
        )
        return PinResult(pin.name, Outcome.FAILED, reason)
    return PinFacts(head, pulls, text, found.value)


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
    upstream has not moved since."""
    manual = state.extra.get("manual")
    if isinstance(manual, dict) and manual.get("while_head") == head:
        return str(manual["target"])
    state.extra.pop("manual", None)
    return head


async def _sync_pin_locked(ctx: BumpScope, pin: PinConfig, state: PinState) -> PinResult:
    facts = await _facts(ctx, pin)
    if isinstance(facts, PinResult):
        return facts
    open_pr = facts.open_pr
    paused = await ctx.store.get_state(Kind.PAUSE, pin_key(ctx.repo.full_name, pin.name))
    if pin.paused or paused is not None:
        detail = "paused in config" if pin.paused else f"paused by @{paused and paused.get('by')}"
        return PinResult(pin.name, Outcome.PAUSED, detail, _number(open_pr))
    target = target_of(state, facts.head)
    if facts.pinned == target:
        return await _close_not_needed(ctx, pin, state, open_pr, facts.pinned, target, current=True)
    owner = await _ownership(ctx, pin, state, open_pr)
    if open_pr is not None and owner is None:
        return await _human_owned(ctx, pin, state, open_pr, bump_text.bump_branch(pin.name))
    if (
        owner == target
        and state.source == facts.pinned
        and state.intent is None
        and not await _conflicted(ctx, state, open_pr)
    ):
        return PinResult(pin.name, Outcome.UNCHANGED, f"already at {target[:7]}", _number(open_pr))
    newest = facts.pulls[0] if facts.pulls else None
    if open_pr is None and newest is not None and _closed_by_human_for(newest, target, state):
        detail = f"#{newest['number']} was closed without merging for {target[:7]}"
        return PinResult(pin.name, Outcome.SKIPPED, detail, int(newest["number"]))
    pushes = int((state.extra.get("pushes") or {}).get(target, 0))
    if pushes >= MAX_PUSHES_PER_TARGET and _resumable(state, target, facts, ctx.base) is None:
        detail = REASON_THROTTLED.format(count=pushes, target7=target[:7])
        return PinResult(pin.name, Outcome.THROTTLED, detail, _number(open_pr))
    if ctx.clock() < await _cooldown_ends(ctx, pin):
        return PinResult(pin.name, Outcome.COOLDOWN, REASON_COOLDOWN, _number(open_pr))
    return await _bump(ctx, pin, state, facts, target)


async def _cooldown_ends(ctx: BumpScope, pin: PinConfig) -> float:
    """When the cooldown after this pin's last landed bump ends (0: none)."""
    if ctx.config.landing is None:
        return 0.0
    landed = await ctx.store.get_state(Kind.PIN_COOLDOWN, pin_key(ctx.repo.full_name, pin.name))
    if landed is None or not isinstance(landed.get("landed_at"), int | float):
        return 0.0
    return float(landed["landed_at"]) + ctx.config.landing.cooldown_minutes * 60.0


async def _conflicted(ctx: BumpScope, state: PinState, open_pr: Mapping[str, Any] | None) -> bool:
    """Whether the bot's bump PR no longer merges cleanly (asked only when the base moved)."""
    if open_pr is None or state.extra.get("base") == ctx.base.sha:
        return False
    pull = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}",
        url_vars=ctx.repo.vars(number=str(open_pr["number"])),
    )
    # None means GitHub is still computing: look again at the next sync.
    return pull.get("mergeable") is False


async def _bump(
    ctx: BumpScope, pin: PinConfig, state: PinState, facts: PinFacts, target: str
) -> PinResult:
    upstream = Repo.parse(pin.upstream)
    open_pr = facts.open_pr
    # Compare before any write: a pin that upstream history no longer reaches
    # must end with nothing written, not even an orphan blob.
    try:
        comparison, new_text = await asyncio.gather(
            _compare(ctx.gh, upstream, facts.pinned, target),
            ctx.blocking.run(set_pin, facts.text, pin.dependency, target, filename=pin.file),
        )
    except PinError as exc:  # e.g. a shallow pin cannot take the commit sha of a branch
        return PinResult(pin.name, Outcome.FAILED, str(exc))
    if comparison is None:
        reason = REASON_UNKNOWN_PIN.format(value=facts.pinned, upstream=pin.upstream)
        return PinResult(pin.name, Outcome.FAILED, reason)
    old_target = _bots_target(state, open_pr)
    if (
        open_pr is not None
        and old_target is not None
        and await _left_branch(ctx, upstream, comparison, old_target, facts.head)
    ):
        return await _rewritten(ctx, pin, open_pr, old_target, facts.head)
    status = comparison["status"]
    if status == "behind":
        return await _close_not_needed(
            ctx, pin, state, open_pr, facts.pinned, target, current=False
        )
    if status != "ahead":
        reason = REASON_UNREACHABLE.format(
            value7=facts.pinned[:7],
            upstream=pin.upstream,
            branch=pin.branch,
            head7=target[:7],
            status=status,
        )
        return PinResult(pin.name, Outcome.FAILED, reason)
    commits = comparison.get("commits") or []
    await _snapshot(
        ctx,
        pin,
        pinned=facts.pinned,
        upstream_head=facts.head,
        behind=int(comparison.get("ahead_by") or len(commits)),
        oldest=_commit_time(commits[0]) if commits else None,
    )
    text_out = bump_text.render(
        pin=pin.name,
        dependency=pin.dependency,
        file=pin.file,
        upstream=pin.upstream,
        branch=pin.branch,
        old=facts.pinned,
        new=target,
        total_commits=int(comparison.get("total_commits") or 0),
        commits=bump_text.parse_compare_commits(await _newest(ctx, upstream, target, comparison)),
        compare_url=str(comparison["html_url"]),
    )
    key = pin_key(ctx.repo.full_name, pin.name)
    branch = bump_text.bump_branch(pin.name)
    intent = _resumable(state, target, facts, ctx.base)
    resumed = intent is not None
    if intent is None:
        sha = await _commit(ctx, pin, state, new_text, text_out)
        intent = {
            "sha": sha,
            "target": target,
            "source": facts.pinned,
            "base": ctx.base.sha,
            "pushed": False,
        }
        # Recorded before the ref moves: a rerun finishes with this very commit.
        state.intent, state.extra["base"] = intent, ctx.base.sha
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
    sha = str(intent["sha"])
    await _move_branch(ctx, branch, sha, open_pr, resumed=resumed)
    if not intent["pushed"]:
        # Counted once the push is confirmed, so failed attempts never throttle a pin.
        pushes = dict(state.extra.get("pushes") or {})
        pushes[target] = int(pushes.get(target, 0)) + 1
        state.extra["pushes"], intent["pushed"] = pushes, True
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
    if open_pr is not None:
        number = int(open_pr["number"])
        await changes.update_pull(
            ctx.gh, ctx.repo, number, title=text_out.title, body=text_out.body
        )
        outcome = Outcome.UPDATED
    else:
        number = await _open_pull(ctx, branch, text_out, sha)
        state.human_push_notified = False
        outcome = Outcome.CREATED
    state.head, state.target, state.source, state.pr = sha, target, facts.pinned, number
    state.pending, state.intent = None, None
    return PinResult(pin.name, outcome, text_out.title, number)


def _bots_target(state: PinState, open_pr: Mapping[str, Any] | None) -> str | None:
    """The upstream commit the bot's open PR pins (None: no PR of the bot's, or not known)."""
    if open_pr is None or not state.target or str(open_pr["head"]["sha"]) != state.head:
        return None
    return state.target


async def _left_branch(
    ctx: BumpScope, upstream: Repo, comparison: Mapping[str, Any], old: str, new: str
) -> bool:
    """Whether ``old`` is no longer in the history of the branch head ``new`` (upstream
    rewrote its history). Usually the compare on the way to the target already lists
    ``old``; otherwise one more compare decides."""
    if old == new or any(c.get("sha") == old for c in comparison.get("commits") or []):
        return False
    between = await _compare(ctx.gh, upstream, old, new)
    return between is None or between["status"] not in ("ahead", "identical")


async def _rewritten(
    ctx: BumpScope, pin: PinConfig, open_pr: Mapping[str, Any], old: str, head: str
) -> PinResult:
    """Say once on the PR that its target left the branch; the PR is the humans' now."""
    number = int(open_pr["number"])
    body = bump_text.COMMENT_REWRITTEN.format(
        old7=old[:7], upstream=pin.upstream, branch=pin.branch, head7=head[:7]
    )
    marker = bump_text.MARKER_REWRITTEN.format(pin=pin.name, target=old)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    reason = REASON_REWRITTEN.format(
        number=number, old7=old[:7], upstream=pin.upstream, branch=pin.branch
    )
    return PinResult(pin.name, Outcome.FAILED, reason, number)


def _resumable(
    state: PinState, target: str, facts: PinFacts, base: BranchHead
) -> dict[str, Any] | None:
    """The unfinished bump to finish rather than rebuild: same target, pin and base."""
    intent = state.intent
    if intent is None or intent.get("target") != target or intent.get("source") != facts.pinned:
        return None
    if intent.get("base") != base.sha or not isinstance(intent.get("sha"), str):
        return None
    return intent


async def _move_branch(
    ctx: BumpScope, branch: str, sha: str, open_pr: Mapping[str, Any] | None, *, resumed: bool
) -> None:
    """Point the bump branch at ``sha`` unless it is there already (a rerun's case)."""
    if open_pr is not None:
        if str(open_pr["head"]["sha"]) != sha:
            await changes.force_branch(ctx.gh, ctx.repo, branch, sha, exists=True)
        return
    # Only a resumed bump may have moved the branch already; a fresh one just
    # creates it (force_branch handles a leftover branch).
    current = await changes.ref_sha(ctx.gh, ctx.repo, branch) if resumed else None
    if current != sha:
        await changes.force_branch(ctx.gh, ctx.repo, branch, sha, exists=current is not None)


async def _commit(
    ctx: BumpScope, pin: PinConfig, state: PinState, new_text: str, text: bump_text.BumpText
) -> str:
    """The bump commit on the base (and the prune commit it carries, on top)."""
    entries = await changes.create_blobs(
        ctx.gh, ctx.repo, [FileEdit(pin.file, new_text.encode("utf-8"))]
    )
    commit = await changes.commit_tree(
        ctx.gh, ctx.repo, base=ctx.base, entries=entries, message=text.commit_message
    )
    if state.prunes and ctx.config.allowlist is not None:
        # The allowlist follow-ups this bump carried survive the rebuild, as their
        # own commit on top (if the entries are still there on the new base).
        file = AllowlistFile(ctx.gh, ctx.blocking, ctx.repo, ctx.config.allowlist)
        pruned = await file.prune_commit(
            commit, state.prunes, pin.name, read_at=ctx.base.sha, trailers=text.trailers
        )
        if pruned is not None:
            state.extra["prune_base"] = commit.sha
            commit = pruned
    return commit.sha


async def _snapshot(
    ctx: BumpScope,
    pin: PinConfig,
    *,
    pinned: str,
    upstream_head: str,
    behind: int,
    oldest: float | None,
) -> None:
    """What the dashboard shows for this pin: how far behind upstream it is."""
    doc = pin_snapshot(
        pinned=pinned, upstream_head=upstream_head, behind=behind, oldest_unrolled_at=oldest
    )
    await ctx.store.put_state(Kind.DASHBOARD_PIN, pin_key(ctx.repo.full_name, pin.name), doc)


async def _newest(
    ctx: BumpScope, upstream: Repo, target: str, comparison: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The commits the PR body lists, oldest first, ending at ``target``.

    GitHub's compare lists at most 250 commits, and the *oldest* ones: past that,
    the newest are read from the commits list at the target instead (one request,
    only then).
    """
    listed: list[dict[str, Any]] = list(comparison.get("commits") or [])
    if int(comparison.get("total_commits") or 0) <= len(listed):
        return listed
    newest = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/commits{?sha,per_page}",
        url_vars=upstream.vars(sha=target, per_page=str(bump_text.MAX_LISTED_COMMITS)),
    )
    return list(reversed(newest))


def _commit_time(commit: Mapping[str, Any]) -> float | None:
    stamp = ((commit.get("commit") or {}).get("author") or {}).get("date")
    if not isinstance(stamp, str):
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


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
    ctx: BumpScope, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any] | None
) -> str | None:
    """The upstream target of the open PR if its head is the bot's, else None."""
    if open_pr is None:
        return None
    pr_head = str(open_pr["head"]["sha"])
    intent = state.intent or {}
    if pr_head == intent.get("sha"):
        return str(intent["target"])  # a bump in progress: finished by _bump
    if pr_head in {state.head, state.pending}:
        return state.target
    # A head the bot does not remember (a new store, a crash, a human push): the
    # commit itself says whose it is.
    commit = await changes.git_commit(ctx.gh, ctx.repo, pr_head)
    trailers = bump_text.commit_trailers(str(commit.get("message") or ""))
    if trailers.get(bump_text.TRAILER_PIN) != pin.name:
        return None
    if not is_bot_identity(commit.get("committer"), ctx.bot_login):
        return None  # the bot's message, but amended or rebuilt by a human
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
    ctx: BumpScope, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any], branch: str
) -> PinResult:
    number = int(open_pr["number"])
    if not state.human_push_notified or state.pr != number:
        head = str(open_pr["head"]["sha"])
        body = bump_text.COMMENT_HUMAN_PUSH.format(branch=branch, head7=head[:7])
        marker = bump_text.MARKER_HUMAN_PUSH.format(pin=pin.name, head=head)
        await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
        state.human_push_notified, state.pr = True, number
    return PinResult(pin.name, Outcome.HUMAN_OWNED, "not force-pushing a human's branch", number)


async def _close_not_needed(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    open_pr: Mapping[str, Any] | None,
    pinned: str,
    head: str,
    *,
    current: bool,
) -> PinResult:
    outcome = Outcome.CURRENT
    await _snapshot(ctx, pin, pinned=pinned, upstream_head=head, behind=0, oldest=None)
    if open_pr is None:
        return PinResult(pin.name, outcome, f"pin {pinned[:7]} needs no bump")
    number = int(open_pr["number"])
    if await _ownership(ctx, pin, state, open_pr) is None and state.head is not None:
        # A human owns the branch; closing their PR is their call, not ours.
        return PinResult(pin.name, outcome, "pin current; human-owned PR left open", number)
    body = bump_text.COMMENT_ALREADY_CURRENT.format(
        file=pin.file,
        dependency=pin.dependency,
        value7=pinned[:7],
        relation=bump_text.RELATION_CURRENT if current else bump_text.RELATION_AHEAD,
        upstream=pin.upstream,
        branch=pin.branch,
        head7=head[:7],
    )
    marker = bump_text.MARKER_ALREADY_CURRENT.format(pin=pin.name)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    state.intent = None
    # Recorded before the close: a crash after it must not read as a human's close.
    state.extra["closed_by_bot"] = number
    await ctx.store.put_state(Kind.BUMP, pin_key(ctx.repo.full_name, pin.name), state.dump())
    await changes.update_pull(ctx.gh, ctx.repo, number, state="closed")
    return PinResult(pin.name, Outcome.CLOSED, f"pin {pinned[:7]} needs no bump", number)


async def _open_pull(ctx: BumpScope, branch: str, text: bump_text.BumpText, sha: str) -> int:
    async def create() -> int:
        pull = await changes.create_pull(
            ctx.gh, ctx.repo, title=text.title, body=text.body, head=branch, base=ctx.base.name
        )
        return int(pull["number"])

    async def find() -> int | None:
        # A lost answer may hide a PR GitHub did open: the branch says.
        return await _open_pull_number(ctx, branch, head=sha)

    try:
        return await effects.look_after_failure(create, find)
    except gidgethub.BadRequest as exc:
        # 422: a PR for this head appeared since we listed (a concurrent run or a
        # delayed listing); update that one rather than failing or duplicating.
        if int(exc.status_code) != 422:
            raise
        number = await _open_pull_number(ctx, branch)
        if number is None:
            raise
        await changes.update_pull(ctx.gh, ctx.repo, number, title=text.title, body=text.body)
        return number


async def _open_pull_number(ctx: BumpScope, branch: str, *, head: str | None = None) -> int | None:
    """The open PR of ``branch`` (whose head is ``head``, if given)."""
    pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, branch)
    found = (
        int(pr["number"])
        for pr in pulls
        if pr["state"] == "open" and head in (None, pr["head"]["sha"])
    )
    return next(found, None)
