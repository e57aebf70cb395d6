"""What GitHub would act on, written apart from ``bot.github.neutralise`` so the tests check it
against an independent reading of the rules (stricter than GitHub where in doubt)."""

from __future__ import annotations

import re

WJ = "\N{WORD JOINER}"

MENTION = re.compile(r"@[\w-]")
REFERENCE = re.compile(r"(?i)#\d|gh-\d")  # covers owner/repo#1 too
ISSUE_URL = re.compile(r"(?i)(?:(?:https?|ftp)://|www\.)[^\s<>]*/(?:issues|pulls?|discussions)/\d")
# No word boundary before the keyword: stricter than GitHub ("prefixes #1" counts).
CLOSING = re.compile(
    r"(?i)(?:close[sd]?|fix(?:es|ed)?|resolve[sd]?):?\s*"
    r"(?:#\d|[\w.-]+/[\w.-]+#\d|gh-\d|(?:https?|ftp)://|www\.)"
)
MARKER_OPEN = "<!--"
# Controls a one-line text must not hold: C0, DEL, C1, line/paragraph separators, bidi.
ONE_LINE_FORBIDDEN = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
BLOCK_FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

_ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")
_TOKEN = re.compile(r"\\[!-/:-@\[-`{-~]|.", re.S)
_ALWAYS_SPECIAL = set("\\`*~[]<|$")


def without_reference_joiners(text: str) -> str:
    """``text`` with the joiners that defuse references and URLs taken out again, to
    check that closing keywords are broken on their own as well."""
    return re.sub(rf"(?<=[#@-]){WJ}|{WJ}(?=://|\.)", "", text)


def unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: m.group()[1], text)


def visible(text: str) -> str:
    """What a reader sees of ``inline`` output: no joiners, no escapes."""
    return unescape(text.replace(WJ, ""))


def acts(text: str) -> list[str]:
    """What GitHub could act on in ``text`` (empty when inert)."""
    problems = []
    for name, pattern in [
        ("mention", MENTION),
        ("reference", REFERENCE),
        ("issue url", ISSUE_URL),
        ("closing keyword", CLOSING),
    ]:
        if match := pattern.search(text):
            problems.append(f"{name}: {match.group()!r}")
    if match := CLOSING.search(without_reference_joiners(text)):
        problems.append(f"closing keyword not broken: {match.group()!r}")
    if MARKER_OPEN in text:
        problems.append("<!--")
    return problems


def unescaped_markdown(text: str) -> list[str]:
    """Markdown metacharacters of ``inline`` output that no backslash escapes."""
    found = []
    for token in _TOKEN.finditer(text):
        char, at = token.group(), token.start()
        if len(char) != 1:
            continue
        around = text[at - 1 : at] + text[at + 1 : at + 2]
        if (
            char in _ALWAYS_SPECIAL
            or (char == "_" and not (len(around) == 2 and around.isalnum() and at > 0))
            or (char == "&" and re.match(r"[#A-Za-z0-9]", text[at + 1 : at + 2]))
            or (at == 0 and char in "#>+-=")
        ):
            found.append(f"{char!r} at {at}")
    if re.match(r"\d+[.)]", text):
        found.append("ordered-list start")
    return found


def code_span_content(span: str, *, table: bool = False) -> str:
    """The text a code span shows, checking that it is one span its content cannot end."""
    fence = re.match(r"`+", span)
    assert fence, span
    n = len(fence.group())
    assert span.endswith(fence.group()), span
    assert len(span) > 2 * n, span
    inner = span[n:-n]
    assert not inner.startswith("`"), span
    assert not inner.endswith("`"), span
    assert all(len(run) != n for run in re.findall(r"`+", inner)), span
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
        inner = inner[1:-1]
    if table:
        assert re.search(r"(?<!\\)\|", inner) is None, span
        inner = inner.replace("\\|", "|")
    return inner


def table_cells(line: str) -> int:
    """How many cells a GitHub table row has: its pipes minus the outer two, where a
    pipe right after a backslash is content (GFM's cell scanner is a longest-match
    automaton, so ``\\|`` is a backslash and an escaped pipe)."""
    return len(re.findall(r"(?<!\\)\|", line)) - 1
