"""What the allowlist follow-ups say: commit messages, comments, the stale-entries PR."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.github import neutralise

STALE_BRANCH = "followup-bot/allowlist"
STALE_TITLE = "Remove stale torch ABI allowlist entries"
MARKER_EVIDENCE = "<!-- followup-bot:allowlist-evidence job={job} -->"
MARKER_STALE_PR = "<!-- followup-bot:allowlist-stale -->"

COMMIT_PRUNE = "Prune torch ABI allowlist entries made stale by {pin}"
COMMIT_STALE = "Remove stale torch ABI allowlist entries"


def prune_message(pin: str, changes: str, trailers: str | None) -> str:
    """The message of a prune commit on a bump branch; with the bump's trailers, so the
    commit still reads as the bot's bump when the bot has nothing else to go by."""
    parts = [COMMIT_PRUNE.format(pin=pin), changes]
    return "\n\n".join([*parts, trailers] if trailers else parts) + "\n"


COMMENT_PRUNED = (
    "The torch ABI audit of this PR ([job]({job_url})) reports allowlist entries that "
    "`{upstream}` provides as stale, so the bot added {sha7} to this PR, which updates "
    "`{file}`:\n\n{changes}\n\nEvidence:\n\n```\n{lines}\n```"
)
COMMENT_NOT_OWNED = (
    "\n\nStale entries this pin does not own are left alone here (the stale-entries PR "
    "handles them): {patterns}."
)
COMMENT_HUMAN_OWNED = (
    "The torch ABI audit of this PR ([job]({job_url})) reports stale allowlist entries, but "
    "someone else owns this branch now, so the bot did not change it. The edit it would "
    "make to `{file}`:\n\n{changes}\n\nEvidence:\n\n```\n{lines}\n```"
)
COMMENT_UNEXPECTED = (
    "The torch ABI audit ([job]({job_url})) found torch-unstable libraries that no "
    "`{variable}` entry covers:\n\n{libraries}\n\nThe bot never adds allowlist entries. If "
    "these libraries are expected to stay on the unstable ABI for now, a maintainer can add "
    "this to `{variable}` in `{file}`:\n\n```python\n{lines}\n```"
)
COMMENT_STALE_GONE = (
    "Closing: the entries this PR removes are no longer in `{file}` on `{branch}`, or the "
    "audit no longer reports them stale."
)

BODY_STALE = """\
The torch ABI audit on `{branch}` reports these `{variable}` entries in `{file}` as stale \
(each matches a library that no longer uses unstable libtorch symbols), and the audit fails \
until they are gone:

{changes}

### Evidence
{evidence}

Entries that match nothing on this platform (for example ROCm-only ones on the CUDA build) \
are never removed on this evidence. The bot updates this PR when the evidence changes and \
closes it when the entries are gone.

{marker}"""


def describe_changes(remove: Sequence[str], replace: Mapping[str, Sequence[str]]) -> str:
    """The edit as a list, for PR bodies, comments and commit messages alike.

    Patterns are others' text (library names from a build log), hence code spans that
    nothing inside can close, and defused.
    """
    lines = [f"- remove {code(pattern)}" for pattern in remove]
    for pattern, narrower in replace.items():
        lines.append(f"- narrow {code(pattern)} to {codes(narrower)}")
    return "\n".join(lines)


def code(item: str) -> str:
    """One pattern or library name as a code span."""
    return neutralise.code(item)


def codes(items: Sequence[str]) -> str:
    """Patterns or library names as a comma-separated list of code spans."""
    return ", ".join(code(item) for item in items)


def code_list(items: Sequence[str]) -> str:
    """Patterns or library names as a Markdown list of code spans."""
    return "\n".join(f"- {code(item)}" for item in items)


def evidence_block(job_url: str | None, lines: Sequence[str], table: str | None = None) -> str:
    """Log lines and the audit table as code blocks their text cannot close."""
    source = f"[audit job]({job_url})" if job_url else "the bot's own audit of the wheel"
    block = f"From {source}:\n\n" + neutralise.code_block("\n".join(lines))
    if table:
        block += "\n\nPer allowlist entry:\n\n" + neutralise.code_block(table.rstrip())
    return block


def allowlist_lines(patterns: Sequence[str]) -> str:
    """Entries to paste into the allowlist tuple, each a valid Python string literal
    whatever the pattern holds (a quote in it cannot end the string and add code).

    Defused first, so a joiner the defusing adds shows as a visible ``\\u2060``.
    """
    return "\n".join(f"    {python_string(neutralise.defuse(p))}," for p in patterns)


def python_string(text: str) -> str:
    """``text`` as a double-quoted Python string literal, printable characters only."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return '"' + "".join(out) + '"'
