"""Laws of the allowlist editor, checked on generated allowlists.

Every generated input and every output goes through ``ruff format --check``;
the texts are collected while hypothesis runs and judged in one ruff call
per line length, since a subprocess per example would be slow.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.edit.allowlist import allowlist_diff, edit_allowlist, python_literal, read_allowlist

from .helpers import assert_ruff_formatted

LINE_LENGTHS = (40, 60, 88, 100)
# Mostly glob-like path characters, plus the ones that need care when quoted.
ALPHABET = [*"abcdefghxyz0123456789_/.*?[]-", '"', "'", "\\", "é", " "]
BEFORE = "import sys\n\n# Temporary allowlist of extensions not yet on the stable ABI.\n"
AFTER = "\n\nprint(sys.argv)\n"

patterns = st.text(alphabet=st.sampled_from(ALPHABET), min_size=1, max_size=34)


@dataclass(frozen=True)
class Allowlist:
    text: str
    entries: list[str]
    line_length: int
    leading: dict[str, str]  # entry -> own-line comment above it
    trailing: dict[str, str]  # entry -> comment after it on its line
    dangling: str | None  # own-line comment before ")"


@st.composite
def allowlists(draw: st.DrawFn) -> Allowlist:
    """A ruff-formatted script around a generated allowlist (ruff confirms it later)."""
    entries = draw(st.lists(patterns, max_size=6, unique=True))
    line_length = draw(st.sampled_from(LINE_LENGTHS))
    head = draw(st.sampled_from(["X = ", "X: tuple[str, ...] = "]))
    commented = draw(st.lists(st.sampled_from(entries), unique=True)) if entries else []
    leading = {entry: f"# above {index}" for index, entry in enumerate(commented[::2])}
    trailing = {entry: f"# after {index}" for index, entry in enumerate(commented[1::2])}
    dangling = draw(st.sampled_from([None, "# last"]))
    one_line = draw(st.booleans())

    literals = [python_literal(entry) for entry in entries]
    flat = "(" + ", ".join(literals) + ("," if len(literals) == 1 else "") + ")"
    fits = len(head) + len(flat) <= line_length
    has_comments = bool(commented) or dangling is not None
    if not has_comments and fits and (one_line or len(entries) < 2):
        value = flat
    elif not entries and not has_comments:
        value = "()"
    else:
        lines = ["("]
        for entry, literal in zip(entries, literals, strict=True):
            if entry in leading:
                lines.append(f"    {leading[entry]}")
            comment = f"  {trailing[entry]}" if entry in trailing else ""
            lines.append(f"    {literal},{comment}")
        if dangling is not None:
            lines.append(f"    {dangling}")
        value = "\n".join([*lines, ")"])
    text = BEFORE + head + value + AFTER
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return Allowlist(text, entries, line_length, leading, trailing, dangling)


@dataclass(frozen=True)
class Edit:
    remove: list[str]
    replace: dict[str, list[str]]


@st.composite
def edits(draw: st.DrawFn, entries: list[str]) -> Edit:
    if not entries:
        return Edit([], {})
    remove = draw(st.lists(st.sampled_from(entries), unique=True))
    kept = [entry for entry in entries if entry not in remove]
    replace: dict[str, list[str]] = {}
    narrow = draw(st.booleans())
    if kept and narrow:
        target = draw(st.sampled_from(kept))
        fresh = st.builds("new/{}".format, patterns).filter(lambda pattern: pattern not in entries)
        replace[target] = draw(st.lists(fresh, min_size=1, max_size=3, unique=True))
    return Edit(remove, replace)


def expected_entries(entries: list[str], edit: Edit) -> list[str]:
    result: list[str] = []
    for entry in entries:
        if entry in edit.replace:
            result.extend(edit.replace[entry])
        elif entry not in edit.remove:
            result.append(entry)
    return result


def changed_lines(diff: str) -> tuple[int, int]:
    """(added, removed) lines of a unified diff, headers excluded."""
    lines = diff.splitlines()[2:]
    return (
        sum(line.startswith("+") for line in lines),
        sum(line.startswith("-") for line in lines),
    )


def test_edits_keep_the_laws(tmp_path: Path) -> None:
    judged: defaultdict[int, list[str]] = defaultdict(list)

    @settings(max_examples=250, deadline=None, derandomize=True)
    @given(data=st.data())
    def law(data: st.DataObject) -> None:
        allowlist = data.draw(allowlists())
        edit = data.draw(edits(allowlist.entries))
        text = allowlist.text

        assert edit_allowlist(text, variable="X") == text  # the empty edit
        new = edit_allowlist(
            text,
            variable="X",
            remove=edit.remove,
            replace=edit.replace,
            line_length=allowlist.line_length,
        )

        before, after = read_allowlist(text, variable="X"), read_allowlist(new, variable="X")
        assert list(after.entries) == expected_entries(allowlist.entries, edit)
        assert new[: after.start] == text[: before.start]
        assert new[after.end :] == text[before.end :]
        # Comments above entries and before ")" survive; a removed entry's own
        # trailing comment goes with it, the others stay.
        for comment in [*allowlist.leading.values(), allowlist.dangling]:
            assert comment is None or comment in new
        for entry, comment in allowlist.trailing.items():
            assert (comment in new) == (entry not in edit.remove)
        if "\r\n" in text:
            assert "\n" not in new.replace("\r\n", "")
        split = "\n" in text[before.start : before.end]
        if split and len(after.entries) > 1:
            # One entry per line stays so: only the edited entries' lines change.
            added = sum(len(narrower) for narrower in edit.replace.values())
            removed = len(edit.remove) + len(edit.replace)
            assert changed_lines(allowlist_diff(text, new, "x.py")) == (added, removed)
        judged[allowlist.line_length].extend([text, new])

    law()
    for line_length, texts in judged.items():
        assert_ruff_formatted(texts, tmp_path / str(line_length), line_length=line_length)
