"""Release tags as versions: which tags a pin following ``track: tags`` can order.

A version tag is ``MAJOR.MINOR.PATCH`` (no leading zeros), optionally after a ``v``,
optionally followed by one pre- or post-release part and ``+build`` metadata:

- pre-releases, semver style (``-rc1``, ``-rc.1``, ``-alpha``, ``-beta.2``) or PEP 440
  style (``rc1``, ``a1``, ``b2``, ``.dev0``); the label is ``dev``, ``a``/``alpha``,
  ``b``/``beta`` or ``rc``, case-insensitive, with an optional number (0 when left out);
- post-releases (``.post1``, ``-post.2``), which are releases, not pre-releases;
- ``+build`` metadata, accepted and ignored when ordering (as semver says).

Order, within one ``MAJOR.MINOR.PATCH``: ``dev`` < ``alpha`` < ``beta`` < ``rc`` <
the release < its post-releases, each by number. That is PEP 440's order, and semver's
for the usual tags; where semver compares ``rc10`` and ``rc2`` as text, this compares
their numbers, as release managers mean them. Spellings of one version
(``v1.2.3`` and ``1.2.3``, ``1.2.3rc1`` and ``1.2.3-rc.1``, ``1.2.3+a`` and ``1.2.3``)
are equal versions; :func:`newest` breaks such ties by tag text (see there).

Hand-written rather than built on a library: ``semver`` is not a dependency, and
``packaging`` is a development dependency only and accepts what a pin must refuse
(``v1.2`` and ``1.2.3.4`` are versions to it, ``v01.2.3`` is ``1.2.3``, and epochs
and local versions order real tags oddly), so it would need this grammar in front of
it anyway; past the grammar, the order is one tuple. The tests check the order
against ``packaging`` on every tag both accept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

# --- user-facing messages (tests match them); each completes "... is not a version: ..."

MSG_EMPTY = "it is empty"
MSG_NO_NUMBERS = "it does not start with a version number (MAJOR.MINOR.PATCH, like v1.2.3)"
MSG_NOT_THREE_NUMBERS = "it has {count} numbers where MAJOR.MINOR.PATCH has 3"
MSG_LEADING_ZERO = "{number!r} has a leading zero"
MSG_BAD_SUFFIX = (
    "{suffix!r} is neither a pre-release (-rc1, -rc.1, -alpha, -beta.2, rc1, a1, b2, .dev0) "
    "nor a post-release (.post1)"
)

_NUMBER = r"(?:0|[1-9][0-9]*)"
# Ranks of the parts that may follow MAJOR.MINOR.PATCH; a release is _RELEASE.
_PHASES = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "rc": 3, "post": 5}
_RELEASE = 4
_TAG = re.compile(
    rf"""
    v?(?P<major>{_NUMBER})\.(?P<minor>{_NUMBER})\.(?P<patch>{_NUMBER})
    (?:[-._]?(?P<label>(?i:dev|alpha|a|beta|b|rc|post))(?:[-._]?(?P<number>{_NUMBER}))?)?
    (?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?
    """,
    re.VERBOSE | re.ASCII,
)
# What why_not_a_version looks at once _TAG refused: the leading numbers and the rest.
_LEADING_NUMBERS = re.compile(r"v?([0-9]+(?:\.[0-9]+)*)", re.ASCII)


@dataclass(frozen=True, order=True)
class Version:
    """A release tag, ordered by version precedence; build it with :func:`parse_version`.

    Equal, hash and order go by ``precedence`` only: two spellings of one version
    are equal. ``tag`` is the text the version was read from.
    """

    # (major, minor, patch, phase, number): phase ranks dev, alpha, beta, rc,
    # _RELEASE (number 0), post.
    precedence: tuple[int, int, int, int, int]
    tag: str = field(compare=False)

    @property
    def major(self) -> int:
        return self.precedence[0]

    @property
    def minor(self) -> int:
        return self.precedence[1]

    @property
    def patch(self) -> int:
        return self.precedence[2]

    @property
    def is_prerelease(self) -> bool:
        return self.precedence[3] < _RELEASE

    def __str__(self) -> str:
        return self.tag


def parse_version(tag: str) -> Version | None:
    """The version ``tag`` stands for, or None when it is not a version tag."""
    match = _TAG.fullmatch(tag)
    if match is None:
        return None
    label = match["label"]
    phase = _RELEASE if label is None else _PHASES[label.lower()]
    number = int(match["number"] or 0)
    release = (int(match["major"]), int(match["minor"]), int(match["patch"]))
    return Version((*release, phase, number), tag)


def why_not_a_version(tag: str) -> str | None:
    """Why ``tag`` is not a version tag (a message above), or None when it is one."""
    if parse_version(tag) is not None:
        return None
    if not tag:
        return MSG_EMPTY
    leading = _LEADING_NUMBERS.match(tag)
    if leading is None:
        return MSG_NO_NUMBERS
    numbers = leading.group(1).split(".")
    if len(numbers) != 3:
        return MSG_NOT_THREE_NUMBERS.format(count=len(numbers))
    padded = [number for number in numbers if len(number) > 1 and number.startswith("0")]
    if padded:
        return MSG_LEADING_ZERO.format(number=padded[0])
    return MSG_BAD_SUFFIX.format(suffix=tag[leading.end() :])


def newest(tags: Iterable[str], pattern: str, *, prereleases: bool) -> Version | None:
    """The newest version among ``tags`` that match the glob ``pattern``.

    ``pattern`` is an fnmatch glob, case-sensitive. Tags that are not versions are
    skipped, and so are pre-releases unless ``prereleases``. Among spellings of the
    newest version the greatest tag text wins, whatever the order of ``tags``: ``v1.2.3``
    over ``1.2.3`` (``v`` sorts after the digits), ``1.2.3-rc1`` over ``1.2.3-rc.1``.
    """
    candidates = [
        version
        for tag in tags
        if fnmatchcase(tag, pattern)
        and (version := parse_version(tag)) is not None
        and (prereleases or not version.is_prerelease)
    ]
    return max(candidates, key=lambda version: (version, version.tag), default=None)


__all__ = ["Version", "newest", "parse_version", "why_not_a_version"]
