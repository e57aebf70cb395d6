"""``route``: every step the generator would emit for a tree, with where it runs and pulls.

Inputs from ``env`` (the process environment is never read): ``BUILDKITE_BRANCH`` (the main
branch picks the postmerge queues and image repository), ``TORCH_NIGHTLY=1`` (the nightly image
suffix), ``BUILDKITE_PULL_REQUEST`` (a number, not ``false``: a PR build, which adds the
``pre-commit`` step) and ``BUILDKITE_COMMIT`` (the image tag; ``$BUILDKITE_COMMIT`` without it).
``RUN_ALL`` and ``NIGHTLY`` decide which steps run, not where: they do not change routes.

Choices where ci-routing.md is silent:

- A step's own ``group`` wins over its file's ``group``.
- A file's ``depends_on`` also fills a step whose ``depends_on`` is missing or ``[]``.
- An AMD mirror step takes the step's fields with ``mirror.amd``'s on top (``device``,
  ``num_devices``, ``dind``...); ``dind`` defaults to true (docker-in-docker, no plugin);
  either way it pulls no commit image. Mirror targets other than ``amd`` are reported.
- The ``pre-commit`` step of PR builds runs on the host (no plugin, no commit image) on the
  ``pr_step_device`` queue; its file is ``.buildkite/ci_config.yaml`` at line 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bot.routing import rules
from bot.routing.checks import cross_step_problems, mirror_problems, step_problems
from bot.routing.problems import RoutingProblem
from bot.routing.read import CI_CONFIG, CiConfig, JobFile, RawStep, read_tree
from bot.routing.rules import PLUGIN_KUBERNETES, Build, PodResources
from bot.routing.tables import RoutingTables

COMMIT_PLACEHOLDER = "$BUILDKITE_COMMIT"
NOT_A_PULL_REQUEST = ("", "false")
MSG_UNKNOWN_MIRROR = "mirror target {target!r} is not known (only amd)"
MSG_BAD_AMD_MIRROR = "mirror.amd: expected a mapping with a device"


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
            step = _route_step(raw, job_file, build, images, tables)
            steps.append(step)
            problems.extend(step_problems(step, raw, tables))
            steps.extend(_mirrors(step, raw, images, build, tables, problems))
    if env.get("BUILDKITE_PULL_REQUEST", "false") not in NOT_A_PULL_REQUEST:
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
    raw: RawStep, job_file: JobFile, build: Build, images: _Images, tables: RoutingTables
) -> RoutedStep:
    fields = raw.fields
    own_key = fields.get("key")
    depends_on = fields.get("depends_on") or job_file.depends_on or ()
    group = fields.get("group", job_file.group)
    return _routed(
        fields,
        build,
        images,
        tables,
        key=own_key if isinstance(own_key, str) else rules.derived_key(raw.label),
        key_derived=not isinstance(own_key, str),
        group=group if isinstance(group, str) else None,
        file=raw.file,
        line=raw.line,
        device_line=_line_of(raw, "device"),
        depends_on=tuple(str(key) for key in depends_on) if isinstance(depends_on, tuple) else (),
    )


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
    if amd is None:
        return []
    if not isinstance(amd, dict) or not isinstance(amd.get("device"), str):
        problems.append(RoutingProblem(raw.file, where.line, where.column, MSG_BAD_AMD_MIRROR))
        return []
    mirrored = _amd_step(step, raw, amd, images, build, tables)
    problems.extend(mirror_problems(mirrored, raw, tables))
    return [mirrored]


def _amd_step(
    step: RoutedStep,
    raw: RawStep,
    amd: Mapping[str, object],
    images: _Images,
    build: Build,
    tables: RoutingTables,
) -> RoutedStep:
    fields = {key: value for key, value in raw.fields.items() if key != "mirror"}
    fields.update(amd)
    fields["label"] = tables.amd_label.format(label=step.label, device=amd["device"])
    # Docker-in-docker runs its own containers (no plugin); native AMD steps are pods whose
    # ROCm image is not the commit's.
    fields["no_plugin"] = True
    routed = _routed(
        fields,
        build,
        images,
        tables,
        key=tables.amd_key_prefix + step.key,
        group=step.group,
        file=step.file,
        line=step.line,
        depends_on=step.depends_on,
        mirror_of=step.key,
    )
    native = amd.get("dind", raw.fields.get("dind", True)) is False
    return replace(
        routed,
        plugin=PLUGIN_KUBERNETES if native else None,
        gpus=tables.amd_device_gpus.get(str(amd["device"]), routed.gpus),
    )


def _pr_step(build: Build, tables: RoutingTables) -> RoutedStep:
    fields = {"label": tables.pr_step_label, "device": tables.pr_step_device, "no_plugin": True}
    images = _Images(None, build, COMMIT_PLACEHOLDER)
    return _routed(
        fields,
        build,
        images,
        tables,
        key=tables.pr_step_key,
        group=None,
        file=CI_CONFIG,
        line=0,
        pr_only=True,
    )
