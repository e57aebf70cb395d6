"""`@bot retry-flaky`: retry only the failed jobs that look flaky or infra-caused.

Every decision is recorded (who asked, why, each job's class and evidence, the
new job) before the sticky comment is written from those records, so a
repeated command, a webhook redelivery or a crash in between never retries a
job twice and always leaves one comment per PR that tells the whole story.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.buildkite import job_states
from bot.buildkite.client import BuildkiteClient, JobNotRetryable
from bot.commands.grammar import Command
from bot.commands.replies import reply_once
from bot.github import changes, effects, neutralise
from bot.github.changes import Repo
from bot.github.permissions import Permission, decide, has_write, permission_level
from bot.retry import text as retry_text
from bot.retry.classify import (
    DEFAULT_INFRA_PATTERNS,
    Failure,
    FlakyRule,
    LogPattern,
    Verdict,
    classify,
)
from bot.retry.history import History, main_history
from bot.service.scope import RepoScope
from bot.store.kinds import Kind
from bot.store.protocol import Store

log = logging.getLogger(__name__)

# What a command is about to do, written before its first retry: a rerun after a
# crash carries out this plan instead of deciding again on a build its own
# retries have changed (a retried job no longer shows as failed).
LOG_TAIL_BYTES = 65536
# A retried job that finished in one of these failed again. ``canceled`` is not one:
# the state alone cannot tell whether it ran, and a cancel is someone's decision.
RETRY_FAILED_STATES = job_states.RAN_AND_FAILED_STATES | job_states.NO_AGENT_STATES
DAY = 86400.0


@dataclass(frozen=True)
class RetryRequest:
    pr: int
    comment_id: int
    comment_url: str
    login: str
    command: Command

    @property
    def reason(self) -> str | None:
        value = self.command.options.get("reason")
        return value if isinstance(value, str) else None

    @property
    def forced(self) -> bool:
        return self.command.options.get("force") is True


@dataclass(frozen=True)
class FoundBuild:
    org: str
    pipeline: str
    build: dict[str, Any]

    @property
    def number(self) -> int:
        return int(self.build["number"])

    @property
    def key(self) -> str:
        return f"{self.org}/{self.pipeline}/{self.number}"


def hard_failures(build: dict[str, Any]) -> list[dict[str, Any]]:
    """Jobs that failed for real: not soft-failed, not already retried, scripts only.

    A job that never ran (broken, skipped, canceled before it started) is not one: it is
    not listed, not counted against ``max_failed_jobs`` and not retried, since a retry
    would not run its step either. ``expired`` still is (no agent took it: infra), and
    so is a job canceled while it ran (see ``bot.buildkite.job_states``)."""
    return [job for job in build.get("jobs") or [] if job_states.is_hard_failure(job)]


class RetryFlakyOutcome(enum.StrEnum):
    """What one ``retry-flaky`` command did (the log line's first words)."""

    HANDLED_ALREADY = "command already handled"
    REFUSED = "refused"
    TOO_MANY_FAILED = "too many failed jobs: retried nothing"
    RETRIED = "failed jobs retried"
    FORCED = "forced retry"


@dataclass(frozen=True)
class Retried:
    outcome: RetryFlakyOutcome
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.outcome}: {self.detail}" if self.detail else str(self.outcome)


async def run_retry_flaky(ctx: RepoScope, request: RetryRequest) -> Retried:
    """Handle one command comment; returns a one-line summary for the log."""
    command_key = f"{ctx.repo.full_name}#{request.comment_id}"
    if await ctx.store.get_state(Kind.RETRY_COMMAND, command_key) is not None:
        return Retried(RetryFlakyOutcome.HANDLED_ALREADY)
    async with ctx.locks.hold(f"{ctx.repo.full_name}#pr{request.pr}"):
        plan = await ctx.store.get_state(Kind.RETRY_PLAN, command_key)
        if plan is not None:
            outcome = await _carry_out(ctx, request, plan)
        else:
            outcome = await _run_locked(ctx, request)
        await ctx.store.put_state(Kind.RETRY_COMMAND, command_key, {"outcome": str(outcome)})
        await ctx.store.delete_state(Kind.RETRY_PLAN, command_key)
        return outcome


async def _run_locked(ctx: RepoScope, request: RetryRequest) -> Retried:
    if ctx.config.buildkite is None:
        return await _refuse(ctx, request, retry_text.REFUSE_NOT_CONFIGURED)
    pull = await _pull(ctx, request.pr)
    head = str(pull["head"]["sha"])
    refusal = await _permission_refusal(ctx, request, pull)
    if refusal is not None:
        return await _refuse(ctx, request, refusal)
    builds = await pr_builds(ctx, head, request.pr)
    if not builds:
        return await _refuse(ctx, request, retry_text.REFUSE_NO_BUILD.format(head7=head[:7]))
    failed = [(found, job) for found in builds for job in hard_failures(found.build)]
    if request.forced:
        return await _force(ctx, request, builds, failed)
    limit = ctx.config.retry.max_failed_jobs
    if len(failed) > limit:
        note = retry_text.TOO_MANY_FAILED.format(count=len(failed), limit=limit)
        await _sticky(ctx, request, builds, rows=[], note=note)
        return Retried(RetryFlakyOutcome.TOO_MANY_FAILED, f"{len(failed)} failed jobs")
    decided = []
    for found in builds:
        jobs = [job for owner, job in failed if owner is found]
        verdicts = await classify_failures(ctx, found, jobs, head) if jobs else []
        decided += [(found, job, verdict) for job, verdict in verdicts]
    now_head = str((await _pull(ctx, request.pr))["head"]["sha"])
    if now_head != head:
        reason = retry_text.REFUSE_HEAD_MOVED.format(old7=head[:7], new7=now_head[:7])
        return await _refuse(ctx, request, reason)
    items = [(found, *_decided_row(job, verdict)) for found, job, verdict in decided]
    return await _plan_and_carry_out(ctx, request, builds, items, forced=None)


Item = tuple[FoundBuild, dict[str, Any], bool]  # the build, the row, whether to retry


async def _plan_and_carry_out(
    ctx: RepoScope,
    request: RetryRequest,
    builds: Sequence[FoundBuild],
    items: Sequence[Item],
    *,
    forced: str | None,
) -> Retried:
    """Record what the command is about to do, then do it."""
    index = {found.key: n for n, found in enumerate(builds)}
    plan = {
        "builds": [
            {
                "org": f.org,
                "pipeline": f.pipeline,
                "build": {"number": f.number, "web_url": f.build.get("web_url")},
            }
            for f in builds
        ],
        "items": [
            {"build": index[found.key], "row": row, "retry": retry} for found, row, retry in items
        ],
        "forced": forced,
    }
    key = f"{ctx.repo.full_name}#{request.comment_id}"
    await ctx.store.put_state(Kind.RETRY_PLAN, key, plan)
    return await _carry_out(ctx, request, plan)


async def _carry_out(ctx: RepoScope, request: RetryRequest, plan: dict[str, Any]) -> Retried:
    builds = [FoundBuild(b["org"], b["pipeline"], dict(b["build"])) for b in plan["builds"]]
    forced = plan.get("forced")
    rows = [
        await _act(ctx, request, builds[item["build"]], dict(item["row"]), forced=forced)
        if item["retry"]
        else dict(item["row"])
        for item in plan["items"]
    ]
    await _sticky(ctx, request, builds, rows=rows, merge=forced is not None)
    if forced is not None:
        return Retried(RetryFlakyOutcome.FORCED, forced)
    retried = sum(1 for row in rows if row.get("new_job_id"))
    return Retried(RetryFlakyOutcome.RETRIED, f"{retried} of {len(rows)}")


async def _pull(ctx: RepoScope, number: int) -> dict[str, Any]:
    pull: dict[str, Any] = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
    )
    return pull


async def _permission_refusal(
    ctx: RepoScope, request: RetryRequest, pull: dict[str, Any]
) -> str | None:
    level = await permission_level(ctx.gh, ctx.repo, request.login)
    if request.forced and not has_write(level):
        return retry_text.REFUSE_FORCE_PERMISSION
    labels = {str(label["name"]) for label in pull.get("labels") or []}
    decision = decide(
        Permission.WRITE_OR_READY_AUTHOR,
        level=level,
        is_author=str(pull["user"]["login"]).lower() == request.login.lower(),
        labels=labels,
        ready_label=ctx.config.retry.author_label,
    )
    return None if decision.allowed else decision.reason


async def pr_builds(ctx: RepoScope, head: str, number: int) -> list[FoundBuild]:
    """In each configured pipeline, the newest build of ``head`` that belongs to this PR."""
    assert ctx.config.buildkite is not None
    org = ctx.config.buildkite.organization
    found = []
    for pipeline in ctx.config.buildkite.pipelines:
        for build in await ctx.buildkite.builds(org, pipeline, commit=head, per_page=10):
            pull_request = build.get("pull_request") or {}
            if str(pull_request.get("id")) == str(number):
                found.append(FoundBuild(org, pipeline, build))
                break
    return found


async def classify_failures(
    ctx: RepoScope, found: FoundBuild, failed: Sequence[dict[str, Any]], head: str
) -> list[tuple[dict[str, Any], Verdict]]:
    """Each failed job with its verdict (retry-flaky and landing share this)."""
    rules = [FlakyRule(r.name, r.log, r.step, r.label) for r in ctx.config.retry.flaky_rules]
    infra = [
        *DEFAULT_INFRA_PATTERNS,
        *(LogPattern(r.name, r.log) for r in ctx.config.retry.infra_patterns),
    ]
    history = await _history(ctx, found)
    since = ctx.clock() - ctx.config.retry.history_days * DAY
    decided = []
    for job in failed:
        tail = await _tail(ctx, found, job)
        step = job.get("step_key")
        shard = job.get("parallel_group_index")
        shard = shard if isinstance(shard, int) else None
        runs = history.runs(str(step), since=since, shard=shard) if step else []
        runs = await history.with_signatures(str(step), runs, shard=shard) if step else []
        failure = Failure(
            job_id=str(job["id"]),
            step_key=str(step) if step else None,
            name=str(job.get("name") or step or job["id"]),
            state=str(job.get("state")),
            exit_status=job.get("exit_status"),
            signal_reason=job.get("signal_reason"),
            web_url=str(job.get("web_url") or ""),
            log_tail=tail,
        )
        decided.append(
            (job, classify(failure, history=runs, rules=rules, infra=infra, pr_commit=head))
        )
    return decided


async def _history(ctx: RepoScope, found: FoundBuild) -> History:
    branch = await _default_branch(ctx)
    return await main_history(
        ctx.buildkite,
        ctx.cache,
        found.org,
        found.pipeline,
        branch,
        builds=ctx.config.retry.history_builds,
        clock=ctx.clock,
    )


async def _default_branch(ctx: RepoScope) -> str:
    key = ("default-branch", ctx.repo.full_name)
    if key not in ctx.cache:
        ctx.cache[key] = await changes.default_branch(ctx.gh, ctx.repo)
    return str(ctx.cache[key])


async def _tail(ctx: RepoScope, found: FoundBuild, job: dict[str, Any]) -> bytes | None:
    if job.get("state") == "expired" or not job.get("started_at"):
        return None  # it never ran: there is no log to read
    return await ctx.buildkite.job_log_tail(
        found.org, found.pipeline, found.number, str(job["id"]), max_bytes=LOG_TAIL_BYTES
    )


def _decided_row(job: dict[str, Any], verdict: Verdict) -> tuple[dict[str, Any], bool]:
    """A job's row of the sticky comment as decided, and whether to retry it."""
    row: dict[str, Any] = {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or job.get("step_key") or job["id"]),
        "url": str(job.get("web_url") or ""),
        "step_key": job.get("step_key"),
        "class": verdict.failure_class.value,
        "evidence": verdict.evidence,
        "evidence_link": verdict.link,
        "rule": verdict.rule,
    }
    if not verdict.retry:
        why = retry_text.WHY.get(verdict.failure_class.value, verdict.failure_class.value)
        row["action"] = retry_text.ACTION_NOT_RETRIED.format(why=why)
    return row, verdict.retry


async def _act(
    ctx: RepoScope,
    request: RetryRequest,
    found: FoundBuild,
    row: dict[str, Any],
    *,
    forced: str | None,
) -> dict[str, Any]:
    """Retry the row's job, unless its step reached the cap (a forced retry ignores it)."""
    job_id = row["job_id"]
    step_key = f"{found.key}/{row.get('step_key') or job_id}"
    step = await ctx.store.get_state(Kind.RETRY_STEP, step_key) or {}
    count = int(step.get("count", 0))
    counted = job_id in (step.get("jobs") or [])  # by an attempt that did not finish
    if forced is None and not counted and count >= ctx.config.retry.max_retries_per_step:
        row["action"] = retry_text.ACTION_CAP.format(count=count)
        return row
    return await _retry(ctx, request, found, row, step_key, forced=forced is not None)


async def _retry(
    ctx: RepoScope,
    request: RetryRequest,
    found: FoundBuild,
    row: dict[str, Any],
    step_key: str,
    *,
    forced: bool,
) -> dict[str, Any]:
    job_id = row["job_id"]
    new = await retry_counted(ctx.buildkite, ctx.store, found, job_id, step_key)
    if isinstance(new, str):
        row["action"] = retry_text.ACTION_NOT_RETRYABLE.format(message=new)
        return row
    new_url = str(new.get("web_url") or "")
    row["new_job_id"] = str(new["id"])
    if forced:
        row["action"] = retry_text.ACTION_FORCED.format(reason=request.reason, url=new_url)
    else:
        row["action"] = retry_text.ACTION_RETRIED.format(url=new_url)
    row["outcome"] = retry_text.OUTCOME_RUNNING
    await ctx.store.put_state(
        Kind.RETRY_JOB,
        str(new["id"]),
        {
            "repo": ctx.repo.full_name,
            "pr": request.pr,
            "original_job_id": job_id,
            "step_key": row.get("step_key"),
            "name": row["name"],
            "class": row["class"],
            "rule": row.get("rule"),
            "evidence": row["evidence"],
            "requested_by": request.login,
            "reason": request.reason,
            "forced": forced,
            "build": found.key,
            "outcome": None,
            "at": ctx.clock(),
        },
    )
    return row


async def retry_counted(
    bk: BuildkiteClient, store: Store, found: FoundBuild, job_id: str, step_key: str
) -> dict[str, Any] | str:
    """Retry one job, counted against its step: the new job, or Buildkite's reason for
    refusing. Shared by retry-flaky and landing.

    The job is counted (by its id, so a rerun does not count it twice) before the
    call: after a crash, Buildkite's ``retried`` flag and this record together say
    what happened, so the job is never retried twice. A lost answer, or an "already
    retried" refusal, is checked against the job's ``retried_in_job_id``: a retry an
    earlier attempt did make is that attempt's answer.
    """

    async def find() -> dict[str, Any] | None:
        return await retried_as(bk, found, job_id)

    if not await _count_retry(store, step_key, job_id, +1):
        # Counted by an attempt that did not finish: it may have retried the job.
        earlier = await find()
        if earlier is not None:
            return earlier
    try:
        return await effects.look_after_failure(
            lambda: bk.retry_job(found.org, found.pipeline, found.number, job_id), find
        )
    except JobNotRetryable as exc:
        existing = await find()
        if existing is not None:
            return existing
        await _count_retry(store, step_key, job_id, -1)
        return exc.message
    except Exception:
        await _count_retry(store, step_key, job_id, -1)  # nothing happened
        raise


async def _count_retry(store: Store, step_key: str, job_id: str, change: int) -> bool:
    """Count a retry of ``job_id`` against its step (+1), or take it back (-1); False
    when there was nothing to change (counted already, or never counted)."""
    doc = await store.get_state(Kind.RETRY_STEP, step_key) or {}
    jobs = [str(job) for job in doc.get("jobs") or []]
    if (job_id in jobs) == (change > 0):
        return False
    jobs = [*jobs, job_id] if change > 0 else [job for job in jobs if job != job_id]
    count = max(int(doc.get("count", 0)) + change, 0)
    await store.put_state(Kind.RETRY_STEP, step_key, {"count": count, "jobs": jobs})
    return True


async def retried_as(bk: BuildkiteClient, found: FoundBuild, job_id: str) -> dict[str, Any] | None:
    """The job that retried ``job_id``, if Buildkite has one (``retried_in_job_id``)."""
    build = await bk.build(found.org, found.pipeline, found.number, include_retried_jobs=True)
    jobs = {str(job.get("id")): job for job in build.get("jobs") or [] if isinstance(job, dict)}
    new_id = (jobs.get(job_id) or {}).get("retried_in_job_id")
    return jobs.get(str(new_id)) if new_id else None


async def _force(
    ctx: RepoScope,
    request: RetryRequest,
    builds: Sequence[FoundBuild],
    failed: Sequence[tuple[FoundBuild, dict[str, Any]]],
) -> Retried:
    step = request.command.args[0] if request.command.args else None
    if step is None:
        return await _refuse(ctx, request, retry_text.REFUSE_FORCE_NEEDS_STEP)
    if not request.reason:
        return await _refuse(ctx, request, retry_text.REFUSE_FORCE_NEEDS_REASON)
    match = next(((found, job) for found, job in failed if job.get("step_key") == step), None)
    if match is None:
        numbers = ", ".join(f"#{found.number}" for found in builds)
        reason = retry_text.REFUSE_FORCE_UNKNOWN_STEP.format(
            step=neutralise.code(step), build=numbers
        )
        return await _refuse(ctx, request, reason)
    found, job = match
    row: dict[str, Any] = {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or step),
        "url": str(job.get("web_url") or ""),
        "step_key": step,
        "class": "forced",
        "evidence": f"forced by @{request.login}",
        "evidence_link": None,
        "rule": None,
    }
    return await _plan_and_carry_out(ctx, request, builds, [(found, row, True)], forced=step)


async def _sticky(
    ctx: RepoScope,
    request: RetryRequest,
    builds: Sequence[FoundBuild],
    *,
    rows: list[dict[str, Any]],
    note: str | None = None,
    merge: bool = False,
) -> None:
    """Write the PR's one retry comment (created once, then edited in place)."""
    key = f"{ctx.repo.full_name}#{request.pr}"
    doc = dict(await ctx.store.get_state(Kind.RETRY_PR, key) or {})
    shown = [
        {"pipeline": f.pipeline, "number": f.number, "url": str(f.build.get("web_url") or "")}
        for f in builds
    ]
    if doc.get("builds") == shown:
        rows = _kept_rows(doc.get("rows") or [], rows, merge=merge)
    doc.update(
        builds=shown,
        requested_by=request.login,
        reason=request.reason,
        command_url=request.comment_url,
        rows=rows,
        note=note,
    )
    await write_sticky(ctx.gh, ctx.store, ctx.repo, request.pr, doc)


def _kept_rows(
    old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], *, merge: bool
) -> list[dict[str, Any]]:
    """The rows of a new command on the same builds. A forced retry adds its row to the
    others; a full command replaces them, but keeps the jobs the bot retried earlier:
    while a retry runs its job is no failure of the build, and its outcome (perhaps
    "failed again") must still be shown where the retry was announced."""
    new_ids = {row["job_id"] for row in new}
    if merge:
        kept = [row for row in old if row["job_id"] not in new_ids]
    else:
        kept = [row for row in old if row.get("new_job_id") and row["job_id"] not in new_ids]
    return [*kept, *new]


async def write_sticky(
    gh: GitHubAPI, store: Store, repo: Repo, pr: int, doc: dict[str, Any]
) -> None:
    body = retry_text.sticky_body(
        builds=doc.get("builds") or [],
        requested_by=doc["requested_by"],
        reason=doc.get("reason"),
        command_url=doc["command_url"],
        rows=doc.get("rows") or [],
        note=doc.get("note"),
    )
    key = f"{repo.full_name}#{pr}"
    if doc.get("body") == body:
        return
    comment_id = doc.get("comment_id")
    if comment_id is None:
        doc["comment_id"] = await _create_sticky(gh, store, repo, pr, key, doc, body)
    else:
        try:
            await changes.edit_comment(gh, repo, int(comment_id), body)
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            doc["comment_id"] = await changes.comment(gh, repo, pr, body)  # someone deleted it
    doc["body"] = body
    doc.pop("creating", None)
    await store.put_state(Kind.RETRY_PR, key, doc)


async def _create_sticky(
    gh: GitHubAPI, store: Store, repo: Repo, pr: int, key: str, doc: dict[str, Any], body: str
) -> int:
    """The sticky comment, created once: an earlier attempt that may have created it
    (a crash, or an answer lost after GitHub applied it) is looked for by its marker."""
    marker = retry_text.MARKER_STICKY

    async def find() -> int | None:
        return await effects.find_comment(gh, repo, pr, marker)

    if doc.get("creating"):
        found = await find()
        if found is not None:
            # It may carry an older body than this attempt's.
            await changes.edit_comment(gh, repo, found, body)
            return found
    else:
        doc["creating"] = True
        await store.put_state(Kind.RETRY_PR, key, doc)
    return await effects.look_after_failure(lambda: changes.comment(gh, repo, pr, body), find)


async def _refuse(ctx: RepoScope, request: RetryRequest, reason: str) -> Retried:
    body = retry_text.REPLY_REFUSED.format(
        login=request.login, command=neutralise.code(request.command.line.strip()), reason=reason
    )
    await reply_once(ctx.gh, ctx.store, ctx.repo, request.pr, request.comment_id, body)
    return Retried(RetryFlakyOutcome.REFUSED, reason)


async def record_outcome(store: Store, job_id: str, state: str | None) -> tuple[str, int] | None:
    """A retried job finished in ``state``: record passed/failed and return (repo, pr) to
    refresh (the handler read both from the webhook's ``job``)."""
    record = await store.get_state(Kind.RETRY_JOB, job_id)
    if record is None or record.get("outcome") is not None:
        return None
    # Only a retry that ran (or expired: infra again) has an outcome: one that never
    # ran says nothing about whether the step is flaky.
    if state != job_states.PASSED and state not in RETRY_FAILED_STATES:
        return None
    record["outcome"] = "passed" if state == job_states.PASSED else "failed"
    await store.put_state(Kind.RETRY_JOB, job_id, record)
    return str(record["repo"]), int(record["pr"])


async def refresh_outcomes(gh: GitHubAPI, store: Store, repo: Repo, pr: int) -> None:
    """Re-render the sticky comment with the recorded outcomes of the bot's retries."""
    key = f"{repo.full_name}#{pr}"
    doc = await store.get_state(Kind.RETRY_PR, key)
    if doc is None:
        return
    for row in doc.get("rows") or []:
        new_id = row.get("new_job_id")
        if not new_id:
            continue
        record = await store.get_state(Kind.RETRY_JOB, str(new_id))
        if record is None or record.get("outcome") is None:
            continue
        row["outcome"] = (
            retry_text.OUTCOME_PASSED
            if record["outcome"] == "passed"
            else retry_text.OUTCOME_FAILED
        )
    await write_sticky(gh, store, repo, pr, doc)
