"""The repository's own settings for the bot: ``.github/followup-bot.yml``.

The file is read in three passes so that a maintainer sees *every* mistake at
once, each pointing at the exact line and column:

1. PyYAML composes the text into nodes (safe loader only, so nothing in the
   file is ever executed). We walk the nodes ourselves rather than let PyYAML
   construct objects, because construction silently keeps the last of two
   duplicate keys and forgets where each value came from.
2. pydantic models check types, required keys and value formats.
3. Cross-item rules (unique pin names, one pin per dependency) are checked and
   the result is frozen into plain dataclasses the rest of the bot uses.

Parsing is CPU work on up to 256 KB of text: async callers should run it
through ``BlockingRunner`` rather than on the event loop.
"""

from __future__ import annotations

import datetime
import difflib
import keyword
import re
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO, TypeAlias, get_args, get_origin
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError
from yaml.constructor import SafeConstructor
from yaml.error import Mark, MarkedYAMLError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

CONFIG_PATH = ".github/followup-bot.yml"
MAX_CONFIG_BYTES = 256 * 1024
# A real config has a few hundred values; the cap stops alias bombs
# ("billion laughs") from expanding into millions of objects.
MAX_VALUES = 20_000
MAX_DEPTH = 32

MergeMethod: TypeAlias = Literal["merge", "squash", "rebase"]

DEFAULT_HANDLE = "bot"
DEFAULT_BRANCH = "main"
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
BlockedBuilds: TypeAlias = Literal["green", "wait"]
DEFAULT_BLOCKED_BUILDS: BlockedBuilds = "green"
DEFAULT_REQUIRED_CHECKS: tuple[str, ...] = ("*",)  # every check run on the head
DEFAULT_LANDING_PATHS: tuple[str, ...] = ("cmake/**", ".buildkite/check-torch-abi.py")
DEFAULT_COOLDOWN_MINUTES = 10
MAX_COOLDOWN_MINUTES = 7 * 24 * 60
MAX_LABEL_LENGTH = 50  # GitHub rejects longer label names

# --- messages (tests assert these exact texts) ---------------------------------
MSG_TOO_LARGE = "config is larger than the limit of {limit} bytes"
MSG_NOT_UTF8 = "config is not valid UTF-8: {reason}"
MSG_EMPTY_CONFIG = "empty config"
MSG_YAML_SYNTAX = "YAML syntax error: {problem}"
MSG_TOO_DEEP = "nested too deeply (more than {limit} levels)"
MSG_TOO_MANY_VALUES = "too many values (more than {limit}, after expanding aliases)"
MSG_TOP_NOT_MAPPING = "the top level must be a mapping, got {kind}"
MSG_DUPLICATE_KEY = "duplicate key {key!r} (first at line {line})"
MSG_KEY_NOT_STRING = "keys must be plain strings, got {kind}"
MSG_UNSUPPORTED_TAG = "unsupported YAML tag {tag!r}"
MSG_BAD_SCALAR = "cannot read {raw!r}: {reason}"
MSG_UNKNOWN_KEY = "unknown key {key!r}"
MSG_DID_YOU_MEAN = " (did you mean {suggestion!r}?)"
MSG_MISSING = "required key is missing"
MSG_WRONG_TYPE = "expected {expected}, got {kind}"
MSG_QUOTE_HINT = " (put it in quotes to keep it as text)"
MSG_NOT_ONE_OF = "must be one of {choices}, got {kind}"
MSG_TOO_SHORT = "must list at least {items}"
MSG_EMPTY = "must not be empty"
MSG_BAD_PIN_NAME = (
    "invalid pin name {value!r}: use letters, digits, '.', '_' and '-', "
    "starting with a letter or digit"
)
MSG_PIN_NAME_NOT_A_REF = (
    "invalid pin name {value!r}: a git branch name cannot contain '..' or end with '.' or '.lock'"
)
MSG_BAD_UPSTREAM = "expected 'owner/repo', got {value!r}"
MSG_BAD_BRANCH = "invalid branch name {value!r}: {reason}"
MSG_ABSOLUTE_PATH = "must be relative to the repository root, got {value!r}"
MSG_PARENT_PATH = "must not contain '..', got {value!r}"
# Paths from the config end up in GitHub API URLs (the contents API) and globs in PR
# comments, so both are held to a small, URL-inert grammar (see docs/configuration.md).
MAX_PATH_LENGTH = 255
_PATH_NAMES = (
    "names made of ASCII letters, digits, '.', '_', '-', '+' and '@', joined by single '/', "
    f"none of them '.' or '..', at most {MAX_PATH_LENGTH} characters in all"
)
REPO_PATH_RULE = f"a file path is relative to the repository root: {_PATH_NAMES}"
PATH_GLOB_RULE = (
    f"a path glob is written like a file path ({_PATH_NAMES}) "
    "and may also use '*', '?', '[', ']' and '!'"
)
MSG_PATH_CHARACTER = "must not contain {char}, got {value!r} ({rule})"
MSG_PATH_NOT_NORMAL = "must not contain {what}, got {value!r} ({rule})"
MSG_PATH_TOO_LONG = "must be at most {limit} characters long, got {length} ({rule})"
MSG_BAD_DEPENDENCY = "invalid FetchContent name {value!r}: use letters, digits, '_', '.', '+', '-'"
MSG_BAD_IDENTIFIER = "{value!r} is not a Python variable name"
MSG_BAD_HANDLE = "invalid handle {value!r}: use letters, digits and '-'"
MSG_BAD_SLUG = "invalid Buildkite slug {value!r}: use letters, digits, '_', '.' and '-'"
MSG_HAS_WHITESPACE = "must not contain whitespace, got {value!r}"
MSG_LABEL_TOO_LONG = "label {value!r} is longer than {limit} characters"
MSG_OUT_OF_RANGE = "{value} is outside {low}..{high}"
MSG_BAD_REGEX = "invalid regular expression {value!r}: {reason}"
MAX_SMALL_COUNT = 1000
MSG_BAD_URL = "expected an http(s) URL, got {value!r}"
MSG_URL_NO_COMMIT = "the URL template must contain {{commit}}, got {value!r}"
MIN_LINE_LENGTH = 40
MAX_LINE_LENGTH = 400
MAX_WHEEL_MB = 4096
MSG_DUPLICATE_PIN = "duplicate pin name {name!r} (first at pins[{index}])"
MSG_RETRY_NEEDS_BUILDKITE = (
    "retry needs a buildkite section: retry-flaky and landing retry Buildkite jobs"
)
MSG_ALLOWLIST_NEEDS_EVIDENCE = (
    "allowlist needs a buildkite section (its evidence is the audit job's log) "
    "or allowlist.wheel_url (the bot audits the wheel itself)"
)
MSG_DUPLICATE_DEPENDENCY = "pins[{index}] already follows {dependency!r} in {file}"

MSG_CHECK_OK = "ok: {summary}"
MSG_CHECK_FAILED = "{problems} in {file}"
MSG_CANNOT_READ = "error: cannot read {file}: {reason}"


# --- the result ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PinConfig:
    """One upstream commit pinned in a CMake ``FetchContent_Declare`` block."""

    name: str  # used in the branch name followup-bot/bump/<name>
    upstream: str  # owner/repo
    branch: str = DEFAULT_BRANCH
    file: str  # repo-relative path of the CMake file
    dependency: str  # the FetchContent_Declare name
    owns: tuple[str, ...] = ()  # allowlist globs this upstream provides
    paused: bool = False  # reconciled and reported, but never changed


@dataclass(frozen=True, kw_only=True)
class AllowlistConfig:
    file: str = DEFAULT_ALLOWLIST_FILE
    variable: str = DEFAULT_ALLOWLIST_VARIABLE
    audit_step: str = DEFAULT_AUDIT_STEP
    line_length: int = DEFAULT_LINE_LENGTH  # the repo's ruff line length, for reformatting
    wheel_url: str | None = None  # URL template of a main commit's CUDA wheel, with {commit}
    wheel_max_mb: int = DEFAULT_WHEEL_MAX_MB


@dataclass(frozen=True, kw_only=True)
class BuildkiteConfig:
    organization: str
    pipelines: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class LandingConfig:
    labels_on_approval: tuple[str, ...] = DEFAULT_LABELS_ON_APPROVAL
    merge_method: MergeMethod = DEFAULT_MERGE_METHOD
    paths: tuple[str, ...] = DEFAULT_LANDING_PATHS
    codeowners: bool = False  # code owners of every touched path may approve too
    cooldown_minutes: int = (
        DEFAULT_COOLDOWN_MINUTES  # no new bump of a pin this soon after one landed
    )
    # A build stopped at a block step (vLLM gates optional steps so): "green" when every
    # job that ran passed, the blocked steps named on the PR; or "wait" for a person.
    blocked_builds: BlockedBuilds = DEFAULT_BLOCKED_BUILDS
    # Check runs (GitHub Actions, other Apps) that must pass, as name globs; a name
    # without wildcards is waited for until it reports.
    required_checks: tuple[str, ...] = DEFAULT_REQUIRED_CHECKS


@dataclass(frozen=True, kw_only=True)
class LogRule:
    """A named log regex; with ``step``/``label`` globs it is a known-flaky rule."""

    name: str
    log: str  # a Python regex, searched in each cleaned log line
    step: str = "*"  # fnmatch glob on the job's step key
    label: str = "*"  # fnmatch glob on the job's label


@dataclass(frozen=True, kw_only=True)
class RetryConfig:
    max_failed_jobs: int = DEFAULT_MAX_FAILED_JOBS  # more failed jobs: retry nothing
    max_retries_per_step: int = DEFAULT_MAX_RETRIES_PER_STEP  # bot retries of a step per build
    author_label: str = DEFAULT_READY_LABEL  # the PR author may ask once the PR has it
    history_builds: int = DEFAULT_HISTORY_BUILDS  # finished main builds looked at
    history_days: int = DEFAULT_HISTORY_DAYS
    infra_patterns: tuple[LogRule, ...] = ()  # added to the built-in infra patterns
    flaky_rules: tuple[LogRule, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RepoConfig:
    """The validated configuration; a section that is ``None`` is switched off."""

    handle: str = DEFAULT_HANDLE
    pins: tuple[PinConfig, ...] = ()
    allowlist: AllowlistConfig | None = None
    buildkite: BuildkiteConfig | None = None
    landing: LandingConfig | None = None
    retry: RetryConfig = RetryConfig()

    def pin(self, name: str) -> PinConfig | None:
        return next((pin for pin in self.pins if pin.name == name), None)

    def pins_following(self, upstream: str, branch: str) -> tuple[PinConfig, ...]:
        """Pins tracking ``branch`` of ``upstream`` (GitHub names are case-insensitive)."""
        wanted = upstream.casefold()
        return tuple(
            pin for pin in self.pins if pin.upstream.casefold() == wanted and pin.branch == branch
        )


@dataclass(frozen=True)
class ConfigProblem:
    """One mistake, located: line and column are 1-based; field is a dotted path."""

    file: str
    line: int | None
    column: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ConfigError(Exception):
    """The config is unusable; ``problems`` lists every mistake in file order."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems = tuple(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
        super().__init__("\n".join(str(problem) for problem in self.problems))


# --- value checks (each raises a PydanticCustomError carrying our message) --------

_PIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UPSTREAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_DEPENDENCY = re.compile(r"[A-Za-z0-9_.+-]+")
_HANDLE = re.compile(r"[A-Za-z0-9-]+")
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_WHITESPACE = re.compile(r"\s")
# Characters git refuses in ref names (see git check-ref-format).
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def _invalid(kind: str, template: str, **context: object) -> PydanticCustomError:
    return PydanticCustomError(kind, template.format(**context))


def _check_pin_name(value: str) -> str:
    if not _PIN_NAME.fullmatch(value):
        raise _invalid("pin_name", MSG_BAD_PIN_NAME, value=value)
    if ".." in value or value.endswith((".", ".lock")):
        raise _invalid("pin_name", MSG_PIN_NAME_NOT_A_REF, value=value)
    return value


def _check_upstream(value: str) -> str:
    if not _UPSTREAM.fullmatch(value) or value.split("/")[1] in {".", ".."}:
        raise _invalid("upstream", MSG_BAD_UPSTREAM, value=value)
    return value


def _branch_mistake(value: str) -> str | None:
    if not value:
        return "it is empty"
    if _REF_FORBIDDEN.search(value):
        return "it contains a space, a control character or one of ~^:?*[\\"
    if ".." in value or "@{" in value or "//" in value:
        return "it contains '..', '@{' or '//'"
    if value.startswith(("-", "/", ".")) or value.endswith(("/", ".", ".lock")):
        return "it starts with '-', '/' or '.', or ends with '/', '.' or '.lock'"
    if any(part.startswith(".") or part.endswith(".lock") for part in value.split("/")):
        # git refuses these too; '/./' would also fold away in the ref's API URL.
        return "a part between '/' starts with '.' or ends with '.lock'"
    return None


def _check_branch(value: str) -> str:
    reason = _branch_mistake(value)
    if reason is not None:
        raise _invalid("branch", MSG_BAD_BRANCH, value=value, reason=reason)
    return value


_PATH_CHARACTERS = frozenset(string.ascii_letters + string.digits + "._-+@/")
_GLOB_CHARACTERS = _PATH_CHARACTERS | frozenset("*?[]!")


def _describe_character(char: str) -> str:
    """``'?' (U+003F)``: the code point tells a control character or a look-alike apart."""
    return f"{char!r} (U+{ord(char):04X})"


def _check_path_grammar(value: str, allowed: frozenset[str], rule: str) -> str:
    """The grammar shared by file paths and path globs; ``rule`` goes into the message."""
    if not value.strip():
        raise _invalid("empty", MSG_EMPTY)
    if len(value) > MAX_PATH_LENGTH:
        raise _invalid(
            "path", MSG_PATH_TOO_LONG, limit=MAX_PATH_LENGTH, length=len(value), rule=rule
        )
    if value.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", value):
        raise _invalid("absolute_path", MSG_ABSOLUTE_PATH, value=value)
    if ".." in re.split(r"[/\\]", value):
        raise _invalid("parent_path", MSG_PARENT_PATH, value=value)
    bad = next((char for char in value if char not in allowed), None)
    if bad is not None:
        char = _describe_character(bad)
        raise _invalid("path", MSG_PATH_CHARACTER, char=char, value=value, rule=rule)
    what = _not_normal(value.split("/"))
    if what is not None:
        raise _invalid("path", MSG_PATH_NOT_NORMAL, what=what, value=value, rule=rule)
    return value


def _not_normal(names: list[str]) -> str | None:
    """What keeps a path split at '/' from being in normal form, if anything."""
    if "" in names[:-1]:
        return "'//'"
    if names[-1] == "":
        return "a trailing '/'"
    if "." in names:
        return "a '.' name"
    return None


def _check_repo_path(value: str) -> str:
    """A file in the repository: it is read through the contents API, so it must be inert
    in a URL and can never point outside the repository."""
    return _check_path_grammar(value, _PATH_CHARACTERS, REPO_PATH_RULE)


def _check_path_glob(value: str) -> str:
    """A glob over repository (or package) paths; never put into a URL, shown in comments."""
    return _check_path_grammar(value, _GLOB_CHARACTERS, PATH_GLOB_RULE)


def _check_glob(value: str) -> str:
    """A glob over Buildkite step keys or labels (free text, not paths)."""
    if not value.strip():
        raise _invalid("empty", MSG_EMPTY)
    if value.startswith("/"):
        raise _invalid("absolute_path", MSG_ABSOLUTE_PATH, value=value)
    return value


def _check_dependency(value: str) -> str:
    if not _DEPENDENCY.fullmatch(value):
        raise _invalid("dependency", MSG_BAD_DEPENDENCY, value=value)
    return value


def _check_identifier(value: str) -> str:
    if not value.isidentifier() or keyword.iskeyword(value):
        raise _invalid("identifier", MSG_BAD_IDENTIFIER, value=value)
    return value


def _check_handle(value: str) -> str:
    if not _HANDLE.fullmatch(value):
        raise _invalid("handle", MSG_BAD_HANDLE, value=value)
    return value


def _check_slug(value: str) -> str:
    if not _SLUG.fullmatch(value):
        raise _invalid("slug", MSG_BAD_SLUG, value=value)
    return value


def _check_word(value: str) -> str:
    if not value:
        raise _invalid("empty", MSG_EMPTY)
    if _WHITESPACE.search(value):
        raise _invalid("whitespace", MSG_HAS_WHITESPACE, value=value)
    return value


def _check_line_length(value: int) -> int:
    if not MIN_LINE_LENGTH <= value <= MAX_LINE_LENGTH:
        raise _invalid(
            "range", MSG_OUT_OF_RANGE, value=value, low=MIN_LINE_LENGTH, high=MAX_LINE_LENGTH
        )
    return value


def _check_megabytes(value: int) -> int:
    if not 1 <= value <= MAX_WHEEL_MB:
        raise _invalid("range", MSG_OUT_OF_RANGE, value=value, low=1, high=MAX_WHEEL_MB)
    return value


def _check_wheel_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _invalid("url", MSG_BAD_URL, value=value)
    if "{commit}" not in value:
        raise _invalid("url", MSG_URL_NO_COMMIT, value=value)
    return value


def _check_regex(value: str) -> str:
    if not value:
        raise _invalid("empty", MSG_EMPTY)
    try:
        re.compile(value)
    except re.error as exc:
        raise _invalid("regex", MSG_BAD_REGEX, value=value, reason=str(exc)) from None
    return value


def _check_small_count(value: int) -> int:
    if not 0 <= value <= MAX_SMALL_COUNT:
        raise _invalid("range", MSG_OUT_OF_RANGE, value=value, low=0, high=MAX_SMALL_COUNT)
    return value


def _check_minutes(value: int) -> int:
    if not 0 <= value <= MAX_COOLDOWN_MINUTES:
        raise _invalid("range", MSG_OUT_OF_RANGE, value=value, low=0, high=MAX_COOLDOWN_MINUTES)
    return value


def _check_label(value: str) -> str:
    if not value.strip():
        raise _invalid("empty", MSG_EMPTY)
    if len(value) > MAX_LABEL_LENGTH:
        raise _invalid("label", MSG_LABEL_TOO_LONG, value=value, limit=MAX_LABEL_LENGTH)
    return value


def _check_check_name(value: str) -> str:
    """A check run name glob (free text: "build / test (3.11)")."""
    if not value.strip():
        raise _invalid("empty", MSG_EMPTY)
    return value


PinName = Annotated[str, AfterValidator(_check_pin_name)]
CheckName = Annotated[str, AfterValidator(_check_check_name)]
Upstream = Annotated[str, AfterValidator(_check_upstream)]
Branch = Annotated[str, AfterValidator(_check_branch)]
RepoPath = Annotated[str, AfterValidator(_check_repo_path)]
PathGlob = Annotated[str, AfterValidator(_check_path_glob)]
Glob = Annotated[str, AfterValidator(_check_glob)]
Dependency = Annotated[str, AfterValidator(_check_dependency)]
Identifier = Annotated[str, AfterValidator(_check_identifier)]
Handle = Annotated[str, AfterValidator(_check_handle)]
Slug = Annotated[str, AfterValidator(_check_slug)]
Word = Annotated[str, AfterValidator(_check_word)]
Label = Annotated[str, AfterValidator(_check_label)]
LineLength = Annotated[int, AfterValidator(_check_line_length)]
Regex = Annotated[str, AfterValidator(_check_regex)]
SmallCount = Annotated[int, AfterValidator(_check_small_count)]
Megabytes = Annotated[int, AfterValidator(_check_megabytes)]
Minutes = Annotated[int, AfterValidator(_check_minutes)]
WheelUrl = Annotated[str, AfterValidator(_check_wheel_url)]


# --- the schema ------------------------------------------------------------------


class _Section(BaseModel):
    # strict: YAML's `yes` or `0755` must not quietly become the string "True" or "493".
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _PinModel(_Section):
    name: PinName
    upstream: Upstream
    branch: Branch = DEFAULT_BRANCH
    file: RepoPath
    dependency: Dependency
    owns: list[PathGlob] = []
    paused: bool = False


class _AllowlistModel(_Section):
    file: RepoPath = DEFAULT_ALLOWLIST_FILE
    variable: Identifier = DEFAULT_ALLOWLIST_VARIABLE
    audit_step: Word = DEFAULT_AUDIT_STEP
    line_length: LineLength = DEFAULT_LINE_LENGTH
    wheel_url: WheelUrl | None = None
    wheel_max_mb: Megabytes = DEFAULT_WHEEL_MAX_MB


class _BuildkiteModel(_Section):
    organization: Slug
    pipelines: Annotated[list[Slug], Field(min_length=1)]


class _LandingModel(_Section):
    labels_on_approval: list[Label] = list(DEFAULT_LABELS_ON_APPROVAL)
    merge_method: MergeMethod = DEFAULT_MERGE_METHOD
    paths: list[PathGlob] = list(DEFAULT_LANDING_PATHS)
    codeowners: bool = False
    cooldown_minutes: Minutes = DEFAULT_COOLDOWN_MINUTES
    blocked_builds: BlockedBuilds = DEFAULT_BLOCKED_BUILDS
    required_checks: list[CheckName] = list(DEFAULT_REQUIRED_CHECKS)


class _LogRuleModel(_Section):
    name: Word
    log: Regex
    step: Glob = "*"
    label: Glob = "*"


class _RetryModel(_Section):
    max_failed_jobs: SmallCount = DEFAULT_MAX_FAILED_JOBS
    max_retries_per_step: SmallCount = DEFAULT_MAX_RETRIES_PER_STEP
    author_label: Label = DEFAULT_READY_LABEL
    history_builds: SmallCount = DEFAULT_HISTORY_BUILDS
    history_days: SmallCount = DEFAULT_HISTORY_DAYS
    infra_patterns: list[_LogRuleModel] = []
    flaky_rules: list[_LogRuleModel] = []


class _RepoModel(_Section):
    # A section written with nothing under it (`allowlist:`) reads as null:
    # the same as leaving it out, so commenting a section's body disables it.
    handle: Handle = DEFAULT_HANDLE
    pins: list[_PinModel] | None = None
    allowlist: _AllowlistModel | None = None
    buildkite: _BuildkiteModel | None = None
    landing: _LandingModel | None = None
    retry: _RetryModel | None = None


# --- pass 1: YAML nodes -> plain data, remembering where each value came from ------

_FieldPath: TypeAlias = tuple[str | int, ...]
_YAML_TAG = "tag:yaml.org,2002:"
_MAP_TAG = _YAML_TAG + "map"
_SEQ_TAG = _YAML_TAG + "seq"
_SCALAR_TAGS = frozenset(
    _YAML_TAG + name for name in ("str", "int", "float", "bool", "null", "timestamp")
)
# `<<` and `=` resolve to these; we have no use for merge keys, so keep the text.
_VERBATIM_TAGS = frozenset({_YAML_TAG + "merge", _YAML_TAG + "value"})


@dataclass(frozen=True)
class _Where:
    key: Mark | None  # the key's position; None for list items and the document
    value: Mark


class _TooComplex(Exception):
    """The document is deeper or larger than any real config."""

    def __init__(self, message: str, mark: Mark) -> None:
        super().__init__(message)
        self.mark = mark


class _DataBuilder:
    """Turns composed nodes into dicts/lists/scalars, collecting problems on the way."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.problems: list[ConfigProblem] = []
        self.where: dict[_FieldPath, _Where] = {}
        # Paths already reported here: pydantic would only repeat them less clearly.
        self.reported: set[_FieldPath] = set()
        self._values = 0
        self._scalars = SafeConstructor()

    def note(self, mark: Mark, path: _FieldPath, message: str) -> None:
        self.problems.append(_problem_at(self.filename, mark, path, message))

    def refuse(self, node: Node, path: _FieldPath, message: str) -> None:
        """Report a value we will not use (it is replaced by null)."""
        self.note(node.start_mark, path, message)
        self.reported.add(path)

    def build(self, node: Node, path: _FieldPath, key: Mark | None) -> object:
        self._values += 1
        if self._values > MAX_VALUES:
            raise _TooComplex(MSG_TOO_MANY_VALUES.format(limit=MAX_VALUES), node.start_mark)
        if len(path) > MAX_DEPTH:
            raise _TooComplex(MSG_TOO_DEEP.format(limit=MAX_DEPTH), node.start_mark)
        self.where.setdefault(path, _Where(key, node.start_mark))
        if isinstance(node, MappingNode) and node.tag == _MAP_TAG:
            return self._mapping(node, path)
        if isinstance(node, SequenceNode) and node.tag == _SEQ_TAG:
            return [self.build(item, (*path, i), None) for i, item in enumerate(node.value)]
        if isinstance(node, ScalarNode) and node.tag in _VERBATIM_TAGS:
            return node.value
        if isinstance(node, ScalarNode) and node.tag in _SCALAR_TAGS:
            return self._scalar(node, path)
        self.refuse(node, path, MSG_UNSUPPORTED_TAG.format(tag=_short_tag(node.tag)))
        return None

    def _scalar(self, node: ScalarNode, path: _FieldPath) -> object:
        try:
            return self._scalars.construct_object(node, deep=True)
        except (ValueError, yaml.YAMLError) as exc:  # e.g. the "date" 2024-13-45
            self.refuse(node, path, MSG_BAD_SCALAR.format(raw=node.value, reason=exc))
            return None

    def _mapping(self, node: MappingNode, path: _FieldPath) -> dict[str, object]:
        result: dict[str, object] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                kind = "a list" if isinstance(key_node, SequenceNode) else "a mapping"
                self.note(key_node.start_mark, path, MSG_KEY_NOT_STRING.format(kind=kind))
                continue
            # Keys are taken as written: `on:` is the key "on", not YAML 1.1's True.
            key = key_node.value
            if key in first_line:
                message = MSG_DUPLICATE_KEY.format(key=key, line=first_line[key])
                self.note(key_node.start_mark, (*path, key), message)
                continue
            first_line[key] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, (*path, key), key_node.start_mark)
        return result


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML_TAG) if tag.startswith(_YAML_TAG) else tag


def _format_path(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _problem_at(
    filename: str, mark: Mark | None, path: Sequence[str | int], message: str
) -> ConfigProblem:
    line = None if mark is None else mark.line + 1
    column = None if mark is None else mark.column + 1
    return ConfigProblem(filename, line, column, _format_path(path), message)


def _compose(text: str, filename: str) -> Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except MarkedYAMLError as exc:
        problem = exc.problem or "invalid YAML"
        if exc.context:
            problem = f"{exc.context}, {problem}"
        message = MSG_YAML_SYNTAX.format(problem=problem)
        raise ConfigError([_problem_at(filename, exc.problem_mark, (), message)]) from None
    except ReaderError as exc:  # control characters; carries an offset, not a mark
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = MSG_YAML_SYNTAX.format(problem=f"{exc.reason} (U+{code:04X})")
        raise ConfigError([ConfigProblem(filename, line, column, "", message)]) from None
    except RecursionError:
        message = MSG_TOO_DEEP.format(limit=MAX_DEPTH)
        raise ConfigError([ConfigProblem(filename, None, None, "", message)]) from None


# --- pass 2: pydantic errors -> located problems -----------------------------------


def _describe(value: object) -> str:
    """How the value reads in YAML terms, for 'expected X, got Y' messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, datetime.date):
        return f"date {value.isoformat()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "list_type": "a list",
    "model_type": "a mapping",
    "dict_type": "a mapping",
}


def _model_at(path: Sequence[str | int]) -> type[BaseModel] | None:
    """The schema model describing the mapping at ``path`` (for did-you-mean)."""
    model: type[BaseModel] = _RepoModel
    for part in path:
        if isinstance(part, int):
            continue  # list items share the list's model, unwrapped below
        field = model.model_fields.get(part)
        found = None if field is None else _unwrap_model(field.annotation)
        if found is None:
            return None
        model = found
    return model


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    if get_origin(annotation) is not None:  # list[X], X | None
        for arg in get_args(annotation):
            found = _unwrap_model(arg)
            if found is not None:
                return found
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _message_for(error: ErrorDetails) -> str:
    kind, value, loc = error["type"], error["input"], error["loc"]
    if kind == "missing":
        return MSG_MISSING
    if kind == "extra_forbidden":
        key = str(loc[-1])
        message = MSG_UNKNOWN_KEY.format(key=key)
        model = _model_at(loc[:-1])
        known = list(model.model_fields) if model is not None else []
        close = difflib.get_close_matches(key, known, n=1)
        return message + MSG_DID_YOU_MEAN.format(suggestion=close[0]) if close else message
    if kind in _EXPECTED:
        message = MSG_WRONG_TYPE.format(expected=_EXPECTED[kind], kind=_describe(value))
        scalar = isinstance(value, bool | int | float | datetime.date)
        return message + MSG_QUOTE_HINT if kind == "string_type" and scalar else message
    if kind == "literal_error":
        choices = ", ".join(repr(choice) for choice in get_args(MergeMethod))
        return MSG_NOT_ONE_OF.format(choices=choices, kind=_describe(value))
    if kind == "too_short":
        minimum = int(error.get("ctx", {}).get("min_length", 1))
        return MSG_TOO_SHORT.format(items=_plural(minimum, "item"))
    return error["msg"]  # our own checks: already one of the MSG_ texts


def _locate(error: ErrorDetails, where: dict[_FieldPath, _Where]) -> Mark | None:
    loc: _FieldPath = tuple(error["loc"])
    if error["type"] == "extra_forbidden" and loc in where:
        return where[loc].key
    if error["type"] == "missing":
        loc = loc[:-1]  # point at the mapping that lacks the key
    while loc not in where and loc:
        loc = loc[:-1]
    return where[loc].value if loc in where else None


def _already_reported(error: ErrorDetails, reported: set[_FieldPath]) -> bool:
    # An unknown key is a mistake of its own, whatever is wrong with its value.
    if error["type"] == "extra_forbidden":
        return False
    path = tuple(error["loc"])
    return any(path[: len(done)] == done for done in reported)


# --- pass 3: cross-item rules and freezing ------------------------------------------


def _pin_problems(model: _RepoModel, builder: _DataBuilder) -> Iterator[ConfigProblem]:
    names: dict[str, int] = {}
    dependencies: dict[tuple[str, str], int] = {}
    for index, pin in enumerate(model.pins or ()):
        # casefold: refs differing only in case collide on macOS/Windows clones.
        first = names.setdefault(pin.name.casefold(), index)
        if first != index:
            path: _FieldPath = ("pins", index, "name")
            message = MSG_DUPLICATE_PIN.format(name=pin.name, index=first)
            yield _problem_at(builder.filename, builder.where[path].value, path, message)
        first = dependencies.setdefault((pin.file, pin.dependency), index)
        if first != index:
            path = ("pins", index, "dependency")
            message = MSG_DUPLICATE_DEPENDENCY.format(
                index=first, dependency=pin.dependency, file=pin.file
            )
            yield _problem_at(builder.filename, builder.where[path].value, path, message)


def _section_problems(model: _RepoModel, builder: _DataBuilder) -> Iterator[ConfigProblem]:
    """Sections that would do nothing without another one (a silent no-op otherwise)."""
    if model.buildkite is not None:
        return
    if model.retry is not None:
        where = builder.where[("retry",)]
        mark = where.key or where.value
        yield _problem_at(builder.filename, mark, ("retry",), MSG_RETRY_NEEDS_BUILDKITE)
    if model.allowlist is not None and model.allowlist.wheel_url is None:
        where = builder.where[("allowlist",)]
        mark = where.key or where.value
        yield _problem_at(builder.filename, mark, ("allowlist",), MSG_ALLOWLIST_NEEDS_EVIDENCE)


def _freeze(model: _RepoModel) -> RepoConfig:
    return RepoConfig(
        handle=model.handle,
        pins=tuple(
            PinConfig(
                name=pin.name,
                upstream=pin.upstream,
                branch=pin.branch,
                file=pin.file,
                dependency=pin.dependency,
                owns=tuple(pin.owns),
                paused=pin.paused,
            )
            for pin in model.pins or ()
        ),
        allowlist=None
        if model.allowlist is None
        else AllowlistConfig(
            file=model.allowlist.file,
            variable=model.allowlist.variable,
            audit_step=model.allowlist.audit_step,
            line_length=model.allowlist.line_length,
            wheel_url=model.allowlist.wheel_url,
            wheel_max_mb=model.allowlist.wheel_max_mb,
        ),
        buildkite=None
        if model.buildkite is None
        else BuildkiteConfig(
            organization=model.buildkite.organization,
            pipelines=tuple(model.buildkite.pipelines),
        ),
        landing=None
        if model.landing is None
        else LandingConfig(
            labels_on_approval=tuple(model.landing.labels_on_approval),
            merge_method=model.landing.merge_method,
            paths=tuple(model.landing.paths),
            codeowners=model.landing.codeowners,
            cooldown_minutes=model.landing.cooldown_minutes,
            blocked_builds=model.landing.blocked_builds,
            required_checks=tuple(model.landing.required_checks),
        ),
        retry=RetryConfig() if model.retry is None else _freeze_retry(model.retry),
    )


def _freeze_retry(model: _RetryModel) -> RetryConfig:
    def rules(items: list[_LogRuleModel]) -> tuple[LogRule, ...]:
        return tuple(LogRule(name=r.name, log=r.log, step=r.step, label=r.label) for r in items)

    return RetryConfig(
        max_failed_jobs=model.max_failed_jobs,
        max_retries_per_step=model.max_retries_per_step,
        author_label=model.author_label,
        history_builds=model.history_builds,
        history_days=model.history_days,
        infra_patterns=rules(model.infra_patterns),
        flaky_rules=rules(model.flaky_rules),
    )


# --- entry points ---------------------------------------------------------------------


def _too_large(filename: str) -> ConfigError:
    message = MSG_TOO_LARGE.format(limit=MAX_CONFIG_BYTES)
    return ConfigError([ConfigProblem(filename, None, None, "", message)])


def parse_repo_config(text: str, *, filename: str = CONFIG_PATH) -> RepoConfig:
    """Parse and validate the config text; ``ConfigError`` lists every problem."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_CONFIG_BYTES:
        raise _too_large(filename)
    root = _compose(text, filename)
    if root is None or (isinstance(root, ScalarNode) and root.tag == _YAML_TAG + "null"):
        raise ConfigError([ConfigProblem(filename, 1, 1, "", MSG_EMPTY_CONFIG)])

    builder = _DataBuilder(filename)
    try:
        data = builder.build(root, (), None)
    except _TooComplex as exc:
        raise ConfigError([_problem_at(filename, exc.mark, (), str(exc))]) from None
    problems = builder.problems
    if not isinstance(data, dict):
        if not builder.reported:
            message = MSG_TOP_NOT_MAPPING.format(kind=_describe(data))
            problems.append(_problem_at(filename, root.start_mark, (), message))
        raise ConfigError(problems)
    try:
        model = _RepoModel.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            if not _already_reported(error, builder.reported):
                mark = _locate(error, builder.where)
                problems.append(_problem_at(filename, mark, error["loc"], _message_for(error)))
        raise ConfigError(problems) from None
    problems.extend(_pin_problems(model, builder))
    problems.extend(_section_problems(model, builder))
    if problems:
        raise ConfigError(problems)
    return _freeze(model)


def parse_repo_config_bytes(data: bytes, *, filename: str = CONFIG_PATH) -> RepoConfig:
    """Like ``parse_repo_config`` for raw file contents (the contents API, a file)."""
    if len(data) > MAX_CONFIG_BYTES:
        raise _too_large(filename)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = MSG_NOT_UTF8.format(reason=exc.reason)
        raise ConfigError([ConfigProblem(filename, line, column, "", message)]) from None
    return parse_repo_config(text.removeprefix("\ufeff"), filename=filename)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def summarize(config: RepoConfig) -> str:
    """One line saying what the bot will do in this repository."""
    pins = _plural(len(config.pins), "pin")
    if config.pins:
        pins += " (" + ", ".join(pin.name for pin in config.pins) + ")"
    allowlist, buildkite, landing = config.allowlist, config.buildkite, config.landing
    return "; ".join(
        [
            f"handle @{config.handle}",
            pins,
            "allowlist off" if allowlist is None else f"allowlist in {allowlist.file}",
            "buildkite off"
            if buildkite is None
            else f"buildkite {buildkite.organization}/{','.join(buildkite.pipelines)}",
            "landing off" if landing is None else f"landing by {landing.merge_method}",
        ]
    )


def _load(path: Path) -> RepoConfig:
    with path.open("rb") as stream:
        # One byte past the limit is enough to know the file is too big.
        data = stream.read(MAX_CONFIG_BYTES + 1)
    return parse_repo_config_bytes(data, filename=str(path))


def check_config(path: Path, out: TextIO, err: TextIO) -> int:
    """``followup-bot check-config PATH``: 0 valid, 1 invalid, 2 unreadable."""
    try:
        config = _load(path)
    except OSError as exc:
        print(MSG_CANNOT_READ.format(file=path, reason=exc.strerror or exc), file=err)
        return 2
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=err)
        print(
            MSG_CHECK_FAILED.format(problems=_plural(len(exc.problems), "problem"), file=path),
            file=err,
        )
        return 1
    print(MSG_CHECK_OK.format(summary=summarize(config)), file=out)
    return 0
