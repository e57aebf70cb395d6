"""The culprit search's reads: two routing-model runs and one compare.

The routing model runs on the last green and the first red trees (their files are
content-addressed blobs, mostly cached), which says whether the step's route changed.
One compare lists the commits between them and every file they touched together; only
for the few paths that matter (the step's job files, the generator's config, the step's
source dependencies that the range touched) one commit listing by path says which
commits touched them. A range of 50 commits never costs 50 commit reads.

A source dependency that is a directory is listed as that directory, without its
trailing ``/`` (``culprit.trace_paths`` says which paths, and when an excluded file
forces listing a file by itself). The step is found on both trees by Buildkite's
``step_key``: a step written without ``key:`` has the generator's derived key there,
which is the routed step's ``key`` too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gidgethub

from bot.config.routing import RoutingConfig
from bot.context.scope import RepoScope
from bot.github.ci_files import read_inputs
from bot.main_red.culprit import (
    RangeCommit,
    Ranking,
    RouteChange,
    pull_number_of,
    rank,
    route_changes,
    trace_paths,
)
from bot.main_red.signals import StepRun
from bot.routing.model import RoutedStep, route
from bot.routing.repo_tables import tables_of

MAX_PATH_QUERIES = 6  # listings by path per search: job files, config, a few source dirs
NOTE_DIVERGED = (
    "the first red commit {red7} does not descend from the last green {green7} "
    "(compare says {status}): main's history was rewritten, so the range is a guess "
    "and the bot neither comments on a culprit nor proposes a revert"
)
NOTE_GONE = (
    "the compare of {green7}...{red7} failed ({status}): a commit is gone, so no culprit "
    "can be named"
)
NOTE_TREE_GONE = (
    "the tree of {green7} or {red7} cannot be read from GitHub (the commit is gone): "
    "no culprit can be named"
)
NOTE_TRUNCATED = "the range has {total} commits; only the first {shown} were ranked"
NOTE_PATHS = "only {count} paths were traced to their commits; {skipped} were not"


@dataclass(frozen=True)
class Suspects:
    ranking: Ranking
    changes: tuple[RouteChange, ...]
    before: RoutedStep | None  # the step at the last green commit
    after: RoutedStep | None  # ... and at the first red one
    green_files: Mapping[str, str]  # the generator's files at the last green commit
    notes: tuple[str, ...]
    # False when main's history between the two builds is not a plain line (rewritten,
    # or a commit gone): the ranking is shown, but nothing is written on its word.
    trusted: bool = True


def find_step(steps: Sequence[RoutedStep], key: str) -> RoutedStep | None:
    # A keyless step's routed key is the generator's derived key, as Buildkite sees it.
    return next((step for step in steps if step.key == key), None)


async def find_suspects(
    ctx: RepoScope,
    step_key: str,
    green: StepRun,
    red: StepRun,
    *,
    branch: str,
    lane_env: Mapping[str, str] | None = None,
) -> Suspects:
    """The ranked range between the two runs, the step routed at both ends with the lane's
    own generator inputs (``lane_env``: a nightly step pulls ``-torch-nightly-cpu``)."""
    routing = ctx.config.routing or RoutingConfig()
    tables = tables_of(routing)
    try:
        green_files = await read_inputs(
            ctx.gh, ctx.repo, green.commit, routing.ci_config, ctx.cache
        )
        red_files = await read_inputs(ctx.gh, ctx.repo, red.commit, routing.ci_config, ctx.cache)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) not in (404, 409, 422):
            raise
        # A commit Buildkite built is gone from GitHub (main was force-pushed and the
        # commit collected): nothing can be compared, and nothing is written on a guess.
        note = NOTE_TREE_GONE.format(green7=green.commit[:7], red7=red.commit[:7])
        empty = rank(
            [], job_files=(), routing_files=(), source_dependencies=(), route_changed=False
        )
        return Suspects(empty, (), None, None, {}, (note,), trusted=False)
    before_routes = await ctx.blocking.run(
        route,
        green_files,
        env={"BUILDKITE_BRANCH": branch, "BUILDKITE_COMMIT": green.commit, **(lane_env or {})},
        tables=tables,
    )
    after_routes = await ctx.blocking.run(
        route,
        red_files,
        env={"BUILDKITE_BRANCH": branch, "BUILDKITE_COMMIT": red.commit, **(lane_env or {})},
        tables=tables,
    )
    before = find_step(before_routes.steps, step_key)
    after = find_step(after_routes.steps, step_key)
    changes = route_changes(before, after)
    job_files = {step.file for step in (before, after) if step is not None}
    known = after or before
    dependencies = known.source_file_dependencies if known is not None else ()
    commits, notes, trusted = await range_commits(
        ctx,
        green.commit,
        red.commit,
        interesting=job_files | {routing.ci_config},
        dependencies=dependencies,
    )
    ranking = rank(
        commits,
        job_files=job_files,
        routing_files={routing.ci_config},
        source_dependencies=dependencies,
        route_changed=bool(changes),
    )
    return Suspects(ranking, changes, before, after, green_files, tuple(notes), trusted)


async def range_commits(
    ctx: RepoScope,
    green: str,
    red: str,
    *,
    interesting: set[str],
    dependencies: Sequence[str],
) -> tuple[list[RangeCommit], list[str], bool]:
    """The commits after ``green`` up to ``red`` (oldest first), each with the paths of
    interest it touched."""
    notes: list[str] = []
    try:
        compare = await ctx.gh.getitem(
            "/repos/{owner}/{repo}/compare/{basehead}",
            url_vars=ctx.repo.vars(basehead=f"{green}...{red}"),
        )
    except gidgethub.HTTPException as exc:
        code = int(exc.status_code)
        if code not in (404, 422):
            raise
        notes.append(NOTE_GONE.format(green7=green[:7], red7=red[:7], status=code))
        return [], notes, False
    status = str(compare.get("status") or "")
    if status == "identical":
        # The same commit (or trees GitHub calls the same): nothing came between the two
        # builds and nothing was rewritten; there is simply no commit to rank.
        return [], notes, True
    if status != "ahead":
        notes.append(NOTE_DIVERGED.format(red7=red[:7], green7=green[:7], status=status))
        if status == "behind":
            return [], notes, False
    listed: list[Mapping[str, Any]] = list(compare.get("commits") or [])
    total = int(compare.get("total_commits") or len(listed))
    if total > len(listed):
        notes.append(NOTE_TRUNCATED.format(total=total, shown=len(listed)))
    touched = [str(item.get("filename")) for item in compare.get("files") or []]
    paths = sorted(path for path in interesting if path in touched)
    # A job file may also be a dependency: one listing of it is enough.
    paths += [path for path in trace_paths(touched, dependencies) if path not in paths]
    if len(paths) > MAX_PATH_QUERIES:
        skipped = len(paths) - MAX_PATH_QUERIES
        notes.append(NOTE_PATHS.format(count=MAX_PATH_QUERIES, skipped=skipped))
        paths = paths[:MAX_PATH_QUERIES]
    in_range = {str(item.get("sha")) for item in listed}
    by_commit: dict[str, list[str]] = {}
    for path in paths:
        for sha in await _touching(ctx, red, path, in_range):
            by_commit.setdefault(sha, []).append(path)
    commits = [
        RangeCommit(
            sha=str(item.get("sha")),
            subject=_subject(item),
            files=tuple(by_commit.get(str(item.get("sha")), ())),
            pull_number=pull_number_of(_subject(item)),
        )
        for item in listed
    ]
    return commits, notes, status == "ahead"


def _subject(item: Mapping[str, Any]) -> str:
    message = str((item.get("commit") or {}).get("message") or "")
    return message.splitlines()[0] if message else ""


async def _touching(ctx: RepoScope, head: str, path: str, in_range: set[str]) -> list[str]:
    """The commits of the range that touched ``path`` (one page: the range is short)."""
    found = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/commits{?sha,path,per_page}",
        url_vars=ctx.repo.vars(sha=head, path=path, per_page="100"),
    )
    return [str(item.get("sha")) for item in found if str(item.get("sha")) in in_range]
