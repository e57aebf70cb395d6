"""What a bump PR says: title, body, commit message and comments.

Pure functions over plain data, so the wording is tested without any I/O and
the handlers only decide *when* to say it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config.models import PinConfig
from bot.github import neutralise
from bot.github.bot_branches import BUMP_PREFIX
from bot.github.bot_branches import commit_trailers as commit_trailers  # re-exported

MAX_LISTED_COMMITS = 50
BRANCH_PREFIX = BUMP_PREFIX
TRAILER_PIN = "Followup-Bot-Pin"
TRAILER_TARGET = "Followup-Bot-Target"
TRAILER_FROM = "Followup-Bot-From"

TITLE = "Bump {pin} from {old7} to {new7} ({count} commit{plural})"
TITLE_TAG = "Bump {pin} from {old} to {new}"  # a release tag says more than a count
TITLE_TARGET = re.compile(r" to (?P<new7>[0-9a-f]{7,40}) \(\d+ commits?\)$")
TITLE_TAG_TARGET = re.compile(r"^Bump \S+ from \S+ to (?P<tag>\S+)$")
FOLLOWED_BRANCH = "`{upstream}@{branch}`"
FOLLOWED_TAGS = "the newest `{tags}` tag of `{upstream}`"
INTRO = "Bumps `{dependency}` in `{file}` from `{old}` to `{new}`, {relation} {followed}"
RELATION_HEAD = "the head of"
RELATION_TAG = "now"
RELEASE_NOTES = "[release notes]({url})"
RELEASE_NOTES_LINK = RELEASE_NOTES.partition("{url}")[0]
COMPARE_LINK = "([compare]("  # where the intro's links begin; the release notes go first
ALSO_CHANGED = "Also changed, as they must agree: {files}."
MARKER = "<!-- followup-bot:bump pin={pin} target={target} -->"

BODY_CONTROLS = """\
### Controls
- Review and merge as usual once CI is green.
- **Push to this branch** to take it over: the bot stops updating it and says so once.
- **Close this PR** to skip upstream `{new7}`; the bot opens a new one when upstream moves again.
- The bot updates this PR in place when {followed} moves, and closes it if the pin \
becomes current some other way.

If this bump breaks main, revert it and pause the bot for this pin \
(`paused: true` under `{pin}` in `.github/followup-bot.yml`)."""

COMMENT_ALREADY_CURRENT = (
    "Closing: `{file}` already pins `{dependency}` at `{value7}`, which is {where} "
    "(`{head7}`). Nothing to bump."
)
RELATION_CURRENT = "the head of"
RELATION_AHEAD = "ahead of"
COMMENT_HUMAN_PUSH = (
    "Someone other than the bot pushed to `{branch}` (head `{head7}`), so the bot will no "
    "longer force-push this branch. The PR is yours now; close it to let the bot start "
    "a fresh bump when upstream moves."
)
MARKER_HUMAN_PUSH = "<!-- followup-bot:human-push pin={pin} head={head} -->"
MARKER_ALREADY_CURRENT = "<!-- followup-bot:already-current pin={pin} -->"
COMMENT_REWRITTEN = (
    "Upstream history was rewritten: `{old7}`, the commit this PR pins, is no longer on "
    "`{upstream}@{branch}` (now at `{head7}`). The bot leaves this PR to you: close it, and "
    "the bot opens a fresh bump from the new history when upstream moves again."
)
MARKER_REWRITTEN = "<!-- followup-bot:upstream-rewritten pin={pin} target={target} -->"


@dataclass(frozen=True)
class UpstreamCommit:
    sha: str
    date: str  # YYYY-MM-DD
    author: str
    subject: str
    html_url: str


@dataclass(frozen=True)
class BumpText:
    title: str
    body: str
    commit_message: str
    trailers: str  # the commit message's last paragraph, for commits on top of it


def bump_branch(pin: str) -> str:
    return f"{BRANCH_PREFIX}{pin}"


def short(value: str) -> str:
    """A commit sha abbreviated as git does; any other pin value (a tag) whole."""
    return value[:7] if _FULL_SHA.fullmatch(value) else value


_FULL_SHA = re.compile(r"[0-9a-f]{40}")


def followed(pin: PinConfig) -> str:
    """What the pin follows, as the PR and its comments name it."""
    if pin.track == "tags":
        return FOLLOWED_TAGS.format(tags=pin.tags, upstream=pin.upstream)
    return FOLLOWED_BRANCH.format(upstream=pin.upstream, branch=pin.branch)


def current_where(pin: PinConfig, *, current: bool) -> str:
    """How a pin that needs no bump stands to what it follows ("the head of `a/b@main`")."""
    if pin.track == "tags":
        return followed(pin)  # a tag pin is never ahead: that is a refused downgrade
    return f"{RELATION_CURRENT if current else RELATION_AHEAD} {followed(pin)}"


def title_target(title: str) -> str | None:
    """The target a bump title names, abbreviated if a sha (to tell a skipped target)."""
    match = TITLE_TARGET.search(title)
    if match:
        return match.group("new7")
    tagged = TITLE_TAG_TARGET.search(title)
    return tagged.group("tag") if tagged else None


def parse_compare_commits(commits: Sequence[Mapping[str, Any]]) -> list[UpstreamCommit]:
    """Turn the ``commits`` of a compare response into what the body lists."""
    parsed = []
    for item in commits:
        commit = item["commit"]
        author_login = (item.get("author") or {}).get("login")
        git_author = commit.get("author") or {}
        parsed.append(
            UpstreamCommit(
                sha=item["sha"],
                date=str(git_author.get("date") or "")[:10],
                author=author_login or git_author.get("name") or "unknown",
                subject=str(commit.get("message") or "").splitlines()[0]
                if commit.get("message")
                else "",
                html_url=item["html_url"],
            )
        )
    return parsed


def repo_web_url(commit_html_url: str) -> str:
    """``https://host/owner/repo`` from a commit's ``html_url``."""
    return commit_html_url.split("/commit/", 1)[0]


_PR_SUFFIX = re.compile(r"\s*\(#(?P<number>\d+)\)\s*$")
# An unqualified "#N" as ``neutralise`` leaves it (inert, with a word joiner): not
# part of an "owner/repo#N" or a word.
_BARE_REFERENCE = re.compile(rf"(?<![\w/.-])#{neutralise.WORD_JOINER}(?P<number>\d+)")


def _subject_line(commit: UpstreamCommit) -> str:
    # Squash merges are titled "Title (#N)"; link N to the *upstream* PR, since a
    # bare "#N" in our body would link to the downstream repo's issue N.
    subject = commit.subject
    link = f"[`{short(commit.sha)}`]({commit.html_url})"
    match = _PR_SUFFIX.search(subject)
    if match:
        number = match.group("number")
        subject = subject[: match.start()]
        link = f"[#{number}]({repo_web_url(commit.html_url)}/pull/{number})"
    # Upstream text must not ping, reference, close or inject anything downstream.
    author, subject = neutralise.inline(commit.author), neutralise.inline(subject)
    return f"- {commit.date} · {author} · {_upstream_references(subject, commit)} ({link})"


def _upstream_references(subject: str, commit: UpstreamCommit) -> str:
    """Every bare "#N" of an upstream subject ("Merge pull request #130 from …") is the
    upstream's issue or PR N: link it there, by its qualified name, never downstream."""
    web = repo_web_url(commit.html_url)
    name = "/".join(web.rstrip("/").split("/")[-2:])

    def link(match: re.Match[str]) -> str:
        number = match.group("number")
        return f"[{name}#{neutralise.WORD_JOINER}{number}]({web}/issues/{number})"

    return _BARE_REFERENCE.sub(link, subject)


def render(
    *,
    pin: PinConfig,
    old: str,
    new: str,
    total_commits: int,
    commits: Sequence[UpstreamCommit],
    compare_url: str,
    release_url: str | None = None,
    also: Sequence[str] = (),
) -> BumpText:
    """A bump's title, body and commit message; ``also`` lists the companion files."""
    count = max(total_commits, len(commits))
    if pin.track == "tags":
        title = TITLE_TAG.format(pin=pin.name, old=old, new=new)
    else:
        plural = "" if count == 1 else "s"
        title = TITLE.format(
            pin=pin.name, old7=short(old), new7=short(new), count=count, plural=plural
        )
    listed = list(commits)[-MAX_LISTED_COMMITS:][::-1]  # newest first, like a log
    lines = [_subject_line(c) for c in listed]
    if count > len(listed):
        lines.append(f"- … and {count - len(listed)} more: [full comparison]({compare_url})")
    relation = RELATION_TAG if pin.track == "tags" else RELATION_HEAD
    links = [f"[compare]({compare_url})"]
    if release_url is not None:
        links.insert(0, RELEASE_NOTES.format(url=release_url))
    intro = INTRO.format(
        dependency=pin.dependency,
        file=pin.file,
        old=short(old),
        new=short(new),
        relation=relation,
        followed=followed(pin),
    )
    intro += f" ({', '.join(links)})."
    if also:
        intro += "\n\n" + ALSO_CHANGED.format(files=", ".join(f"`{file}`" for file in also))
    controls = BODY_CONTROLS.format(new7=short(new), followed=followed(pin), pin=pin.name)
    body = "\n\n".join(
        [
            intro,
            f"### Upstream commits ({count})\n" + "\n".join(lines),
            controls,
            MARKER.format(pin=pin.name, target=new),
        ]
    )
    plain = [f"- {c.date} {neutralise.commit_line(c.subject)} ({short(c.sha)})" for c in listed]
    if count > len(listed):
        plain.append(f"- ... and {count - len(listed)} more")
    trailers = trailer_block(pin.name, old, new)
    message = "\n\n".join([title, "\n".join(plain), trailers])
    return BumpText(title=title, body=body, commit_message=message + "\n", trailers=trailers)


def with_release_notes(body: str, url: str) -> str | None:
    """``body`` with the link to release notes published after it was written, put where
    ``render`` puts it; None when there is nothing to add (a release notes link is there
    already, or the body has no compare link to put it beside: a human rewrote it)."""
    # Only the intro, the body's first paragraph: upstream's commit subjects follow it.
    intro, gap, rest = body.partition("\n\n")
    if RELEASE_NOTES_LINK in intro or COMPARE_LINK not in intro:
        return None
    linked = intro.replace(COMPARE_LINK, f"({RELEASE_NOTES.format(url=url)}, [compare](", 1)
    return linked + gap + rest


def trailer_block(pin: str, old: str, new: str) -> str:
    """The trailers that mark a commit as the bot's bump of ``pin`` from ``old`` to ``new``
    (the bump commit and any commit the bot puts on top of it carry them)."""
    return f"{TRAILER_PIN}: {pin}\n{TRAILER_FROM}: {old}\n{TRAILER_TARGET}: {new}"
