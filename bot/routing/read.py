"""Read ``.buildkite/ci_config.yaml`` and the job files under its ``job_dirs``, from text,
accepting and refusing what vLLM's pipeline generator accepts and refuses.

``ci_config.yaml``: ``name``, ``job_dirs`` (every ``*.yaml`` below one, at any depth, is a job
file: ``.yml`` is not read), ``registries`` and ``repositories`` must be given and not empty,
and each job directory must hold a file; ``run_all_patterns``, ``run_all_exclude_patterns`` and
``github_repo_name`` are optional; other keys are ignored by the generator and reported here. A
job file is a mapping of ``group``, ``depends_on`` and ``steps`` (other keys are ignored and
reported).

Fatal problems (the generator refuses the pipeline): YAML it cannot load, a file that is not a
mapping, ``steps`` that is not a list, a step that is not a mapping or has no text label, a
known step field whose value the generator's model cannot coerce (``step_fields``), a file's
truthy ``group`` that is not text or truthy ``depends_on`` that is not a list of keys, and the
generator's own cross-field rules (``num_nodes`` needs ``num_devices``; ``concurrency`` and
``concurrency_group`` go together, the group not blank; ``retry.automatic`` is true, false, a
mapping or a list). Unknown step fields are dropped by the
generator: they are kept aside for the model to report, never fatal.

A null (``~``) optional field reads as missing: ``depends_on: ~`` inherits the file's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from yaml.nodes import MappingNode, Node, SequenceNode

from bot.routing import step_fields
from bot.routing.problems import RoutingProblem
from bot.routing.yaml_nodes import Position, compose, construct, mapping_items, position

CI_CONFIG = ".buildkite/ci_config.yaml"
JOB_SUFFIX = ".yaml"

MSG_NO_CONFIG = "no .buildkite/ci_config.yaml: the generator has nothing to read"
MSG_NOT_A_MAPPING = "expected a mapping at the top of the file"
MSG_UNKNOWN_CONFIG_KEY = "unknown ci_config key {key!r}: the generator ignores it"
MSG_UNKNOWN_TOP_LEVEL = (
    "unknown top-level key {key!r}: the generator reads only group, depends_on and steps"
)
MSG_CONFIG_REQUIRED = "ci_config needs a non-empty {key!r}: the generator refuses the pipeline"
MSG_NO_JOB_DIRS = "ci_config has no job_dirs: no job file is read"
MSG_JOB_DIR_MISSING = "job directory {directory!r} holds no file: the generator refuses it"
MSG_CONFIG_FIELD = "{key}: expected {expected}"
MSG_STEPS_NOT_A_LIST = "steps: expected a list of steps"
MSG_STEP_NOT_A_MAPPING = "a step must be a mapping with a label"
MSG_NO_LABEL = "a step without a text label (the generator requires one)"
MSG_BAD_FIELD = "{field}: {reason} (the generator refuses the pipeline)"
MSG_FILE_GROUP = "group: expected text (the generator refuses the pipeline)"
MSG_FILE_DEPENDS_ON = (
    "depends_on: expected a list of step keys (the generator refuses the pipeline)"
)
MSG_NODES_WITHOUT_DEVICES = "num_nodes without num_devices: the generator refuses the pipeline"
MSG_CONCURRENCY_PAIR = (
    "concurrency and concurrency_group go together: the generator refuses the pipeline"
)
MSG_CONCURRENCY_GROUP_BLANK = "concurrency_group is blank: the generator refuses the pipeline"
MSG_RETRY_AUTOMATIC = (
    "retry.automatic: expected true, false, a mapping or a list (the generator refuses the "
    "pipeline)"
)

_REQUIRED_CONFIG = ("name", "job_dirs", "registries", "repositories")
_CONFIG_KEYS = frozenset(
    {*_REQUIRED_CONFIG, "run_all_patterns", "run_all_exclude_patterns", "github_repo_name"}
)
_JOB_FILE_KEYS = frozenset({"group", "depends_on", "steps"})


@dataclass(frozen=True)
class CiConfig:
    job_dirs: tuple[str, ...] = ()
    registry: str | None = None
    repositories: Mapping[str, object] = field(default_factory=dict)
    run_all_patterns: tuple[str, ...] = ()
    run_all_exclude_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class RawStep:
    """A step as the generator holds it: its known fields, coerced, and its unknown keys."""

    file: str
    line: int
    column: int
    fields: Mapping[str, object]
    positions: Mapping[str, Position]
    unknown: tuple[tuple[str, Position], ...] = ()

    @property
    def label(self) -> str:
        return str(self.fields["label"])


@dataclass(frozen=True)
class JobFile:
    path: str
    group: str | None
    depends_on: tuple[str, ...] | None
    steps: tuple[RawStep, ...]
    depends_on_line: int | None = None  # where the file's own depends_on is written


@dataclass(frozen=True)
class Reading:
    config: CiConfig | None
    job_files: tuple[JobFile, ...]
    problems: tuple[RoutingProblem, ...]


def read_tree(files: Mapping[str, str], step_fields_known: frozenset[str]) -> Reading:
    """The config and every job file it names, in path order, with every problem found."""
    if CI_CONFIG not in files:
        return Reading(None, (), (RoutingProblem(CI_CONFIG, 0, 0, MSG_NO_CONFIG, fatal=True),))
    problems: list[RoutingProblem] = []
    config = read_config(files[CI_CONFIG], problems)
    paths = sorted(job_paths(files, config.job_dirs if config else ()))
    if config is not None:
        problems.extend(_missing_dirs(config.job_dirs, files))
    job_files: list[JobFile] = []
    for path in paths:
        job_file = read_job_file(path, files[path], step_fields_known, problems)
        if job_file is not None:
            job_files.append(job_file)
    return Reading(config, tuple(job_files), tuple(problems))


def job_paths(files: Iterable[str], job_dirs: tuple[str, ...]) -> list[str]:
    """The paths among ``files`` the generator reads as job files."""
    prefixes = tuple(_directory(directory) for directory in job_dirs)
    return [path for path in files if path.startswith(prefixes) and path.endswith(JOB_SUFFIX)]


def _directory(job_dir: str) -> str:
    return job_dir.removeprefix("./").rstrip("/") + "/"


def _missing_dirs(job_dirs: tuple[str, ...], files: Mapping[str, str]) -> list[RoutingProblem]:
    return [
        RoutingProblem(CI_CONFIG, 1, 1, MSG_JOB_DIR_MISSING.format(directory=directory), True)
        for directory in job_dirs
        if not any(path.startswith(_directory(directory)) for path in files)
    ]


def job_dirs_of(ci_config: str) -> tuple[str, ...]:
    """The ``job_dirs`` a ``ci_config.yaml`` names (none when it cannot be read: the
    model then reports why, from the same text)."""
    config = read_config(ci_config, [])
    return config.job_dirs if config is not None else ()


def read_config(text: str, problems: list[RoutingProblem]) -> CiConfig | None:
    root = _root(CI_CONFIG, text, problems)
    if root is None:
        return None
    values: dict[str, object] = {}
    for name, node in mapping_items(root):
        where = position(node)
        if name not in _CONFIG_KEYS:
            message = MSG_UNKNOWN_CONFIG_KEY.format(key=name)
            problems.append(RoutingProblem(CI_CONFIG, where.line, where.column, message))
        values[name] = construct(node)
    for name in _REQUIRED_CONFIG:
        if not values.get(name):
            message = MSG_NO_JOB_DIRS if name == "job_dirs" else MSG_CONFIG_REQUIRED
            problems.append(RoutingProblem(CI_CONFIG, 1, 1, message.format(key=name), True))
    job_dirs = _texts_or_problem(root, "job_dirs", values, problems)
    registry = values.get("registries")
    return CiConfig(
        job_dirs=job_dirs,
        registry=registry if isinstance(registry, str) else None,
        repositories=_mapping(values.get("repositories")),
        run_all_patterns=_texts_or_problem(root, "run_all_patterns", values, problems),
        run_all_exclude_patterns=_texts_or_problem(
            root, "run_all_exclude_patterns", values, problems
        ),
    )


def _texts_or_problem(
    root: MappingNode, name: str, values: Mapping[str, object], problems: list[RoutingProblem]
) -> tuple[str, ...]:
    value = values.get(name)
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    where = position(dict(mapping_items(root))[name])
    message = MSG_CONFIG_FIELD.format(key=name, expected="a list of text")
    problems.append(RoutingProblem(CI_CONFIG, where.line, where.column, message, True))
    return ()


def read_job_file(
    path: str, text: str, step_fields_known: frozenset[str], problems: list[RoutingProblem]
) -> JobFile | None:
    root = _root(path, text, problems)
    if root is None:
        return None
    nodes = dict(mapping_items(root))
    for name, node in mapping_items(root):
        if name not in _JOB_FILE_KEYS:
            where = position(node)
            message = MSG_UNKNOWN_TOP_LEVEL.format(key=name)
            problems.append(RoutingProblem(path, where.line, where.column, message))
    steps = _steps(path, nodes.get("steps"), step_fields_known, problems)
    if steps is None:
        return None
    group = _file_group(path, nodes.get("group"), problems)
    inherits = any(not step.fields.get("depends_on") for step in steps)
    depends_on = _file_depends_on(path, nodes.get("depends_on"), inherits, problems)
    written = nodes.get("depends_on")
    return JobFile(
        path,
        group,
        depends_on,
        tuple(steps),
        depends_on_line=position(written).line if written is not None else None,
    )


def _steps(
    path: str, node: Node | None, known: frozenset[str], problems: list[RoutingProblem]
) -> list[RawStep] | None:
    """The file's steps (none without ``steps``); None when ``steps`` is not a list."""
    if node is None:
        return []
    if not isinstance(node, SequenceNode):
        where = position(node)
        problems.append(RoutingProblem(path, where.line, where.column, MSG_STEPS_NOT_A_LIST, True))
        return None
    steps: list[RawStep] = []
    for item in node.value:
        step = read_step(path, item, known, problems)
        if step is not None:
            steps.append(step)
    return steps


def _file_group(path: str, node: Node | None, problems: list[RoutingProblem]) -> str | None:
    """The file's group when it is truthy (it then replaces every step's own)."""
    value = construct(node) if node is not None else None
    if not value:
        return None
    if isinstance(value, str):
        return value
    where = position(node)  # type: ignore[arg-type]  # a value came from it
    problems.append(RoutingProblem(path, where.line, where.column, MSG_FILE_GROUP, True))
    return None


def _file_depends_on(
    path: str, node: Node | None, inherited: bool, problems: list[RoutingProblem]
) -> tuple[str, ...] | None:
    """The file's ``depends_on`` when truthy (it then fills every step's empty one). The
    generator copies it unchecked: a value that is not a list of keys refuses the pipeline
    only once a step inherits it."""
    value = construct(node) if node is not None else None
    if not value or not inherited:
        return None
    coerced = step_fields.coerce("depends_on", value)
    if coerced.error is None and isinstance(coerced.value, list):
        return tuple(coerced.value)
    where = position(node)  # type: ignore[arg-type]  # a value came from it
    problems.append(RoutingProblem(path, where.line, where.column, MSG_FILE_DEPENDS_ON, True))
    return None


def read_step(
    path: str, node: Node, known: frozenset[str], problems: list[RoutingProblem]
) -> RawStep | None:
    where = position(node)
    if not isinstance(node, MappingNode):
        problems.append(
            RoutingProblem(path, where.line, where.column, MSG_STEP_NOT_A_MAPPING, True)
        )
        return None
    values: dict[str, object] = {}
    positions: dict[str, Position] = {}
    unknown: list[tuple[str, Position]] = []
    refused: list[str] = []
    for name, value_node in mapping_items(node):
        at = position(value_node)
        if name not in known:
            unknown.append((name, at))
            continue
        coerced = step_fields.coerce(name, construct(value_node))
        if coerced.error is not None:
            message = MSG_BAD_FIELD.format(field=name, reason=coerced.error)
            problems.append(RoutingProblem(path, at.line, at.column, message, True))
            refused.append(name)
            continue
        positions[name] = at
        if coerced.value is not None:
            values[name] = coerced.value
    if "label" not in values:
        if "label" not in refused:  # a label that is not text is reported already
            problems.append(RoutingProblem(path, where.line, where.column, MSG_NO_LABEL, True))
        return None
    rule_problems = _cross_field_problems(path, values, positions, where)
    problems.extend(rule_problems)
    if refused or rule_problems:
        return None
    return RawStep(path, where.line, where.column, values, positions, tuple(unknown))


def _cross_field_problems(
    path: str, values: Mapping[str, object], positions: Mapping[str, Position], where: Position
) -> list[RoutingProblem]:
    found: list[tuple[str, str]] = []
    if values.get("num_nodes") and not values.get("num_devices"):
        found.append(("num_nodes", MSG_NODES_WITHOUT_DEVICES))
    if ("concurrency" in values) != ("concurrency_group" in values):
        name = "concurrency" if "concurrency" in values else "concurrency_group"
        found.append((name, MSG_CONCURRENCY_PAIR))
    group = values.get("concurrency_group")
    if isinstance(group, str) and not group.strip():
        found.append(("concurrency_group", MSG_CONCURRENCY_GROUP_BLANK))
    retry = values.get("retry")
    automatic = retry.get("automatic") if isinstance(retry, dict) else None
    if automatic is not None and not isinstance(automatic, bool | dict | list):
        found.append(("retry", MSG_RETRY_AUTOMATIC))
    problems = []
    for name, message in found:
        at = positions.get(name, where)
        problems.append(RoutingProblem(path, at.line, at.column, message, fatal=True))
    return problems


def _root(path: str, text: str, problems: list[RoutingProblem]) -> MappingNode | None:
    root, found = compose(path, text)
    problems.extend(found)
    if root is None:
        return None
    if not isinstance(root, MappingNode):
        where = position(root)
        problems.append(RoutingProblem(path, where.line, where.column, MSG_NOT_A_MAPPING, True))
        return None
    return root


def _mapping(value: object) -> Mapping[str, object]:
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else {}
