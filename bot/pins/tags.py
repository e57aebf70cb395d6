"""Pins that follow release tags (``track: tags``): the newest version upstream, and
the cases the bot refuses rather than guess.

A tag pin's value is the tag itself (``v4.4.2``), which a shallow fetch can get; its
"head" is the newest tag matching ``tags`` in semantic-version order, pre-releases
left out unless ``prereleases``. A tag is a promise that a name means one commit: when
upstream moves a tag the bot has seen, deletes the pinned one, or the newest tag is
older than the pin, the bot says why and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.config.models import PinConfig
from bot.github.changes import Repo
from bot.pins.state import PinState
from bot.pins.versions import newest, parse_version, why_not_a_version

# GitHub lists 100 tags a page; ten pages is far more history than a pin needs to see
# (cutlass has ~100 tags) and bounds what one sync reads from a repository with many.
MAX_TAG_PAGES = 10
TAGS_PER_PAGE = 100

REASON_NOT_A_VERSION = (
    "pinned {value!r} is not a release tag the bot can order ({why}); "
    "pin a tag such as v1.2.3, or follow a branch (track: branch)"
)
REASON_PINNED_TAG_GONE = (
    "pinned tag {value} no longer exists in {upstream}; the bot will not guess a bump"
)
REASON_NO_TAGS = "{upstream} has no release tag matching {pattern!r}{prereleases}"
NO_PRERELEASES = " (pre-releases are skipped: prereleases: true takes them)"
REASON_DOWNGRADE = (
    "{newest} ({pattern!r} tags of {upstream}) is older than the pinned {value}; "
    "the bot does not downgrade"
)
REASON_TAG_MOVED = (
    "tag {tag} of {upstream} now points at {new7}, not {old7} as when the bot saw it; "
    "a moved tag is not a release the bot will follow (ask upstream, or pin by hand)"
)


@dataclass(frozen=True)
class TagChoice:
    """The tag to bump to and the commit every tag upstream names."""

    tag: str
    commits: Mapping[str, str]  # tag name -> the commit it points at (peeled)


async def list_tags(gh: GitHubAPI, upstream: Repo) -> dict[str, str]:
    """Upstream's tags and their commits (annotated tags peeled, as GitHub lists them)."""
    tags: dict[str, str] = {}
    url = "/repos/{owner}/{repo}/tags{?per_page,page}"
    for page in range(1, MAX_TAG_PAGES + 1):
        vars_ = upstream.vars(per_page=str(TAGS_PER_PAGE), page=str(page))
        items: list[dict[str, Any]] = await gh.getitem(url, url_vars=vars_)
        tags.update((str(item["name"]), str(item["commit"]["sha"])) for item in items)
        if len(items) < TAGS_PER_PAGE:
            break
    return tags


def choose_tag(pin: PinConfig, pinned: str, commits: Mapping[str, str]) -> TagChoice | str:
    """The newest tag to follow, or the reason there is none to follow."""
    why = why_not_a_version(pinned)
    if why is not None:
        return REASON_NOT_A_VERSION.format(value=pinned, why=why)
    if pinned not in commits:
        return REASON_PINNED_TAG_GONE.format(value=pinned, upstream=pin.upstream)
    found = newest(commits, pin.tags, prereleases=pin.prereleases)
    if found is None:
        prereleases = "" if pin.prereleases else NO_PRERELEASES
        return REASON_NO_TAGS.format(
            upstream=pin.upstream, pattern=pin.tags, prereleases=prereleases
        )
    return downgrade(pin, pinned, found.tag) or TagChoice(found.tag, commits)


def downgrade(pin: PinConfig, pinned: str, target: str) -> str | None:
    """The reason to refuse going from ``pinned`` to an older ``target``."""
    old, new = parse_version(pinned), parse_version(target)
    if old is None or new is None or not new < old:
        return None
    return REASON_DOWNGRADE.format(
        pattern=pin.tags, upstream=pin.upstream, newest=target, value=pinned
    )


def moved_tag(pin: PinConfig, state: PinState, choice: TagChoice, *tags: str) -> str | None:
    """The reason to stop if one of ``tags`` now names another commit than the bot saw."""
    seen = state.extra.get("tag_commits")
    if not isinstance(seen, dict):
        return None
    for tag in tags:
        old, new = seen.get(tag), choice.commits.get(tag)
        if isinstance(old, str) and new is not None and old != new:
            return REASON_TAG_MOVED.format(
                tag=tag, upstream=pin.upstream, old7=old[:7], new7=new[:7]
            )
    return None


def remember_tags(state: PinState, choice: TagChoice, *tags: str) -> None:
    """Record the commits ``tags`` name now, to notice a tag that moves later."""
    seen = dict(state.extra.get("tag_commits") or {})
    seen.update({tag: choice.commits[tag] for tag in tags if tag in choice.commits})
    state.extra["tag_commits"] = seen


async def release_url(gh: GitHubAPI, upstream: Repo, tag: str) -> str | None:
    """The release notes' page of ``tag`` (None: upstream made no release of it)."""
    try:
        release = await gh.getitem(
            "/repos/{owner}/{repo}/releases/tags/{tag}", url_vars=upstream.vars(tag=tag)
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise
    url = release.get("html_url")
    return url if isinstance(url, str) else None
