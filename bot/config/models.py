"""The validated config: frozen pydantic models, the one definition of the schema.

``parse.parse_repo_config`` validates YAML into these; the rest of the bot reads
them. Sequences are tuples, so a config is immutable and hashable all the way down.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from bot.config.main_red import ImagesConfig, MainRedConfig
from bot.config.messages import (
    MSG_COMPANION_FORMAT_UNKNOWN,
    MSG_COMPANION_FORMAT_WITH_PATTERN,
    MSG_COMPANION_KEY_PATH,
    MSG_COMPANION_ONE_OF,
)
from bot.config.routing import MigrationConfig, RoutingConfig
from bot.config.types import (
    BlockedBuilds,
    Branch,
    CheckName,
    CompanionFormat,
    CompanionVariable,
    Dependency,
    Glob,
    Handle,
    Identifier,
    Label,
    LineLength,
    Megabytes,
    MergeMethod,
    Minutes,
    PathGlob,
    PinName,
    PinTrack,
    Regex,
    RepoPath,
    Slug,
    SmallCount,
    Upstream,
    ValuePattern,
    WheelUrl,
    Word,
)

DEFAULT_HANDLE = "bot"
DEFAULT_BRANCH = "main"
DEFAULT_TAGS = "v*"
DEFAULT_ALLOWLIST_FILE = ".buildkite/check-torch-abi.py"
DEFAULT_ALLOWLIST_VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"
DEFAULT_AUDIT_STEP = "torch-stable-abi-audit"
DEFAULT_LINE_LENGTH = 88
DEFAULT_MAX_FAILED_JOBS = 8
DEFAULT_MAX_RETRIES_PER_STEP = 2
DEFAULT_READY_LABEL = "ready"
DEFAULT_HISTORY_BUILDS = 20
DEFAULT_HISTORY_DAYS = 7
DEFAULT_WHEEL_MAX_MB = 600
DEFAULT_LABELS_ON_APPROVAL: tuple[str, ...] = ("ready",)
DEFAULT_MERGE_METHOD: MergeMethod = "squash"
DEFAULT_BLOCKED_BUILDS: BlockedBuilds = "green"
DEFAULT_REQUIRED_CHECKS: tuple[str, ...] = ("*",)  # every check run on the head
DEFAULT_LANDING_PATHS: tuple[str, ...] = ("cmake/**", ".buildkite/check-torch-abi.py")
DEFAULT_COOLDOWN_MINUTES = 10
DEFAULT_FULL_BUILD_MINUTES = 30


class _Section(BaseModel):
    # strict: YAML's `yes` or `0755` must not quietly become the string "True" or "493"
    # (and a YAML list must arrive as a tuple: parse builds its sequences as tuples).
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# A companion's format from its file name, when the config leaves it out.
_FORMAT_BY_SUFFIX: dict[str, CompanionFormat] = {
    ".sh": "shell",
    ".bash": "shell",
    ".env": "shell",
    ".cmake": "cmake",
    ".py": "python",
    ".yml": "yaml",
    ".yaml": "yaml",
}


def companion_format(file: str) -> CompanionFormat | None:
    """The format a companion file's name says (``CMakeLists.txt`` is CMake)."""
    path = PurePosixPath(file)
    return "cmake" if path.name == "CMakeLists.txt" else _FORMAT_BY_SUFFIX.get(path.suffix)


class CompanionConfig(_Section):
    """Another file that holds the pin's value and changes in the same commit: a
    ``variable`` (shell ``NAME="v"``, CMake ``set(NAME v)``, Python ``NAME = "v"``, a YAML
    key path ``a.b``) or a ``pattern`` (a regular expression whose one group is the value)."""

    file: RepoPath
    variable: CompanionVariable | None = None
    pattern: ValuePattern | None = None
    format: CompanionFormat | None = None  # for variable; from the file name if left out

    @model_validator(mode="after")
    def _one_way_to_find_the_value(self) -> CompanionConfig:
        if (self.variable is None) == (self.pattern is None):
            raise PydanticCustomError("companion", MSG_COMPANION_ONE_OF)
        if self.pattern is not None:
            if self.format is not None:
                raise PydanticCustomError("companion", MSG_COMPANION_FORMAT_WITH_PATTERN)
            return self
        found = self.resolved_format
        if found is None:
            message = MSG_COMPANION_FORMAT_UNKNOWN.format(file=self.file)
            raise PydanticCustomError("companion", message)
        if found != "yaml" and "." in (self.variable or ""):
            raise PydanticCustomError("companion", MSG_COMPANION_KEY_PATH.format(format=found))
        return self

    @property
    def resolved_format(self) -> CompanionFormat | None:
        return self.format or companion_format(self.file)


class PinConfig(_Section):
    """One upstream pinned in a CMake ``FetchContent_Declare`` block: a commit of a branch
    (``track: branch``) or a release tag (``track: tags``)."""

    name: PinName  # used in the branch name followup-bot/bump/<name>
    upstream: Upstream  # owner/repo
    track: PinTrack = "branch"
    branch: Branch = DEFAULT_BRANCH  # followed by track: branch
    tags: Glob = DEFAULT_TAGS  # track: tags follows the newest version among these
    prereleases: bool = False  # track: tags takes -rc, .dev, -alpha... tags too
    file: RepoPath  # repo-relative path of the CMake file
    dependency: Dependency  # the FetchContent_Declare name
    also: tuple[CompanionConfig, ...] = ()  # other files holding the same value
    owns: tuple[PathGlob, ...] = ()  # allowlist globs this upstream provides
    paused: bool = False  # reconciled and reported, but never changed


class AllowlistConfig(_Section):
    file: RepoPath = DEFAULT_ALLOWLIST_FILE
    variable: Identifier = DEFAULT_ALLOWLIST_VARIABLE
    audit_step: Word = DEFAULT_AUDIT_STEP
    line_length: LineLength = DEFAULT_LINE_LENGTH  # the repo's ruff line length, for reformatting
    wheel_url: WheelUrl | None = None  # URL template of a main commit's CUDA wheel, with {commit}
    wheel_max_mb: Megabytes = DEFAULT_WHEEL_MAX_MB


class BuildkiteConfig(_Section):
    organization: Slug
    pipelines: Annotated[tuple[Slug, ...], Field(min_length=1)]


class LandingConfig(_Section):
    labels_on_approval: tuple[Label, ...] = DEFAULT_LABELS_ON_APPROVAL
    merge_method: MergeMethod = DEFAULT_MERGE_METHOD
    paths: tuple[PathGlob, ...] = DEFAULT_LANDING_PATHS
    codeowners: bool = False  # code owners of every touched path may approve too
    cooldown_minutes: Minutes = (
        DEFAULT_COOLDOWN_MINUTES  # no new bump of a pin this soon after one landed
    )
    # A build stopped at a block step (vLLM gates optional steps so): "green" when every
    # job that ran passed, the blocked steps named on the PR; or "wait" for a person.
    blocked_builds: BlockedBuilds = DEFAULT_BLOCKED_BUILDS
    # Check runs (GitHub Actions, other Apps) that must pass, as name globs; a name
    # without wildcards is waited for until it reports.
    required_checks: tuple[CheckName, ...] = DEFAULT_REQUIRED_CHECKS
    # With labels on approval, only builds created once they were all on the PR count (an
    # earlier one ran the reduced pipeline). True: for a pipeline that does not start one on
    # a label change, the bot creates one itself, once per head.
    start_full_build: bool = False
    # How long after the labels went on the PR the bot waits for such a build before it
    # says, once per head, that none started.
    full_build_minutes: Minutes = DEFAULT_FULL_BUILD_MINUTES


class LogRule(_Section):
    """A named log regex; with ``step``/``label`` globs it is a known-flaky rule."""

    name: Word
    log: Regex  # a Python regex, searched in each cleaned log line
    step: Glob = "*"  # fnmatch glob on the job's step key
    label: Glob = "*"  # fnmatch glob on the job's label


class RetryConfig(_Section):
    max_failed_jobs: SmallCount = DEFAULT_MAX_FAILED_JOBS  # more failed jobs: retry nothing
    # bot retries of a step per build
    max_retries_per_step: SmallCount = DEFAULT_MAX_RETRIES_PER_STEP
    author_label: Label = DEFAULT_READY_LABEL  # the PR author may ask once the PR has it
    history_builds: SmallCount = DEFAULT_HISTORY_BUILDS  # finished main builds looked at
    history_days: SmallCount = DEFAULT_HISTORY_DAYS
    infra_patterns: tuple[LogRule, ...] = ()  # added to the built-in infra patterns
    flaky_rules: tuple[LogRule, ...] = ()


_SECTIONS = frozenset(
    {"pins", "allowlist", "buildkite", "landing", "retry", "routing", "main_red", "images"}
)


class RepoConfig(_Section):
    """The validated configuration; a section that is ``None`` is switched off."""

    handle: Handle = DEFAULT_HANDLE
    pins: tuple[PinConfig, ...] = ()
    allowlist: AllowlistConfig | None = None
    buildkite: BuildkiteConfig | None = None
    landing: LandingConfig | None = None
    retry: RetryConfig = RetryConfig()
    routing: RoutingConfig | None = None  # the "CI routing" check on PRs
    migrations: tuple[MigrationConfig, ...] = ()  # routing sweeps, one PR each
    main_red: MainRedConfig | None = None  # follow-ups of a step red on main
    images: ImagesConfig = ImagesConfig()  # the registry the CI's images are pulled from

    @model_validator(mode="before")
    @classmethod
    def _empty_sections_are_left_out(cls, data: object) -> object:
        # A section written with nothing under it (`allowlist:`) reads as null:
        # the same as leaving it out, so commenting a section's body disables it.
        if not isinstance(data, dict):
            return data
        return {
            key: value for key, value in data.items() if value is not None or key not in _SECTIONS
        }

    def pin(self, name: str) -> PinConfig | None:
        return next((pin for pin in self.pins if pin.name == name), None)

    def pins_following(self, upstream: str, branch: str) -> tuple[PinConfig, ...]:
        """Pins tracking ``branch`` of ``upstream`` (GitHub names are case-insensitive)."""
        wanted = upstream.casefold()
        return tuple(
            pin
            for pin in self.pins
            if pin.upstream.casefold() == wanted and pin.track == "branch" and pin.branch == branch
        )
