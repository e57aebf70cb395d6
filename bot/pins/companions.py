"""The files that must agree with a pin (``also:``), edited in the bump's own commit.

DeepGEMM's CMake file says its ref "should be kept in sync with
tools/install_deepgemm.sh": a bump that changed only the CMake file would break
that rule. Each companion must hold the pinned value before the bump; when one
does not, the files already disagree and the bot cannot know which is right, so it
names the file and writes nothing. The files are read once per sync, with the pin
file (``facts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.config.models import CompanionConfig, PinConfig
from bot.edit.companion import CompanionError, read_companion, set_companion
from bot.github.changes import FileEdit
from bot.pins.facts import BumpScope, PinFacts

REASON_COMPANION_MISSING = "{file} (under also: of {pin}) does not exist on {base}"
REASON_COMPANION_NOT_TEXT = "{file} (under also: of {pin}) is not UTF-8 text"
REASON_OUT_OF_SYNC = (
    "{file} holds {value!r} at line {line}, not the pinned {pinned!r}: the files are "
    "already out of sync and the bot will not guess which is right; make them agree first"
)


@dataclass(frozen=True)
class CompanionCheck:
    """One companion's value next to the pin's, for the dashboard."""

    file: str
    value: str | None  # None: unreadable, with the reason in ``problem``
    line: int | None
    problem: str | None


async def companion_edits(
    ctx: BumpScope, pin: PinConfig, facts: PinFacts, target: str
) -> list[FileEdit] | str:
    """Every companion file with ``target`` in place of the pinned value, or why not."""
    pinned = facts.pinned
    texts = _texts(ctx, pin, facts.companions)
    if isinstance(texts, str):
        return texts
    for companion in pin.also:
        text = texts[companion.file]
        try:
            found = await ctx.blocking.run(read_companion, text, companion, filename=companion.file)
            if found.value != pinned:
                return REASON_OUT_OF_SYNC.format(
                    file=companion.file, value=found.value, line=found.line, pinned=pinned
                )
            texts[companion.file] = await ctx.blocking.run(
                set_companion, text, companion, target, filename=companion.file
            )
        except CompanionError as exc:
            return str(exc)
    return [FileEdit(file, text.encode("utf-8")) for file, text in texts.items()]


async def check_companions(ctx: BumpScope, pin: PinConfig, facts: PinFacts) -> list[CompanionCheck]:
    """Each companion's value on the base and whether it agrees with the pinned value."""
    return [
        await _check(ctx, pin, companion, facts.companions.get(companion.file), facts.pinned)
        for companion in pin.also
    ]


async def _check(
    ctx: BumpScope, pin: PinConfig, companion: CompanionConfig, raw: bytes | None, pinned: str
) -> CompanionCheck:
    try:
        text = _text(ctx, pin, companion.file, raw)
        found = await ctx.blocking.run(read_companion, text, companion, filename=companion.file)
    except (_Unreadable, CompanionError) as exc:
        return CompanionCheck(companion.file, None, None, str(exc))
    problem = None
    if found.value != pinned:
        problem = REASON_OUT_OF_SYNC.format(
            file=companion.file, value=found.value, line=found.line, pinned=pinned
        )
    return CompanionCheck(companion.file, found.value, found.line, problem)


def _texts(
    ctx: BumpScope, pin: PinConfig, raws: Mapping[str, bytes | None]
) -> dict[str, str] | str:
    """The companion files' texts on the base, by file."""
    try:
        return {
            companion.file: _text(ctx, pin, companion.file, raws.get(companion.file))
            for companion in pin.also
        }
    except _Unreadable as exc:
        return str(exc)


class _Unreadable(Exception):
    """A companion file that is missing or not text; the message says which."""


def _text(ctx: BumpScope, pin: PinConfig, file: str, raw: bytes | None) -> str:
    if raw is None:
        reason = REASON_COMPANION_MISSING.format(file=file, pin=pin.name, base=ctx.base.name)
        raise _Unreadable(reason)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Unreadable(REASON_COMPANION_NOT_TEXT.format(file=file, pin=pin.name)) from None
