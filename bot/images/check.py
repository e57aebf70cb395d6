"""Ask the registry for every image a build pulls (invariant 7), once per build.

The images come from the routing model run on the build's own commit with the build's
own inputs (branch, ``TORCH_NIGHTLY``, PR or not), so the main, premerge and nightly
lanes each get the tags they really pull; only steps the build had count. A missing
nightly image's stable counterpart is asked for too: found, it shows the producer
pushed the wrong tag (incident B).

A finished check is kept per build (a redelivered event asks nothing again) unless the
registry did not answer for some tag: then the next event asks again. The repository's
last check is kept for the dashboard.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from bot.buildkite import job_states
from bot.config.routing import RoutingConfig
from bot.context.build_scope import BuildScope
from bot.context.scope import RepoScope
from bot.github.ci_files import read_inputs
from bot.images.consumed import ConsumedImage, consumed_images
from bot.images.logs import job_log_lines
from bot.images.missing import image_missing_line
from bot.images.model import ImageCheck, ImageRow
from bot.registry.client import RegistryClient
from bot.registry.probe import TagProbe
from bot.registry.reference import ImageRef
from bot.routing.model import route
from bot.routing.repo_tables import tables_of
from bot.routing.tables import RoutingTablesError
from bot.store.kinds import Kind, repo_key

log = logging.getLogger(__name__)

PROBLEM_NO_CONFIG = "the generator's config ({path}) is not in {commit7}"
PROBLEM_NO_REGISTRY = "no registry is configured for the bot (images are not checked)"
PROBLEM_TABLES = "the routing tables of the repo config are invalid: {reason}"
PROBLEM_BAD_IMAGE = "cannot read image name {image!r}: {reason}"


def build_env(build: Mapping[str, Any]) -> dict[str, str]:
    """The generator's inputs of a Buildkite build, as the build itself ran."""
    env = build.get("env") if isinstance(build.get("env"), Mapping) else {}
    pull = build.get("pull_request")
    number = pull.get("id") if isinstance(pull, Mapping) else None
    return {
        "BUILDKITE_BRANCH": str(build.get("branch") or ""),
        "BUILDKITE_COMMIT": str(build.get("commit") or ""),
        "BUILDKITE_PULL_REQUEST": str(number) if number else "false",
        "TORCH_NIGHTLY": str((env or {}).get("TORCH_NIGHTLY") or ""),
    }


def is_nightly(build: Mapping[str, Any]) -> bool:
    return build_env(build)["TORCH_NIGHTLY"] == "1"


def _ran(build: Mapping[str, Any]) -> set[str] | None:
    keys = {str(job["step_key"]) for job in build.get("jobs") or () if job.get("step_key")}
    return keys or None


async def stored_check(ctx: RepoScope, build_url: str) -> ImageCheck | None:
    found = await ctx.store.get_state(Kind.IMAGE_CHECK_BUILD, build_url)
    return ImageCheck.load(found) if found else None


async def check_build(ctx: RepoScope, build: Mapping[str, Any]) -> ImageCheck:
    """The registry's answer for every image ``build`` pulls (stored, or asked now)."""
    url = str(build.get("web_url") or "")
    found = await stored_check(ctx, url)
    if found is not None:
        return found
    check = await _check(ctx, build)
    if check.problem is None and all(row.exists is not None for row in check.rows):
        await ctx.store.put_state(Kind.IMAGE_CHECK_BUILD, url, check.dump())
    await ctx.store.put_state(Kind.IMAGE_CHECK, repo_key(ctx.repo), check.dump())
    log.info(
        "%s: images of build #%s: %d checked, %d missing",
        ctx.repo.full_name,
        check.build_number,
        len(check.rows),
        len(check.missing),
    )
    return check


async def _check(ctx: RepoScope, build: Mapping[str, Any]) -> ImageCheck:
    env = build_env(build)
    base = ImageCheck(
        build_number=int(build.get("number") or 0),
        build_url=str(build.get("web_url") or ""),
        commit=env["BUILDKITE_COMMIT"],
        branch=env["BUILDKITE_BRANCH"],
        nightly=env["TORCH_NIGHTLY"] == "1",
        checked_at=ctx.clock(),
        rows=(),
    )
    if ctx.registries is None:
        return _failed(base, PROBLEM_NO_REGISTRY)
    routing = ctx.config.routing or RoutingConfig()
    try:
        tables = tables_of(routing)
    except RoutingTablesError as exc:
        return _failed(base, PROBLEM_TABLES.format(reason=exc))
    files = await read_inputs(ctx.gh, ctx.repo, base.commit, routing.ci_config, ctx.cache)
    if routing.ci_config not in files:
        return _failed(
            base, PROBLEM_NO_CONFIG.format(path=routing.ci_config, commit7=base.commit[:7])
        )
    routes = await ctx.blocking.run(route, files, env=env, tables=tables)
    consumed = consumed_images(routes, tables, ran=_ran(build))
    client = ctx.registries.client(ctx.config.images.registry_url)
    try:
        rows = await _rows(client, consumed)
    except ValueError as exc:
        return _failed(base, str(exc))
    return dataclasses.replace(base, rows=rows)


def _failed(base: ImageCheck, problem: str) -> ImageCheck:
    return dataclasses.replace(base, problem=problem)


def _ref(image: str) -> ImageRef:
    try:
        return ImageRef.parse(image)
    except ValueError as exc:
        raise ValueError(PROBLEM_BAD_IMAGE.format(image=image, reason=exc)) from None


async def _rows(client: RegistryClient, consumed: Sequence[ConsumedImage]) -> tuple[ImageRow, ...]:
    probes = await client.manifest_statuses([_ref(item.image) for item in consumed])
    rows = [
        _row(item.image, probe, item.consumers, item.producer)
        for item, probe in zip(consumed, probes, strict=True)
    ]
    # The stable counterparts of missing nightly images: does the producer's stable tag exist?
    asked = [
        (item, missing)
        for item, missing in zip(consumed, probes, strict=True)
        if missing.exists is False and item.counterpart is not None
    ]
    counterparts = await client.manifest_statuses(
        [_ref(str(item.counterpart)) for item, _missing in asked]
    )
    for (item, missing), probe in zip(asked, counterparts, strict=True):
        if probe.exists:  # a missing counterpart adds nothing to the story
            row = _row(str(item.counterpart), probe, (), item.producer)
            rows.append(dataclasses.replace(row, counterpart_of=missing.ref.tag))
    # Found first, then unknown, then missing: the table reads as the proof does.
    order = {True: 0, None: 1, False: 2}
    return tuple(sorted(rows, key=lambda row: order[row.exists]))


def _row(image: str, probe: TagProbe, consumers: tuple[str, ...], producer: str | None) -> ImageRow:
    return ImageRow(
        image=image,
        tag=probe.ref.tag,
        status=probe.describe(),
        exists=probe.exists,
        consumers=consumers,
        producer=producer,
    )


async def on_nightly_build(found: BuildScope) -> ImageCheck | None:
    """A torch-nightly build finished: every image it pulls, asked for (config)."""
    if not found.scope.config.images.nightly or not is_nightly(found.build):
        return None
    build = await found.scope.buildkite.build(found.org, found.pipeline, found.number)
    return await check_build(found.scope, build)


async def on_failed_job(found: BuildScope, job: Mapping[str, Any]) -> ImageCheck | None:
    """A job failed: when its log says the registry has no such image, every image of its
    build is asked for (once per build: a second such job reads no log)."""
    if not job_states.ran_and_failed(job) or not job.get("id"):
        return None
    stored = await stored_check(found.scope, str(found.build.get("web_url") or ""))
    if stored is not None:
        return stored
    lines = await job_log_lines(
        found.scope, found.org, found.pipeline, found.number, str(job["id"])
    )
    if image_missing_line(lines) is None:
        return None
    build = await found.scope.buildkite.build(found.org, found.pipeline, found.number)
    return await check_build(found.scope, build)
