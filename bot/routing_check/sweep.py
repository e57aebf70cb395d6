"""A migration sweep, planned: which steps move, the job-file edits, and the proof.

Every step the migration's ``select`` matches, less those an ``exclude`` entry matches,
gets ``set``'s values — only the keys it lacks or holds differently, each edit as small
as ``bot.edit.yaml_steps`` can make it. The model then routes the edited tree: the
sweep is sound only when exactly the moved steps route differently ("nothing else
changes"), and the plan says which others did if any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bot.config.path_globs import path_matches
from bot.config.routing import MigrationConfig, StepMatch
from bot.edit.yaml_steps import Value, set_steps_keys
from bot.routing.model import RoutedStep, Routes, route
from bot.routing.tables import RoutingTables

NO_PLUGIN = "none"


@dataclass(frozen=True)
class Move:
    before: RoutedStep
    after: RoutedStep | None  # None: the edited tree lost the step (a failed proof)


@dataclass(frozen=True)
class SweepPlan:
    moves: tuple[Move, ...]
    excluded: tuple[tuple[RoutedStep, str], ...]  # each with the reason the config gives
    edits: Mapping[str, tuple[str, str]]  # file -> (old text, new text), changed files only
    others_changed: tuple[str, ...]  # keys of steps that moved but were not selected

    @property
    def proven(self) -> bool:
        return not self.others_changed and all(move.after is not None for move in self.moves)


def matches(step: RoutedStep, match: StepMatch) -> bool:
    """Whether every field ``match`` gives fits ``step``."""
    texts = {
        "key": step.key,
        "label": step.label,
        "group": step.group,
        "queue": step.queue,
        "device": step.device,
    }
    for name, value in texts.items():
        glob = getattr(match, name)
        if glob is not None and (value is None or not fnmatchcase(value, glob)):
            return False
    if match.file is not None and not path_matches(step.file, match.file):
        return False
    if match.plugin is not None and (step.plugin or NO_PLUGIN) != match.plugin:
        return False
    return match.multi_node is None or step.multi_node == match.multi_node


def plan_sweep(
    files: Mapping[str, str],
    migration: MigrationConfig,
    *,
    env: Mapping[str, str],
    tables: RoutingTables,
) -> SweepPlan:
    before = route(files, env=env, tables=tables)
    selected = [s for s in before.steps if s.mirror_of is None and matches(s, migration.select)]
    excluded = [
        (step, reason)
        for step in selected
        for reason in [next((r.reason for r in migration.exclude if matches(step, r)), None)]
        if reason is not None
    ]
    left_out = {step.key for step, _ in excluded}
    moving = [step for step in selected if step.key not in left_out]
    values: dict[str, Value] = migration.set.model_dump(exclude_none=True)
    edits = _edits(files, moving, values)
    edited = {**files, **{path: new for path, (_, new) in edits.items()}}
    after = route(edited, env=env, tables=tables)
    return SweepPlan(
        moves=_moves(moving, after),
        excluded=tuple(excluded),
        edits=edits,
        others_changed=_others(before, after, {step.key for step in moving}),
    )


def _edits(
    files: Mapping[str, str], moving: Sequence[RoutedStep], values: Mapping[str, Value]
) -> dict[str, tuple[str, str]]:
    by_file: dict[str, dict[int, Mapping[str, Value]]] = {}
    for step in moving:
        by_file.setdefault(step.file, {})[step.line] = values
    edits = {}
    for path, steps in by_file.items():
        new = set_steps_keys(files[path], steps, filename=path)
        if new != files[path]:
            edits[path] = (files[path], new)
    return edits


def _moves(moving: Sequence[RoutedStep], after: Routes) -> tuple[Move, ...]:
    """The selected steps that route differently now (one already there is no move)."""
    routed = {step.key: step for step in after.steps}
    return tuple(
        Move(step, routed.get(step.key))
        for step in moving
        if step.key not in routed or _routing(routed[step.key]) != _routing(step)
    )


def _others(before: Routes, after: Routes, moving: set[str]) -> tuple[str, ...]:
    old = {step.key: _routing(step) for step in before.steps}
    new = {step.key: _routing(step) for step in after.steps}
    keys = sorted(set(old) | set(new))
    return tuple(k for k in keys if k not in moving and old.get(k) != new.get(k))


def _routing(step: RoutedStep) -> tuple[object, ...]:
    return (step.queue, step.plugin, step.image_suffix, step.gpus)
