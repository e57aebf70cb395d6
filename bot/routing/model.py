"""``route``: every step the generator would emit for a tree, with where it runs and pulls.

Inputs from ``env`` (the process environment is never read): ``BUILDKITE_BRANCH`` (the main
branch picks the postmerge queues and image repository), ``TORCH_NIGHTLY=1`` (the nightly image
suffix), ``BUILDKITE_PULL_REQUEST`` (a number, not ``false``: a PR build, which adds the
``pre-commit`` step) and ``BUILDKITE_COMMIT`` (the image tag; ``$BUILDKITE_COMMIT`` without it).
``RUN_ALL`` and ``NIGHTLY`` decide which steps run, not where: they do not change routes.

As the generator does (ci-routing.md, checked step for step against its outputs on vLLM's
real trees):

- A file's truthy ``group`` replaces every step's own; a step with neither has no group.
- A file's truthy ``depends_on`` fills a step whose own is missing, null or ``[]``, and adds
  the job file itself to each of the file's steps' ``source_file_dependencies``.
- A step whose own ``device`` is an AMD GPU device, and every ``mirror.amd``, take the AMD
  path (``bot.routing.amd``); other mirror targets are ignored by the generator (reported).
- The ``pre-commit`` step of PR builds runs on the host (no plugin, no commit image) on the
  ``pr_step_device`` queue; its file is ``.buildkite/ci_config.yaml`` at line 0; every other
  step that waits for an image build waits for it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bot.routing import rules
from bot.routing.amd import AmdRoute, is_amd_device, mirror_route, own_device_route
from bot.routing.checks import cross_step_problems, step_problems
from bot.routing.problems import RoutingProblem
from bot.routing.read import CI_CONFIG, CiConfig, JobFile, RawStep, read_tree
from bot.routing.rules import Build, PodResources
from bot.routing.tables import RoutingTables

COMMIT_PLACEHOLDER = "$BUILDKITE_COMMIT"
NOT_A_PULL_REQUEST = ("", "false")
MSG_UNKNOWN_MIRROR = "mirror target {target!r} is not known (only amd): the generator ignores it"
MSG_BAD_AMD_MIRROR = "mirror.amd: expected a mapping with a device (the generator refuses it)"


@dataclass(frozen=True)
class RoutedStep:
    key: str
    label: str
    group: str | None
    queue: str
    plugin: str | None
    image_suffix: str | None
    gpus: int
    file: str
    line: int
    device: str | None = None
    num_devices: int | None = None
    num_nodes: int | None = None
    multi_node: bool = False
    depends_on: tuple[str, ...] = ()
    soft_fail: bool = False
    optional: bool = False
    pr_only: bool = False
    mirror_of: str | None = None
    image: str | None = None
    pod: PodResources | None = None
    retry_exit_statuses: tuple[int, ...] = ()
    retry_signal_reasons: tuple[str, ...] = ()
    key_derived: bool = False
    commands: tuple[str, ...] = ()  # as written; the routing check matches required ones
    device_line: int | None = None  # where ``device`` is written: what decided the queue
    # Path prefixes (``!`` excludes) whose change makes the step run: a culprit's evidence.
    source_file_dependencies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Routes:
    steps: tuple[RoutedStep, ...]
    problems: tuple[RoutingProblem, ...] = field(default=())

    @property
    def fatal(self) -> bool:
        return any(problem.fatal for problem in self.problems)


def build_inputs(env: Mapping[str, str], tables: RoutingTables) -> Build:
    return Build(
        on_main=env.get("BUILDKITE_BRANCH") == tables.main_branch,
        torch_nightly=env.get("TORCH_NIGHTLY") == "1",
    )


def route(files: Mapping[str, str], *, env: Mapping[str, str], tables: RoutingTables) -> Routes:
    reading = read_tree(files, tables.step_fields)
    build = build_inputs(env, tables)
    images = _Images(reading.config, build, env.get("BUILDKITE_COMMIT", COMMIT_PLACEHOLDER))
    problems = list(reading.problems)
    steps: list[RoutedStep] = []
    for job_file in reading.job_files:
        for raw in job_file.steps:
            step = _route_step(raw, job_file, build, images, tables, problems)
            if step is None:
                continue
            steps.append(step)
            problems.extend(step_problems(step, raw, tables))
            steps.extend(_mirrors(step, raw, images, build, tables, problems))
    if env.get("BUILDKITE_PULL_REQUEST", "false") not in NOT_A_PULL_REQUEST:
        steps = [_after_pre_commit(step, tables) for step in steps]
        steps.append(_pr_step(build, tables))
    problems.extend(cross_step_problems(steps, tables))
    return Routes(tuple(steps), tuple(problems))


@dataclass(frozen=True)
class _Images:
    config: CiConfig | None
    build: Build
    commit: str

    def image(self, suffix: str | None) -> str | None:
        if suffix is None or self.config is None or self.config.registry is None:
            return None
        repository = self.config.repositories.get("main" if self.build.on_main else "premerge")
        if not isinstance(repository, str):
            return None
        return f"{self.config.registry}/{repository}:{self.commit}{suffix}"


def _route_step(
    raw: RawStep,
    job_file: JobFile,
    build: Build,
    images: _Images,
    tables: RoutingTables,
    problems: list[RoutingProblem],
) -> RoutedStep | None:
    fields = dict(raw.fields)
    own_key = fields.get("key")
    depends_on = _texts(fields.get("depends_on")) or job_file.depends_on or ()
    if job_file.depends_on:
        # The generator makes a change to the job file run the steps that inherit from it.
        fields["source_file_dependencies"] = [
            *_texts(fields.get("source_file_dependencies")),
            job_file.path,
        ]
    group = job_file.group or fields.get("group") or None
    where: dict[str, object] = {
        "key": own_key if isinstance(own_key, str) and own_key else rules.derived_key(raw.label),
        "key_derived": not (isinstance(own_key, str) and own_key),
        "group": group if isinstance(group, str) else None,
        "file": raw.file,
        "line": raw.line,
        "device_line": _line_of(raw, "device"),
        "depends_on": depends_on,
    }
    if is_amd_device(fields.get("device"), tables):
        amd = own_device_route(fields, depends_on, tables)
        return _amd_routed(fields, amd, raw, build, images, tables, problems, "device", **where)
    return _routed(fields, build, images, tables, **where)


def _routed(
    fields: Mapping[str, object],
    build: Build,
    images: _Images,
    tables: RoutingTables,
    **where: object,
) -> RoutedStep:
    plugin = rules.plugin(fields, tables)
    suffix = rules.image_suffix(fields, plugin, build, tables)
    gpus = rules.gpus(fields, plugin, tables)
    retry = rules.auto_retry(fields, tables)
    nodes = rules.num_nodes(fields)
    return RoutedStep(
        label=str(fields["label"]),
        queue=rules.queue(fields, build, tables),
        plugin=plugin,
        image_suffix=suffix,
        gpus=gpus,
        device=rules.device(fields),
        num_devices=rules.num_devices(fields),
        num_nodes=nodes,
        multi_node=nodes is not None and nodes >= 2,
        soft_fail=bool(fields.get("soft_fail")),
        optional=fields.get("optional") is True,
        commands=_texts(fields.get("commands")),
        source_file_dependencies=_texts(fields.get("source_file_dependencies")),
        image=images.image(suffix),
        pod=rules.pod(fields, plugin, gpus, tables),
        retry_exit_statuses=retry.exit_statuses,
        retry_signal_reasons=retry.signal_reasons,
        **where,  # type: ignore[arg-type]
    )


def _line_of(raw: RawStep, name: str) -> int | None:
    where = raw.positions.get(name)
    return None if where is None else where.line


def _texts(value: object) -> tuple[str, ...]:
    # read.py checked the type: a list of text, when given at all.
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()


def _mirrors(
    step: RoutedStep,
    raw: RawStep,
    images: _Images,
    build: Build,
    tables: RoutingTables,
    problems: list[RoutingProblem],
) -> list[RoutedStep]:
    mirror = raw.fields.get("mirror")
    if not isinstance(mirror, dict):
        return []
    where = raw.positions["mirror"]
    for target in mirror:
        if target != "amd":
            message = MSG_UNKNOWN_MIRROR.format(target=target)
            problems.append(RoutingProblem(raw.file, where.line, where.column, message))
    amd = mirror.get("amd")
    if not amd:
        return []  # the generator makes no mirror of an empty one
    if not isinstance(amd.get("device"), str):
        problems.append(
            RoutingProblem(raw.file, where.line, where.column, MSG_BAD_AMD_MIRROR, fatal=True)
        )
        return []
    route = mirror_route(raw.fields, amd, tables)
    mirrored = _amd_routed(
        {**raw.fields, **amd},
        route,
        raw,
        build,
        images,
        tables,
        problems,
        "mirror",
        key=tables.amd_key_prefix + step.key,
        group=None,
        file=step.file,
        line=step.line,
        depends_on=route.depends_on,
        mirror_of=step.key,
    )
    return [] if mirrored is None else [mirrored]


def _amd_routed(
    fields: Mapping[str, object],
    amd: AmdRoute,
    raw: RawStep,
    build: Build,
    images: _Images,
    tables: RoutingTables,
    problems: list[RoutingProblem],
    at: str,
    /,
    **where: object,
) -> RoutedStep | None:
    """An AMD step routed, or None (and a fatal problem) where the generator refuses it."""
    if amd.refusal is not None:
        place = raw.positions.get(at) or raw.positions.get("label")
        line, column = (place.line, place.column) if place else (raw.line, raw.column)
        problems.append(RoutingProblem(raw.file, line, column, amd.refusal, fatal=True))
        return None
    # Docker-in-docker runs its own containers (no plugin); native AMD steps are pods whose
    # ROCm image is not the commit's: neither pulls a commit image.
    routed = _routed(
        {**fields, "label": amd.label, "no_plugin": True}, build, images, tables, **where
    )
    return replace(
        routed,
        queue=amd.queue,
        plugin=amd.plugin,
        gpus=amd.gpus,
        group=tables.amd_group,
        device=amd.device,
        num_devices=amd.num_devices,
        num_nodes=amd.num_nodes,
        multi_node=amd.num_nodes is not None and amd.num_nodes >= 2,
        depends_on=amd.depends_on,
    )


def _after_pre_commit(step: RoutedStep, tables: RoutingTables) -> RoutedStep:
    """On a PR build a step that waits for an image build also waits for pre-commit."""
    builds_image = tables.image_build_key in step.key
    waits_for_image = any(tables.image_build_key in key for key in step.depends_on)
    if builds_image or not waits_for_image or tables.pr_step_key in step.depends_on:
        return step
    return replace(step, depends_on=(*step.depends_on, tables.pr_step_key))


def _pr_step(build: Build, tables: RoutingTables) -> RoutedStep:
    fields = {"label": tables.pr_step_label, "device": tables.pr_step_device, "no_plugin": True}
    images = _Images(None, build, COMMIT_PLACEHOLDER)
    return _routed(
        fields,
        build,
        images,
        tables,
        key=tables.pr_step_key,
        group=tables.pr_step_group,
        file=CI_CONFIG,
        line=0,
        pr_only=True,
    )
