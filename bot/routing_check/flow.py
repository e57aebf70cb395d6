"""The "CI routing" check run: one per PR head, posted once.

A PR touching the generator's files (its config, a file under a job directory the base's
or the head's config names, or an extra ``routing.paths`` glob: ``trigger``) gets, on its
head, a check run with the steps whose routing changes and an annotation for each rule the
PR newly breaks. It is looked for before it is made, by name and App, so a redelivery or a
rerun after a crash posts nothing twice; GitHub takes 50 annotations a request, so
more go in updates, and a rerun adds only the ones the run does not have yet.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.config.routing import RoutingConfig
from bot.context.scope import RepoScope
from bot.github import effects
from bot.github.changes import read_file
from bot.github.ci_files import read_inputs
from bot.routing.read import job_dirs_of
from bot.routing.repo_tables import tables_of
from bot.routing.tables import RoutingTablesError
from bot.routing_check.report import (
    CHECK_NAME,
    Finding,
    Report,
    bad_tables_report,
    pull_report,
    summary,
    title,
)
from bot.routing_check.trigger import fixed_trigger, under_job_dirs

MAX_ANNOTATIONS_PER_REQUEST = 50  # GitHub's limit
JOB_DIRS_CACHE_KIND = "routing-job-dirs"


class CheckOutcome(enum.StrEnum):
    OFF = "routing is not configured"
    NOT_ROUTING = "the PR touches none of the routing files"
    ALREADY = "the head has its check run"
    NOTHING_TO_SAY = "no routing changes and no rule broken"
    POSTED = "posted"


@dataclass(frozen=True)
class PullHead:
    number: int
    head_sha: str
    head_ref: str
    base_sha: str


async def check_pull(ctx: RepoScope, pull: PullHead, *, app_id: str) -> CheckOutcome:
    routing = ctx.config.routing
    if routing is None:
        return CheckOutcome.OFF
    touched = await _touched_paths(ctx, pull.number)
    if not await _touches_routing(ctx, routing, pull, touched):
        return CheckOutcome.NOT_ROUTING
    existing = await _existing_run(ctx, pull.head_sha, app_id)
    if existing is not None and _complete(existing):
        return CheckOutcome.ALREADY  # a redelivery: nothing to read or write
    report = await _report(ctx, routing, pull)
    if existing is not None:
        await _finish_annotations(ctx, existing, report.findings)
        return CheckOutcome.ALREADY
    if not report.worth_posting:
        return CheckOutcome.NOTHING_TO_SAY
    await _post(ctx, pull.head_sha, report, app_id)
    return CheckOutcome.POSTED


async def _touched_paths(ctx: RepoScope, number: int) -> list[str]:
    paths: list[str] = []
    async for entry in ctx.gh.getiter(
        "/repos/{owner}/{repo}/pulls/{number}/files{?per_page}",
        url_vars=ctx.repo.vars(number=str(number), per_page="100"),
    ):
        paths.append(str(entry["filename"]))
        if entry.get("previous_filename"):
            paths.append(str(entry["previous_filename"]))
    return paths


async def _touches_routing(
    ctx: RepoScope, routing: RoutingConfig, pull: PullHead, touched: list[str]
) -> bool:
    if fixed_trigger(touched, routing):
        return True  # the config itself, or an extra glob: no need to read the config
    base, head = await asyncio.gather(
        _job_dirs(ctx, routing, pull.base_sha), _job_dirs(ctx, routing, pull.head_sha)
    )
    return under_job_dirs(touched, (*base, *head))


async def _job_dirs(ctx: RepoScope, routing: RoutingConfig, commit: str) -> tuple[str, ...]:
    """The job directories ``commit``'s config names (none without a readable config)."""
    # A commit's file never changes: main's head serves every PR against it.
    key = (JOB_DIRS_CACHE_KIND, ctx.repo.full_name, commit, routing.ci_config)
    cached: tuple[str, ...] | None = ctx.cache.get(key)
    if cached is None:
        data = await read_file(ctx.gh, ctx.repo, routing.ci_config, commit)
        # Bytes that are not UTF-8 still name what they can: the model, reading the same
        # file, says what is wrong with it.
        text = data.decode("utf-8", errors="replace") if data is not None else ""
        cached = ctx.cache[key] = await ctx.blocking.run(job_dirs_of, text)
    return cached


async def _report(ctx: RepoScope, routing: RoutingConfig, pull: PullHead) -> Report:
    try:
        tables = tables_of(routing)
    except RoutingTablesError as exc:
        return bad_tables_report(str(exc))  # nothing to read: the model cannot run
    base, head = await asyncio.gather(
        read_inputs(ctx.gh, ctx.repo, pull.base_sha, routing.ci_config, ctx.cache),
        read_inputs(ctx.gh, ctx.repo, pull.head_sha, routing.ci_config, ctx.cache),
    )
    env = {"BUILDKITE_BRANCH": pull.head_ref}  # the PR's own build, not main's
    return await ctx.blocking.run(pull_report, base, head, routing, tables, env)


async def _existing_run(ctx: RepoScope, head_sha: str, app_id: str) -> dict[str, Any] | None:
    found = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/commits/{ref}/check-runs{?check_name,app_id,filter}",
        url_vars=ctx.repo.vars(ref=head_sha, check_name=CHECK_NAME, app_id=app_id, filter="all"),
    )
    runs: list[dict[str, Any]] = found.get("check_runs") or []
    return runs[0] if runs else None


def _annotation(finding: Finding) -> dict[str, Any]:
    problem = finding.problem
    return {
        "path": problem.file,
        "start_line": max(problem.line, 1),
        "end_line": max(problem.line, 1),
        "annotation_level": "failure" if finding.failing else "warning",
        "title": finding.invariant,
        "message": problem.message,
    }


async def _post(ctx: RepoScope, head_sha: str, report: Report, app_id: str) -> None:
    notes = [_annotation(finding) for finding in report.findings]
    output = {"title": title(report), "summary": summary(report)}
    body = {
        "name": CHECK_NAME,
        "head_sha": head_sha,
        "conclusion": report.conclusion,
        # How many annotations the run is to have: a rerun that finds them all there
        # knows the run is complete without routing anything again.
        "external_id": str(len(report.findings)),
        "output": {**output, "annotations": notes[:MAX_ANNOTATIONS_PER_REQUEST]},
    }

    async def create() -> dict[str, Any]:
        run: dict[str, Any] = await ctx.gh.post(
            "/repos/{owner}/{repo}/check-runs", url_vars=ctx.repo.vars(), data=body
        )
        return run

    async def find() -> dict[str, Any] | None:
        # A lost answer may hide a run GitHub did make: the head's runs say.
        return await _existing_run(ctx, head_sha, app_id)

    run = await effects.look_after_failure(create, find)
    await _finish_annotations(ctx, run, report.findings)


def _complete(run: dict[str, Any]) -> bool:
    """Whether the run holds every annotation it was made for (see ``external_id``)."""
    expected = str(run.get("external_id") or "")
    have = int((run.get("output") or {}).get("annotations_count") or 0)
    return expected.isdigit() and have >= int(expected)


def _text_of(output: dict[str, Any]) -> dict[str, Any]:
    # An update that carries annotations must restate the output's title and summary.
    return {"title": output.get("title"), "summary": output.get("summary")}


async def _finish_annotations(
    ctx: RepoScope, run: dict[str, Any], findings: Sequence[Finding]
) -> None:
    """Add the annotations the run does not have yet, 50 a request (updates append)."""
    output = run.get("output") or {}
    have = int(output.get("annotations_count") or 0)
    notes = [_annotation(finding) for finding in findings]
    for start in range(have, len(notes), MAX_ANNOTATIONS_PER_REQUEST):
        chunk = notes[start : start + MAX_ANNOTATIONS_PER_REQUEST]
        await ctx.gh.patch(
            "/repos/{owner}/{repo}/check-runs/{id}",
            url_vars=ctx.repo.vars(id=str(run["id"])),
            data={"output": {**_text_of(output), "annotations": chunk}},
        )
