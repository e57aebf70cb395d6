"""The `routing` and `migrations` sections: the CI routing check and migration sweeps.

``routing`` says where vLLM's pipeline generator finds its config (a PR touching it, a file
under a job directory it names, or one of the extra ``paths``, gets a "CI routing" check
run), which steps need the CUDA build, which invariant breaks only warn rather than fail
the check, and how the generator's tables differ from the defaults when ci-infra changed
them.
``migrations`` are sweeps: every step ``select`` matches, less ``exclude``, gets ``set``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from bot.config.types import Glob, Invariant, PathGlob, PinName, Regex, RepoPath, Word

DEFAULT_CI_CONFIG = ".buildkite/ci_config.yaml"
# Extra globs only: the config and its job directories always count (read from the config,
# so a directory it adds later is never left out, as a fixed list once left out two).
DEFAULT_ROUTING_PATHS: tuple[PathGlob, ...] = ()
DEFAULT_REQUIRED_KEYS = ("torch-stable-abi-audit",)
# Every invariant fails the check unless the repository says it only warns.
DEFAULT_WARNINGS: tuple[Invariant, ...] = ()


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class RoutingConfig(_Section):
    ci_config: RepoPath = DEFAULT_CI_CONFIG
    paths: tuple[PathGlob, ...] = DEFAULT_ROUTING_PATHS  # a PR touching these is checked too
    required_keys: tuple[Word, ...] = DEFAULT_REQUIRED_KEYS  # steps that need the CUDA build
    required_commands: tuple[Regex, ...] = ()  # ... or whose commands match one of these
    warnings: tuple[Invariant, ...] = DEFAULT_WARNINGS  # reported as neutral, not failure
    # The generator's tables as ci-infra changed them: mappings merged into the defaults,
    # other tables replaced (``bot.routing.tables.with_overrides`` reads and checks them).
    tables: dict[str, Any] = Field(default_factory=dict)

    def __hash__(self) -> int:
        # A config is hashable all the way down; the tables are plain YAML data.
        fields = (self.ci_config, self.paths, self.required_keys, self.required_commands)
        return hash((*fields, self.warnings, json.dumps(self.tables, sort_keys=True)))


class StepMatch(_Section):
    """Which steps: every given field must match (globs on text, equality otherwise)."""

    key: Glob | None = None
    label: Glob | None = None
    group: Glob | None = None
    file: PathGlob | None = None
    queue: Glob | None = None
    plugin: Word | None = None  # docker | kubernetes | none
    device: Glob | None = None
    multi_node: bool | None = None


class StepExclusion(StepMatch):
    reason: Annotated[str, Field(min_length=1)]  # said in the migration PR


class StepValues(_Section):
    """What a migration sets on each selected step (only the fields given)."""

    device: Word | None = None
    num_devices: Annotated[int, Field(ge=1, le=8)] | None = None
    no_plugin: bool | None = None


class MigrationConfig(_Section):
    name: PinName  # names the branch followup-bot/migrate/<name>
    select: StepMatch
    exclude: tuple[StepExclusion, ...] = ()
    set: StepValues
