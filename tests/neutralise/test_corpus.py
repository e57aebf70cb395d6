"""A corpus of hostile text, with exactly what each neutraliser makes of it."""

from __future__ import annotations

import pytest

from bot.github.neutralise import (
    ELLIPSIS,
    MAX_INLINE,
    code,
    code_block,
    commit_line,
    defuse,
    inline,
    one_line,
)
from tests.neutralise.laws import WJ, acts, code_span_content, unescaped_markdown, visible

J = WJ

# (input, inline(input), commit_line(input))
CORPUS: list[tuple[str, str, str]] = [
    # closing keywords, every form, and what they close
    ("fixes #1", f"f{J}ixes #{J}1", f"f{J}ixes #{J}1"),
    ("Fixes: #12", f"F{J}ixes: #{J}12", f"F{J}ixes: #{J}12"),
    ("fix #3", f"f{J}ix #{J}3", f"f{J}ix #{J}3"),
    ("fixed #4", f"f{J}ixed #{J}4", f"f{J}ixed #{J}4"),
    ("close #5", f"c{J}lose #{J}5", f"c{J}lose #{J}5"),
    (
        "closes vllm-project/vllm#1",
        f"c{J}loses vllm-project/vllm#{J}1",
        f"c{J}loses vllm-project/vllm#{J}1",
    ),
    ("CLOSED GH-7", f"C{J}LOSED GH-{J}7", f"C{J}LOSED GH-{J}7"),
    ("resolve gh-8", f"r{J}esolve gh-{J}8", f"r{J}esolve gh-{J}8"),
    (
        "resolves https://github.com/o/r/issues/1",
        f"r{J}esolves https{J}://github.com/o/r/issues/1",
        f"r{J}esolves https{J}://github.com/o/r/issues/1",
    ),
    (
        "Resolved: www.github.com/o/r/pull/2",
        f"R{J}esolved: www{J}.github.com/o/r/pull/2",
        f"R{J}esolved: www{J}.github.com/o/r/pull/2",
    ),
    (
        "fix: http://ghe.example.com/a/b/pull/3/files",
        f"f{J}ix: http{J}://ghe.example.com/a/b/pull/3/files",
        f"f{J}ix: http{J}://ghe.example.com/a/b/pull/3/files",
    ),
    # stricter than GitHub: no word boundary is needed for the keyword to be broken
    ("prefixes #1", f"pref{J}ixes #{J}1", f"pref{J}ixes #{J}1"),
    # a keyword with nothing to close is left alone
    ("Fix the fix", "Fix the fix", "Fix the fix"),
    # bare references and issue URLs
    ("Revert #123", f"Revert #{J}123", f"Revert #{J}123"),
    (
        "see owner/repo#45 and GH-6",
        f"see owner/repo#{J}45 and GH-{J}6",
        f"see owner/repo#{J}45 and GH-{J}6",
    ),
    (
        "https://github.com/o/r/discussions/9",
        f"https{J}://github.com/o/r/discussions/9",
        f"https{J}://github.com/o/r/discussions/9",
    ),
    (
        "HTTPS://GITHUB.COM/O/R/PULLS/9",
        f"HTTPS{J}://GITHUB.COM/O/R/PULLS/9",
        f"HTTPS{J}://GITHUB.COM/O/R/PULLS/9",
    ),
    # other URLs notify nobody and stay links
    (
        "docs: https://docs.vllm.ai/en/latest",
        "docs: https://docs.vllm.ai/en/latest",
        "docs: https://docs.vllm.ai/en/latest",
    ),
    ("Squash (#123)", f"Squash (#{J}123)", f"Squash (#{J}123)"),
    # mentions
    ("@maintainer", f"@{J}maintainer", f"@{J}maintainer"),
    ("thanks @org/team", f"thanks @{J}org/team", f"thanks @{J}org/team"),
    ("mail a@b.com", f"mail a@{J}b.com", f"mail a@{J}b.com"),
    ("`@torch.compile` fix", f"\\`@{J}torch.compile\\` fix", f"`@{J}torch.compile` fix"),
    # entities are decoded before GitHub looks for mentions: the & is escaped
    ("&#64;maintainer", f"\\&#{J}64;maintainer", f"&#{J}64;maintainer"),
    ("AT&T & co", "AT\\&T & co", "AT&T & co"),
    # links, images, HTML, markers
    ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))", "[x](javascript:alert(1))"),
    ("![img](http://x/y.png)", "!\\[img\\](http://x/y.png)", "![img](http://x/y.png)"),
    (
        "<img src=x onerror=alert(1)>",
        "\\<img src=x onerror=alert(1)>",
        "<img src=x onerror=alert(1)>",
    ),
    ("<https://evil.example>", "\\<https://evil.example>", "<https://evil.example>"),
    (
        "<!-- followup-bot:dashboard -->",
        f"\\<{J}!-- followup-bot:dashboard -->",
        f"<{J}!-- followup-bot:dashboard -->",
    ),
    (
        "x <!-- followup-bot:bump pin=a target=b --> y",
        f"x \\<{J}!-- followup-bot:bump pin=a target=b --> y",
        f"x <{J}!-- followup-bot:bump pin=a target=b --> y",
    ),
    # block starts, fences, tables, emphasis, math
    ("# heading", "\\# heading", "# heading"),
    ("> quote", "\\> quote", "> quote"),
    ("- item", "\\- item", "- item"),
    ("+ item", "\\+ item", "+ item"),
    ("=== setext", "\\=== setext", "=== setext"),
    ("1. item", "1\\. item", "1. item"),
    ("12) item", "12\\) item", "12) item"),
    ("```python", "\\`\\`\\`python", "```python"),
    ("a | b", "a \\| b", "a | b"),
    ("*bold* _em_ ~~strike~~", "\\*bold\\* \\_em\\_ \\~\\~strike\\~\\~", "*bold* _em_ ~~strike~~"),
    ("snake_case __init__", "snake_case \\_\\_init\\_\\_", "snake_case __init__"),
    ("$x^2$", "\\$x^2\\$", "$x^2$"),
    ("back\\slash", "back\\\\slash", "back\\slash"),
    (
        "[Bugfix] Fix `foo` (#1)",
        f"\\[Bugfix\\] Fix \\`foo\\` (#{J}1)",
        f"[Bugfix] Fix `foo` (#{J}1)",
    ),
    # one line, no controls
    ("line1\nline2\r\nline3\rline4", "line1 line2 line3 line4", "line1 line2 line3 line4"),
    ("nul\x00byte\x1b[31m", "nulbyte\\[31m", "nulbyte[31m"),
    ("para\u2028graph\u2029end\x85x", "para graph end x", "para graph end x"),
    ("tab\there\x0bvt\x0cff", "tab here vt ff", "tab here vt ff"),
    ("evil\u202etxt.exe\u2066", "eviltxt.exe", "eviltxt.exe"),
    ("  spaced   out  ", "spaced out", "spaced out"),
    (f"pre{J}joined @{J}x <{J}!--", f"prejoined @{J}x \\<{J}!--", f"prejoined @{J}x <{J}!--"),
    ("", "", ""),
]


@pytest.mark.parametrize(("text", "as_inline", "as_commit"), CORPUS)
def test_corpus(text: str, as_inline: str, as_commit: str) -> None:
    assert inline(text) == as_inline
    assert commit_line(text) == as_commit
    for out in (as_inline, as_commit):
        assert acts(out) == [], out
        assert "\n" not in out
    assert unescaped_markdown(as_inline) == []


@pytest.mark.parametrize(("text", "as_inline", "as_commit"), CORPUS)
def test_corpus_visible_text_is_unchanged(text: str, as_inline: str, as_commit: str) -> None:
    if text.isprintable():
        assert visible(as_inline) == " ".join(text.split())
        assert as_commit.replace(WJ, "") == " ".join(text.split())


def test_an_upstream_author_named_like_a_maintainer() -> None:
    assert inline("@maintainer") == f"@{J}maintainer"
    assert inline("Mona @ Lisa") == "Mona @ Lisa"  # nothing after the @ to ping


def test_very_long_text_is_cut_with_an_ellipsis() -> None:
    out = inline("x" * 10_000)
    assert out == "x" * (MAX_INLINE - 1) + ELLIPSIS
    assert commit_line("@a " * 1000).count(ELLIPSIS) == 1
    assert len(commit_line("@a " * 1000).replace(WJ, "")) <= MAX_INLINE
    # cut first, defused after: a reference cut in half is defused all the same
    cut = inline("y" * (MAX_INLINE - 4) + " #123456")
    assert cut.endswith(f"#{J}1{ELLIPSIS}")
    assert one_line("abc", limit=2) == "a" + ELLIPSIS


def test_joiners_cannot_dodge_the_length_limit() -> None:
    assert len(one_line(WJ * 100_000 + "x")) == 1


@pytest.mark.parametrize(
    ("text", "table", "span"),
    [
        ("vllm_flash_attn/*", False, "`vllm_flash_attn/*`"),
        ("a`b", False, "``a`b``"),
        ("a``b", False, "```a``b```"),
        ("`x`", False, "`` `x` ``"),
        ("a|b", False, "`a|b`"),
        ("a|b", True, "`a\\|b`"),
        ("a\\|b", True, "`a\\\\|b`"),
        ("@u <!-- #1", False, f"`@{J}u <{J}!-- #{J}1`"),
        ("fixes o/r#2", False, f"`f{J}ixes o/r#{J}2`"),
        ("two\nlines\x00", False, "`two lines`"),
        ("", False, "` `"),
    ],
)
def test_code_spans(text: str, table: bool, span: str) -> None:
    assert code(text, table=table) == span
    assert acts(span) == []
    if text.isprintable() and text:  # (an empty span shows one space)
        assert code_span_content(span, table=table).replace(WJ, "") == " ".join(text.split())


@pytest.mark.parametrize(
    ("text", "info", "block"),
    [
        ("Not allowed: x", "", "```\nNot allowed: x\n```"),
        ("a\n```\nb", "", "````\na\n```\nb\n````"),
        ("````` five", "text", "``````text\n````` five\n``````"),
        (
            "x <!-- followup-bot:retry-flaky --> @u\nfixes #1",
            "",
            f"```\nx <{J}!-- followup-bot:retry-flaky --> @{J}u\nf{J}ixes #{J}1\n```",
        ),
        ("r\r\nn\rm\u2028end\x00\x1b", "", "```\nr\nn\nm\nend\n```"),
        ("\tindented\ttabs", "", "```\n\tindented\ttabs\n```"),
    ],
)
def test_code_blocks(text: str, info: str, block: str) -> None:
    assert code_block(text, info) == block
    assert acts(block) == []


def test_defuse_keeps_markdown_and_line_breaks() -> None:
    own = "retried by force (@alice said fixes #3) → [new job](https://bk.example/j/1)\nnext"
    assert defuse(own) == (
        f"retried by force (@{J}alice said f{J}ixes #{J}3) → [new job](https://bk.example/j/1)\nnext"
    )
