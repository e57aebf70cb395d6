"""Text written by others, made inert before the bot repeats it on GitHub.

The bot copies text it did not write into what it writes: upstream commit
subjects and author names into bump PRs and their commit messages, Buildkite
job labels and log excerpts into comments, error messages into the dashboard
issue. GitHub *acts* on some text, so a verbatim copy would let the text's
author act in the downstream repository with the bot's voice. Each rule below
stops one such action. Pure functions, no I/O.

Which function for which place:

- ``inline``: one line of Markdown (a PR-body list item, a table cell, a title).
- ``commit_line``: one line of a git commit message (plain text, no Markdown).
- ``code``: a code span (a path, a pattern, a step key), backticks included.
- ``code_block``: a fenced block (log excerpts, error lists), fences included.
- ``defuse``: only the rules that hold everywhere, for text that is already
  Markdown (the bot's own) with others' words inside it.

Rules every function applies (``defuse``):

- **Mentions.** ``@name`` and ``@org/team`` notify that user or team. A word
  joiner (U+2060: invisible, and unlike a zero-width space never a line break)
  goes between ``@`` and any word character, so GitHub sees no mention.
- **Issue references.** ``#123``, ``owner/repo#123`` and ``GH-123`` link to an
  issue and add a "mentioned this" event to its timeline, which notifies its
  participants. A word joiner goes between ``#`` (or ``GH-``) and the digit.
- **Issue URLs.** A URL of an issue, pull request or discussion is a reference
  too, and GitHub turns a bare URL into a link. A word joiner goes between the
  scheme and ``://`` (or after ``www``), so the URL is neither a link nor a
  reference (other URLs stay clickable: they notify nobody).
- **Closing keywords.** ``close``, ``fix`` or ``resolve`` (any tense, any case,
  an optional colon) followed by a reference closes that issue when the PR
  merges, from a PR body or a commit message on the default branch. The
  reference is already defused; the keyword also gets a word joiner after its
  first letter, so either defence alone is enough.
- **Hidden markers.** The bot finds its own comments and its dashboard issue by
  ``<!-- followup-bot:... -->`` markers, as a plain substring of the raw body,
  inside code or not. A word joiner after ``<`` in every ``<!--`` means copied
  text can never carry a marker (and never opens an HTML comment that hides
  the rest of the body).
- **Control characters.** NUL and other C0/C1 controls are dropped (GitHub may
  refuse them, terminals interpret them); bidirectional overrides and isolates
  are dropped because they make text read differently from what it is
  ("Trojan Source").

One-line text (``inline``, ``commit_line``, ``code``):

- **Line breaks** (LF, CR, VT, FF, NEL, U+2028, U+2029, tabs) become spaces and
  runs of spaces one space: a line break would end the list item or table row
  and start a block of the text's choosing (a heading, a fence, a marker line),
  or forge commit-message paragraphs.
- **Length.** Text longer than ``limit`` characters is cut (with an ellipsis)
  before any other rule, so one huge subject cannot push a body past GitHub's
  size limit and make every update of it fail.
- **Word joiners** already in the text are dropped (only the defusing adds
  them), so ``commit_line`` applied twice changes nothing more.

Markdown (``inline``):

- A backslash escape before every backslash, backtick, ``*``, ``~``, ``[``,
  ``]``, ``<``, ``|`` and ``$``; before ``&`` when a character that could start
  an entity follows; and before ``_`` unless it sits between two letters or
  digits (where GitHub never reads it as emphasis). So no code span,
  emphasis, strikethrough, link, image (auto-loaded, so a tracking pixel),
  footnote, raw HTML tag, autolink, table cell break or math span can start. An
  entity is escaped because GitHub looks for mentions and references in the
  *rendered* text, where ``&#64;name`` is ``@name`` again.
- A leading ``#``, ``>``, ``+``, ``-``, ``=`` or ``1.``/``1)`` is escaped, so the
  text stays a paragraph even where it starts a line (no heading, quote, list).

Code (``code``, ``code_block``): inside code, Markdown and HTML are literal, so
only the fences matter: the fence is one backtick longer than the longest run of
backticks in the text, so the text can never close it. In a table cell, ``|``
ends the cell even inside a code span, so ``code(..., table=True)`` escapes it.

Removing the word joiners and the backslash escapes gives back the text, with
only whitespace and control characters changed (tests check this), so readers
see what upstream wrote.
"""

from __future__ import annotations

import re

WORD_JOINER = "\N{WORD JOINER}"
ELLIPSIS = "…"
MAX_INLINE = 500  # characters of one line of others' text (a subject, a name, a cell)

# Closing keywords: close, closes, closed, fix, fixes, fixed, resolve, resolves, resolved.
KEYWORDS = r"close[sd]?|fix(?:e[sd])?|resolve[sd]?"
# What may follow a closing keyword and be closed (an already defused one counts too,
# so a keyword is broken whatever was done to its reference before).
_WJ = "\u2060?"  # an optional word joiner
REFERENCE_START = rf"#{_WJ}\d|[\w.-]+/[\w.-]+#{_WJ}\d|gh-{_WJ}\d|(?:https?|ftp){_WJ}://|www{_WJ}\."
# Bounded, so that a long log line full of "http://" costs linear time, not quadratic.
ISSUE_PATH = r"[^\s<>]{0,2000}?/(?:issues|pulls?|discussions)/\d"

_KEYWORD = re.compile(rf"(?i)(?:{KEYWORDS})(?=:?\s*(?:{REFERENCE_START}))")
_MENTION = re.compile(r"@(?=[\w-])")
_ISSUE_NUMBER = re.compile(r"(?i)(?:#|gh-)(?=\d)")
_ISSUE_URL = re.compile(rf"(?i)(?:https?|ftp)(?=://{ISSUE_PATH})|www(?=\.{ISSUE_PATH})")
_COMMENT_OPEN = re.compile(r"<(?=!--)")

# Dropped everywhere: C0/C1 controls but the line-breaking ones, bidi controls.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_DROP_CONTROLS = re.compile(rf"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f{_BIDI}]")
# Line breaks as ``str.splitlines`` knows them.
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE_BREAK = re.compile(rf"\r\n|[{_BREAKS}]")

_ESCAPE_ALWAYS = frozenset("\\`*~[]<|$")
_ESCAPE_AT_START = frozenset("#>+-=")
_ENTITY_START = re.compile(r"[#A-Za-z0-9]")
_ORDERED_LIST_START = re.compile(r"\d{1,9}(?=[.)])")
_BACKTICKS = re.compile(r"`+")


def defuse(text: str) -> str:
    """``text`` without controls and with no mention, reference, closing keyword,
    issue URL or ``<!--`` left; line breaks and Markdown are kept as they are."""
    text = _DROP_CONTROLS.sub("", text)
    text = _KEYWORD.sub(lambda m: m.group()[0] + WORD_JOINER + m.group()[1:], text)
    text = _MENTION.sub("@" + WORD_JOINER, text)
    text = _ISSUE_NUMBER.sub(lambda m: m.group() + WORD_JOINER, text)
    text = _ISSUE_URL.sub(lambda m: m.group() + WORD_JOINER, text)
    return _COMMENT_OPEN.sub("<" + WORD_JOINER, text)


def one_line(text: str, *, limit: int = MAX_INLINE) -> str:
    """``text`` on one line: controls dropped, whitespace runs one space, at most
    ``limit`` characters (then cut, with an ellipsis).

    Word joiners are dropped too (the defusing adds its own): so neutralising
    twice gives the same text, and invisible characters cannot dodge the limit.
    """
    text = _DROP_CONTROLS.sub("", text.replace("\t", " ").replace(WORD_JOINER, ""))
    text = " ".join(_LINE_BREAK.sub(" ", text).split())
    if len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + ELLIPSIS
    return text


def commit_line(text: str, *, limit: int = MAX_INLINE) -> str:
    """One line of others' text for a git commit message: one line, defused.

    Commit messages are plain text, so there is nothing to escape; but GitHub
    still links mentions and references in them, and closing keywords act when
    the commit reaches the default branch.
    """
    return defuse(one_line(text, limit=limit))


def inline(text: str, *, limit: int = MAX_INLINE) -> str:
    """One line of others' text for Markdown: one line, defused, escaped.

    Safe anywhere inline, in a table cell too, and at the start of a line.
    """
    return _escape(defuse(one_line(text, limit=limit)))


def code(text: str, *, table: bool = False, limit: int = MAX_INLINE) -> str:
    """Others' text as one code span, backticks included; ``table`` when the span
    is in a table cell (where ``|`` must be escaped even inside code)."""
    content = defuse(one_line(text, limit=limit))
    if table:
        content = content.replace("|", "\\|")
    if not content:
        return "` `"
    fence = "`" * (_longest_backticks(content) + 1)
    if content.startswith("`") or content.endswith("`"):
        content = f" {content} "  # a space each side, which the span does not show
    return f"{fence}{content}{fence}"


def code_block(text: str, info: str = "") -> str:
    """Others' text (many lines) as one fenced code block, fences included.

    ``info`` is the bot's own language tag (``text``, ``python``), not others' text.
    """
    body = defuse(_LINE_BREAK.sub("\n", text))
    fence = "`" * max(3, _longest_backticks(body) + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def _escape(text: str) -> str:
    out: list[str] = []
    for at, char in enumerate(text):
        if (
            char in _ESCAPE_ALWAYS
            or (char == "_" and not _between_alnums(text, at))
            or (char == "&" and _ENTITY_START.match(text, at + 1))
            or (at == 0 and char in _ESCAPE_AT_START)
        ):
            out.append("\\")
        out.append(char)
    escaped = "".join(out)
    if match := _ORDERED_LIST_START.match(escaped):
        escaped = f"{match.group()}\\{escaped[match.end() :]}"
    return escaped


def _between_alnums(text: str, at: int) -> bool:
    return 0 < at < len(text) - 1 and text[at - 1].isalnum() and text[at + 1].isalnum()
