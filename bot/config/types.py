"""The config's value types: ``Annotated`` strings and integers with their checks.

Each check raises a ``PydanticCustomError`` whose message is one of the
``messages`` texts, so a mistake reads the same however it is reported.
"""

from __future__ import annotations

import keyword
import re
import string
from typing import Annotated, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from bot.config.messages import (
    MAX_PATH_LENGTH,
    MSG_ABSOLUTE_PATH,
    MSG_BAD_BRANCH,
    MSG_BAD_COMPANION_VARIABLE,
    MSG_BAD_DEPENDENCY,
    MSG_BAD_HANDLE,
    MSG_BAD_IDENTIFIER,
    MSG_BAD_PIN_NAME,
    MSG_BAD_REGEX,
    MSG_BAD_SLUG,
    MSG_BAD_UPSTREAM,
    MSG_BAD_URL,
    MSG_EMPTY,
    MSG_HAS_WHITESPACE,
    MSG_LABEL_TOO_LONG,
    MSG_OUT_OF_RANGE,
    MSG_PARENT_PATH,
    MSG_PATH_CHARACTER,
    MSG_PATH_NOT_NORMAL,
    MSG_PATH_TOO_LONG,
    MSG_PATTERN_GROUPS,
    MSG_PIN_NAME_NOT_A_REF,
    MSG_URL_NO_COMMIT,
    PATH_GLOB_RULE,
    REPO_PATH_RULE,
)

MergeMethod: TypeAlias = Literal["merge", "squash", "rebase"]
BlockedBuilds: TypeAlias = Literal["green", "wait"]
PinTrack: TypeAlias = Literal["branch", "tags"]
CompanionFormat: TypeAlias = Literal["shell", "cmake", "python", "yaml"]
# The routing invariants (see docs/configuration.md, `routing`), as the check names them.
Invariant: TypeAlias = Literal[
    "cuda-required",
    "image-producer",
    "multi-node-kubernetes",
    "kubernetes-plugin",
    "l4-num-devices",
    "unknown-device",
    "unknown-field",
    "duplicate-key",
    "missing-dependency",
    "required-optional",
]

MAX_COOLDOWN_MINUTES = 7 * 24 * 60
MAX_LABEL_LENGTH = 50  # GitHub rejects longer label names
MAX_SMALL_COUNT = 1000
MIN_LINE_LENGTH = 40
MAX_LINE_LENGTH = 400
MAX_WHEEL_MB = 4096

_PIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UPSTREAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_DEPENDENCY = re.compile(r"[A-Za-z0-9_.+-]+")
_COMPANION_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
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


def _check_endpoint(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _invalid("url", MSG_BAD_URL, value=value)
    return value


def _check_regex(value: str) -> str:
    if not value:
        raise _invalid("empty", MSG_EMPTY)
    try:
        re.compile(value)
    except re.error as exc:
        raise _invalid("regex", MSG_BAD_REGEX, value=value, reason=str(exc)) from None
    return value


def _check_value_pattern(value: str) -> str:
    _check_regex(value)
    groups = re.compile(value).groups
    if groups != 1:
        raise _invalid("pattern_groups", MSG_PATTERN_GROUPS, count=groups)
    return value


def _check_companion_variable(value: str) -> str:
    if not _COMPANION_VARIABLE.fullmatch(value):
        raise _invalid("companion_variable", MSG_BAD_COMPANION_VARIABLE, value=value)
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
ValuePattern = Annotated[str, AfterValidator(_check_value_pattern)]
CompanionVariable = Annotated[str, AfterValidator(_check_companion_variable)]
SmallCount = Annotated[int, AfterValidator(_check_small_count)]
Megabytes = Annotated[int, AfterValidator(_check_megabytes)]
Minutes = Annotated[int, AfterValidator(_check_minutes)]
WheelUrl = Annotated[str, AfterValidator(_check_wheel_url)]
Endpoint = Annotated[str, AfterValidator(_check_endpoint)]
