"""Laws of the neutralisers, for any text: inert, one line, readable, stable."""

from __future__ import annotations

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from bot.github.neutralise import (
    MAX_INLINE,
    code,
    code_block,
    commit_line,
    defuse,
    inline,
    one_line,
)
from tests.neutralise.laws import (
    BLOCK_FORBIDDEN,
    ONE_LINE_FORBIDDEN,
    WJ,
    acts,
    code_span_content,
    unescaped_markdown,
    visible,
)

# Pieces of hostile text, so that random joins hit keyword + reference, @ + name,
# <!-- and fences far more often than random characters would.
TOKENS = [
    "fixes", "Fixes:", "CLOSED", "resolve", "close", "fix", "resolves:", " ", "  ",
    "#", "#1", "12", "GH-", "gh-7", "owner/repo", "vllm-project/vllm#3", "/", ":",
    "@", "@maintainer", "@org/team", "a@b", "https://", "http://github.com/o/r/issues/",
    "HTTPS://", "ftp://", "www.", "/pull/", "/pulls/", "/issues/", "/discussions/",
    "<!--", "-->", "<", ">", "!", "[", "]", "(", ")", "](", "![", "`", "```", "````",
    "*", "_", "__", "~", "|", "&", "&#64;", "&amp;", "$", "\\", "-", "=", "+", "1.",
    "2)", "\n", "\r\n", "\r", "\x00", "\x1b", "\x7f", "\u2028", "\u2029", "\t",
    "\x85", "\x0b", "\u202e", "\u2066", WJ, "\u200b", "é", "ß", "名", "a", "b", "x_y",
]  # fmt: skip
PRINTABLE_TOKENS = [t for t in TOKENS if t.isprintable()]

hostile = st.lists(st.sampled_from(TOKENS) | st.text(max_size=3), max_size=30).map("".join)
printable = (
    st.lists(
        st.sampled_from(PRINTABLE_TOKENS) | st.text(st.characters(codec="utf-8"), max_size=3),
        max_size=30,
    )
    .map("".join)
    .filter(str.isprintable)
)
multiline = st.lists(st.sampled_from([*PRINTABLE_TOKENS, "\n"]), max_size=40).map("".join)


def one_line_ok(text: str) -> bool:
    return ONE_LINE_FORBIDDEN.search(text) is None and len(text.splitlines()) <= 1


@given(hostile)
def test_inline_is_inert_one_line_markdown(text: str) -> None:
    out = inline(text)
    assert acts(out) == []
    assert unescaped_markdown(out) == []
    assert "](" not in out.replace("\\]", "")
    assert one_line_ok(out)


@given(hostile)
def test_commit_line_is_inert_and_one_line(text: str) -> None:
    out = commit_line(text)
    assert acts(out) == []
    assert one_line_ok(out)


@given(hostile, st.booleans())
def test_code_is_one_unbreakable_inert_span(text: str, table: bool) -> None:
    out = code(text, table=table)
    assert acts(out) == []
    assert one_line_ok(out)
    code_span_content(out, table=table)  # checks the span cannot end early


@given(hostile)
def test_code_block_is_one_unbreakable_inert_block(text: str) -> None:
    out = code_block(text, "text")
    assert acts(out) == []
    assert BLOCK_FORBIDDEN.search(out) is None
    lines = out.split("\n")
    fence = re.match(r"`+", lines[0])
    assert fence
    assert len(fence.group()) >= 3
    assert lines[0] == fence.group() + "text"
    assert lines[-1] == fence.group()
    # no line inside can close the fence (or open another one as long)
    assert all(
        len(run) < len(fence.group()) for line in lines[1:-1] for run in re.findall(r"`+", line)
    )


@given(hostile)
def test_defuse_is_inert_and_idempotent(text: str) -> None:
    out = defuse(text)
    assert acts(out) == []
    assert defuse(out) == out


@given(hostile)
def test_neutralising_twice_is_still_safe(text: str) -> None:
    twice = inline(inline(text))
    assert acts(twice) == []
    assert unescaped_markdown(twice) == []
    assert one_line_ok(twice)
    assert commit_line(commit_line(text)) == commit_line(text)
    assert acts(code(code(text))) == []
    assert acts(code_block(code_block(text))) == []


@given(printable)
def test_inline_keeps_the_visible_text(text: str) -> None:
    assume(len(text) <= MAX_INLINE)
    assert visible(inline(text)) == " ".join(text.split())


@given(printable)
def test_commit_line_keeps_the_visible_text(text: str) -> None:
    assume(len(text) <= MAX_INLINE)
    assert commit_line(text).replace(WJ, "") == " ".join(text.split())


@given(printable, st.booleans())
def test_code_keeps_the_visible_text(text: str, table: bool) -> None:
    assume(text.strip() and len(text) <= MAX_INLINE)
    shown = code_span_content(code(text, table=table), table=table)
    assert shown.replace(WJ, "") == " ".join(text.split())


@given(multiline)
def test_code_block_keeps_the_visible_text(text: str) -> None:
    out = code_block(text)
    body = out.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert body.replace(WJ, "") == text


@given(hostile, st.integers(min_value=1, max_value=80))
def test_the_limit_holds(text: str, limit: int) -> None:
    assert len(one_line(text, limit=limit)) <= limit
    assert len(commit_line(text, limit=limit).replace(WJ, "")) <= limit
