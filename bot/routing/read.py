"""Read ``.buildkite/ci_config.yaml`` and the job files under its ``job_dirs``, from text.

``ci_config.yaml`` (choices where ci-routing.md is silent): ``job_dirs`` (required, a list of
directories; every ``*.yaml`` below one, at any depth, is a job file: ``.yml`` is not read),
``registries`` (the image registry), ``repositories`` (``main`` and ``premerge``),
``run_all_patterns``, ``run_all_exclude_patterns`` and ``name``. A job file is a mapping of
``group``, ``depends_on`` and ``steps`` (a list of step mappings, each with a ``label``).

Fatal problems (the generator would refuse the input too): anything ``yaml_nodes.compose``
refuses, unknown top-level or config keys, a step that is not a mapping or has no text label,
and a known step field of the wrong type (the field is left out). Unknown step fields are not
fatal: the generator drops them, so they are kept aside for the model to report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from yaml.nodes import MappingNode, Node, SequenceNode

from bot.routing.problems import RoutingProblem
from bot.routing.yaml_nodes import Position, compose, construct, mapping_items, position

CI_CONFIG = ".buildkite/ci_config.yaml"
JOB_SUFFIX = ".yaml"

MSG_NO_CONFIG = "no .buildkite/ci_config.yaml: the generator has nothing to read"
MSG_NOT_A_MAPPING = "expected a mapping at the top of the file"
MSG_UNKNOWN_CONFIG_KEY = "unknown ci_config key {key!r}"
MSG_UNKNOWN_TOP_LEVEL = "unknown top-level key {key!r}: a job file has group, depends_on, steps"
MSG_NO_JOB_DIRS = "ci_config has no job_dirs: no job file is read"
MSG_STEPS_NOT_A_LIST = "steps: expected a list of steps"
MSG_STEP_NOT_A_MAPPING = "a step must be a mapping with a label"
MSG_NO_LABEL = "a step without a text label (the generator requires one)"
MSG_BAD_FIELD = "{field}: expected {expected}"

_EXPECTED = {
    "str": "text",
    "int": "a whole number",
    "bool": "true or false",
    "keys": "a step key or a list of step keys",
    "texts": "a list of text",
    "map": "a mapping",
    "soft_fail": "true, false or a list of exit statuses",
    "any": "anything",
}

# The kind of each known step field; a field added by table overrides is taken as it is.
STEP_FIELD_KINDS: Mapping[str, str] = {
    "label": "str",
    "group": "str",
    "key": "str",
    "depends_on": "keys",
    "commands": "texts",
    "device": "str",
    "num_devices": "int",
    "num_nodes": "int",
    "no_plugin": "bool",
    "soft_fail": "soft_fail",
    "optional": "bool",
    "parallelism": "int",
    "timeout_in_minutes": "int",
    "env": "map",
    "retry": "map",
    "working_dir": "str",
    "source_file_dependencies": "texts",
    "agent_tags": "any",
    "concurrency": "int",
    "concurrency_group": "str",
    "mount_buildkite_agent": "bool",
    "no_gpu": "bool",
    "dind": "bool",
    "mirror": "map",
}
_CONFIG_KINDS: Mapping[str, str] = {
    "name": "str",
    "job_dirs": "texts",
    "registries": "str",
    "repositories": "map",
    "run_all_patterns": "texts",
    "run_all_exclude_patterns": "texts",
}
_JOB_FILE_KINDS: Mapping[str, str] = {"group": "str", "depends_on": "keys", "steps": "any"}


@dataclass(frozen=True)
class CiConfig:
    job_dirs: tuple[str, ...] = ()
    registry: str | None = None
    repositories: Mapping[str, object] = field(default_factory=dict)
    run_all_patterns: tuple[str, ...] = ()
    run_all_exclude_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class RawStep:
    """A step as written: its known, well-typed fields and the unknown keys it had."""

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


@dataclass(frozen=True)
class Reading:
    config: CiConfig | None
    job_files: tuple[JobFile, ...]
    problems: tuple[RoutingProblem, ...]


def read_tree(files: Mapping[str, str], step_fields: frozenset[str]) -> Reading:
    """The config and every job file it names, in path order, with every problem found."""
    if CI_CONFIG not in files:
        return Reading(None, (), (RoutingProblem(CI_CONFIG, 0, 0, MSG_NO_CONFIG, fatal=True),))
    problems: list[RoutingProblem] = []
    config = read_config(files[CI_CONFIG], problems)
    job_files: list[JobFile] = []
    for path in sorted(job_paths(files, config.job_dirs if config else ())):
        job_file = read_job_file(path, files[path], step_fields, problems)
        if job_file is not None:
            job_files.append(job_file)
    return Reading(config, tuple(job_files), tuple(problems))


def job_paths(files: Iterable[str], job_dirs: tuple[str, ...]) -> list[str]:
    """The paths among ``files`` the generator reads as job files."""
    prefixes = tuple(directory.rstrip("/") + "/" for directory in job_dirs)
    return [path for path in files if path.startswith(prefixes) and path.endswith(JOB_SUFFIX)]


def job_dirs_of(ci_config: str) -> tuple[str, ...]:
    """The ``job_dirs`` a ``ci_config.yaml`` names (none when it cannot be read: the
    model then reports why, from the same text)."""
    config = read_config(ci_config, [])
    return config.job_dirs if config is not None else ()


def read_config(text: str, problems: list[RoutingProblem]) -> CiConfig | None:
    root = _root(CI_CONFIG, text, problems)
    if root is None:
        return None
    values = _fields(CI_CONFIG, root, _CONFIG_KINDS.get, MSG_UNKNOWN_CONFIG_KEY, problems)[0]
    job_dirs = values.get("job_dirs", ())
    if not job_dirs:
        problems.append(RoutingProblem(CI_CONFIG, 1, 1, MSG_NO_JOB_DIRS, fatal=True))
    registry = values.get("registries")
    return CiConfig(
        job_dirs=_tuple(job_dirs),
        registry=registry if isinstance(registry, str) else None,
        repositories=_mapping(values.get("repositories", {})),
        run_all_patterns=_tuple(values.get("run_all_patterns", ())),
        run_all_exclude_patterns=_tuple(values.get("run_all_exclude_patterns", ())),
    )


def read_job_file(
    path: str, text: str, step_fields: frozenset[str], problems: list[RoutingProblem]
) -> JobFile | None:
    root = _root(path, text, problems)
    if root is None:
        return None
    values, positions, _ = _fields(path, root, _JOB_FILE_KINDS.get, MSG_UNKNOWN_TOP_LEVEL, problems)
    steps_node = dict(mapping_items(root)).get("steps")
    steps: list[RawStep] = []
    if isinstance(steps_node, SequenceNode):
        for node in steps_node.value:
            step = read_step(path, node, step_fields, problems)
            if step is not None:
                steps.append(step)
    elif steps_node is not None:
        where = positions["steps"]
        problems.append(RoutingProblem(path, where.line, where.column, MSG_STEPS_NOT_A_LIST, True))
    group = values.get("group")
    depends_on = values.get("depends_on")
    return JobFile(
        path,
        group if isinstance(group, str) else None,
        _tuple(depends_on) if depends_on is not None else None,
        tuple(steps),
    )


def read_step(
    path: str, node: Node, step_fields: frozenset[str], problems: list[RoutingProblem]
) -> RawStep | None:
    where = position(node)
    if not isinstance(node, MappingNode):
        problems.append(
            RoutingProblem(path, where.line, where.column, MSG_STEP_NOT_A_MAPPING, True)
        )
        return None

    def kind(name: str) -> str | None:
        return STEP_FIELD_KINDS.get(name, "any") if name in step_fields else None

    values, positions, unknown = _fields(path, node, kind, None, problems)
    if "label" not in values:
        problems.append(RoutingProblem(path, where.line, where.column, MSG_NO_LABEL, True))
        return None
    return RawStep(path, where.line, where.column, values, positions, tuple(unknown))


def _root(path: str, text: str, problems: list[RoutingProblem]) -> MappingNode | None:
    root, refused = compose(path, text)
    problems.extend(refused)
    if root is None:
        return None
    if not isinstance(root, MappingNode):
        where = position(root)
        problems.append(RoutingProblem(path, where.line, where.column, MSG_NOT_A_MAPPING, True))
        return None
    return root


def _fields(
    path: str,
    node: MappingNode,
    kind_of: Callable[[str], str | None],
    unknown_message: str | None,
    problems: list[RoutingProblem],
) -> tuple[dict[str, object], dict[str, Position], list[tuple[str, Position]]]:
    """Known keys' checked values and positions, and the unknown keys with theirs.

    With ``unknown_message`` an unknown key is a fatal problem; without, it is returned.
    """
    values: dict[str, object] = {}
    positions: dict[str, Position] = {}
    unknown: list[tuple[str, Position]] = []
    for name, value_node in mapping_items(node):
        where = position(value_node)
        kind = kind_of(name)
        if kind is None:
            if unknown_message is not None:
                message = unknown_message.format(key=name)
                problems.append(RoutingProblem(path, where.line, where.column, message, True))
            unknown.append((name, where))
            continue
        value = _checked(construct(value_node), kind)
        if value is _BAD:
            message = MSG_BAD_FIELD.format(field=name, expected=_EXPECTED[kind])
            problems.append(RoutingProblem(path, where.line, where.column, message, True))
            continue
        values[name] = value
        positions[name] = where
    return values, positions, unknown


_BAD = object()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _checked(value: object, kind: str) -> object:
    """``value`` if it is of ``kind`` (lists as tuples, a single key as a tuple), else _BAD."""
    checks: dict[str, Callable[[object], bool]] = {
        "str": lambda v: isinstance(v, str),
        "int": _is_int,
        "bool": lambda v: isinstance(v, bool),
        "texts": _is_texts,
        "keys": lambda v: isinstance(v, str) or _is_texts(v),
        "map": lambda v: isinstance(v, dict),
        "soft_fail": lambda v: isinstance(v, bool | list),
        "any": lambda v: True,
    }
    if not checks[kind](value):
        return _BAD
    if kind == "keys" and isinstance(value, str):
        return (value,)
    if kind in ("texts", "keys"):
        return _tuple(value)
    return value


def _tuple(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()


def _mapping(value: object) -> Mapping[str, object]:
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else {}
