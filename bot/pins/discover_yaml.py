"""The ``pins:`` block ``followup-bot discover`` proposes for ``.github/followup-bot.yml``.

Only pins the bot can follow get an entry: editable, fetched from github.com, and
shallow only when pinned to a tag. The others are listed as YAML comments saying
why, so the block pastes as it is and ``check-config`` accepts it. A sha pin follows
``main`` until told otherwise: the checkout does not say which upstream branch the
commit is on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

from bot.config.models import DEFAULT_BRANCH, DEFAULT_TAGS, CompanionConfig
from bot.pins.discover import FoundPin

LEFT_OUT = "  # {dependency} ({file}:{line}) is left out: {why}"
WHY_UNEDITABLE = "the bot cannot edit it: {reason}"
WHY_NO_UPSTREAM = "cannot tell the GitHub upstream from GIT_REPOSITORY {repository}"
WHY_NO_REPOSITORY = "it has no GIT_REPOSITORY to follow"
WHY_SHALLOW_BRANCH = (
    "GIT_SHALLOW TRUE cannot fetch the commits of a branch, and {value} is not a release tag"
)
BRANCH_ASSUMED = "  # the checkout does not say which upstream branch has this commit"
# The pin's file repeats its value (cutlass's set(CUTLASS_REVISION) beside GIT_TAG): said
# here, since such a file needs no also: entry and the config refuses one.
REPEATED = "    # {file} also holds {value} at line{s} {lines}: changed with the pin"
NO_PINS = "pins: []"

_GITHUB_URL = re.compile(
    r"(?:(?:https?|git)://(?:[^@/]+@)?(?:www\.)?|ssh://git@|git@)github\.com[/:]"
    r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/(?P<name>[A-Za-z0-9._-]{1,100}?)(?:\.git)?/?",
    re.I,
)
_PLAIN_SCALAR = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./+@-]*")
# Plain YAML scalars that would not read back as the same string.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})
# Plain, these would read as numbers or dates: quoted, they stay strings.
_NUMBER_LIKE = re.compile(r"[0-9._+-]+")
_NOT_IN_PIN_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def github_upstream(repository: str | None) -> str | None:
    """``owner/name`` of a github.com ``GIT_REPOSITORY`` URL; None for any other."""
    if repository is None:
        return None
    match = _GITHUB_URL.fullmatch(repository.strip())
    if match is None or match["name"] in {".", ".."}:
        return None
    return f"{match['owner']}/{match['name']}"


def config_block(pins: Sequence[FoundPin]) -> str:
    """The block to paste under the config's top level, ending with a newline."""
    entries: list[str] = []
    left_out: list[str] = []
    names: set[str] = set()
    for pin in pins:
        why = _left_out_because(pin)
        if why is not None:
            line = LEFT_OUT.format(dependency=pin.dependency, file=pin.file, line=pin.line, why=why)
            left_out.append(line)
            continue
        entries.extend(_entry(pin, _unique_name(pin.dependency, names)))
    head = ["pins:", *entries] if entries else [NO_PINS]
    return "\n".join([*head, *left_out]) + "\n"


def pin_name(dependency: str) -> str:
    """A valid pin name from a FetchContent name (which may hold ``+``)."""
    name = _NOT_IN_PIN_NAME.sub("-", dependency).lstrip("._-").replace("..", ".")
    name = name.removesuffix(".lock").rstrip(".")
    return name or "pin"


def _left_out_because(pin: FoundPin) -> str | None:
    if not pin.editable:
        return WHY_UNEDITABLE.format(reason=pin.reason)
    if pin.repository is None:
        return WHY_NO_REPOSITORY
    if github_upstream(pin.repository) is None:
        return WHY_NO_UPSTREAM.format(repository=pin.repository)
    if pin.shallow and pin.kind != "tag":
        return WHY_SHALLOW_BRANCH.format(value=pin.value)
    return None


def _unique_name(dependency: str, taken: set[str]) -> str:
    # Pin names are unique ignoring case; one dependency can be pinned in two files.
    base = pin_name(dependency)
    name, count = base, 1
    while name.casefold() in taken:
        count += 1
        name = f"{base}-{count}"
    taken.add(name.casefold())
    return name


def _entry(pin: FoundPin, name: str) -> Iterator[str]:
    yield f"  - name: {_scalar(name)}"
    yield f"    upstream: {_scalar(github_upstream(pin.repository) or '')}"
    if pin.kind == "tag":
        yield "    track: tags"
        tags = _tags_glob(pin.value or "")
        if tags != DEFAULT_TAGS:
            yield f"    tags: {_scalar(tags)}"
    else:
        yield "    track: branch"
        if pin.kind == "branch" and pin.value:
            yield f"    branch: {_scalar(pin.value)}"
        else:
            yield f"    branch: {DEFAULT_BRANCH}{BRANCH_ASSUMED}"
    yield f"    file: {_scalar(pin.file)}"
    yield f"    dependency: {_scalar(pin.dependency)}"
    if pin.repeats:
        lines = ", ".join(str(line) for line in pin.repeats)
        s = "s" if len(pin.repeats) > 1 else ""
        yield REPEATED.format(file=pin.file, value=pin.value, s=s, lines=lines)
    if pin.companions:
        yield "    also:"
        for companion in pin.companions:
            yield from _also(companion.config)


def _also(config: CompanionConfig) -> Iterator[str]:
    yield f"      - file: {_scalar(config.file)}"
    if config.variable is not None:
        yield f"        variable: {_scalar(config.variable)}"
    if config.pattern is not None:
        yield f"        pattern: {_scalar(config.pattern)}"
    if config.format is not None:
        yield f"        format: {config.format}"


def _tags_glob(tag: str) -> str:
    """``v*`` for ``v4.4.2``, ``cutlass-*`` for ``cutlass-3.5.0``: the text before the
    first digit, so the bot compares only tags of the same family."""
    prefix = re.split(r"\d", tag, maxsplit=1)[0]
    return f"{prefix}*"


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar that reads back as this very string."""
    plain = _PLAIN_SCALAR.fullmatch(value) and value.lower() not in _YAML_WORDS
    if plain and not _NUMBER_LIKE.fullmatch(value):
        return value
    # A JSON string is a YAML double-quoted scalar with the same meaning.
    return json.dumps(value)
