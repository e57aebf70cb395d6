"""Which tag a tag pin moves to, and the cases it refuses, without any I/O."""

from __future__ import annotations

import pytest

from bot.config.models import PinConfig
from bot.pins import text as bump_text
from bot.pins.state import PinState
from bot.pins.tags import (
    NO_PRERELEASES,
    REASON_DOWNGRADE,
    REASON_NO_TAGS,
    REASON_NOT_A_VERSION,
    REASON_PINNED_TAG_GONE,
    REASON_TAG_MOVED,
    TagChoice,
    choose_tag,
    downgrade,
    moved_tag,
    remember_tags,
)
from bot.pins.versions import why_not_a_version

UPSTREAM = "NVIDIA/cutlass"
PIN = PinConfig(
    name="cutlass", upstream=UPSTREAM, track="tags", file="CMakeLists.txt", dependency="cutlass"
)
TAGS = {"v4.4.2": "a" * 40, "v4.5.0": "b" * 40, "v4.6.0-rc1": "c" * 40, "v4.10.0": "d" * 40}


def test_the_newest_release_wins_in_version_order() -> None:
    assert choose_tag(PIN, "v4.4.2", TAGS) == TagChoice("v4.10.0", TAGS)


def test_pre_releases_only_when_asked() -> None:
    tags = {"v4.4.2": "a" * 40, "v4.5.0-rc1": "c" * 40}
    assert choose_tag(PIN, "v4.4.2", tags) == TagChoice("v4.4.2", tags)
    eager = PIN.model_copy(update={"prereleases": True})
    assert choose_tag(eager, "v4.4.2", tags) == TagChoice("v4.5.0-rc1", tags)


def test_the_glob_narrows_the_tags() -> None:
    narrow = PIN.model_copy(update={"tags": "v4.5.*"})
    assert choose_tag(narrow, "v4.4.2", TAGS) == TagChoice("v4.5.0", TAGS)


@pytest.mark.parametrize("pinned", ["0123456789abcdef0123456789abcdef01234567", "v1.2", "main"])
def test_a_pinned_value_that_is_no_version_is_refused(pinned: str) -> None:
    tags = {**TAGS, pinned: "e" * 40}
    assert choose_tag(PIN, pinned, tags) == REASON_NOT_A_VERSION.format(
        value=pinned, why=why_not_a_version(pinned)
    )


def test_a_pinned_tag_gone_upstream_is_refused() -> None:
    gone = {tag: sha for tag, sha in TAGS.items() if tag != "v4.4.2"}
    assert choose_tag(PIN, "v4.4.2", gone) == REASON_PINNED_TAG_GONE.format(
        value="v4.4.2", upstream=UPSTREAM
    )


def test_no_matching_tag_says_so_and_how_to_take_pre_releases() -> None:
    only = PIN.model_copy(update={"tags": "release-*"})
    assert choose_tag(only, "v4.4.2", TAGS) == REASON_NO_TAGS.format(
        upstream=UPSTREAM, pattern="release-*", prereleases=NO_PRERELEASES
    )


def test_a_newest_tag_older_than_the_pin_is_a_refused_downgrade() -> None:
    tags = {"v4.4.2": "a" * 40, "v4.3.0": "b" * 40}
    narrow = PIN.model_copy(update={"tags": "v4.3.*"})
    assert choose_tag(narrow, "v4.4.2", tags) == REASON_DOWNGRADE.format(
        newest="v4.3.0", pattern="v4.3.*", upstream=UPSTREAM, value="v4.4.2"
    )
    assert downgrade(PIN, "v4.4.2", "v4.5.0") is None
    assert downgrade(PIN, "v4.4.2", "not-a-version") is None


def test_a_tag_that_moved_since_the_bot_saw_it_is_named() -> None:
    state = PinState()
    assert moved_tag(PIN, state, TagChoice("v4.5.0", TAGS), "v4.4.2", "v4.5.0") is None
    remember_tags(state, TagChoice("v4.5.0", TAGS), "v4.4.2", "v4.5.0", "v9")  # v9: unknown
    assert state.extra["tag_commits"] == {"v4.4.2": "a" * 40, "v4.5.0": "b" * 40}
    assert moved_tag(PIN, state, TagChoice("v4.5.0", TAGS), "v4.4.2", "v4.5.0") is None
    moved = {**TAGS, "v4.5.0": "f" * 40}
    assert moved_tag(PIN, state, TagChoice("v4.5.0", moved), "v4.4.2", "v4.5.0") == (
        REASON_TAG_MOVED.format(tag="v4.5.0", upstream=UPSTREAM, old7="b" * 7, new7="f" * 7)
    )


def test_a_tag_bump_is_titled_by_its_tags_and_links_the_release_notes() -> None:
    text = bump_text.render(
        pin=PIN,
        old="v4.4.2",
        new="v4.10.12",
        total_commits=3,
        commits=[],
        compare_url="https://github.com/NVIDIA/cutlass/compare/v4.4.2...v4.10.12",
        release_url="https://github.com/NVIDIA/cutlass/releases/tag/v4.10.12",
        also=["tools/cutlass.sh"],
    )
    assert text.title == "Bump cutlass from v4.4.2 to v4.10.12"  # tags whole, never cut to 7
    assert bump_text.title_target(text.title) == "v4.10.12"
    assert text.body.startswith(
        "Bumps `cutlass` in `CMakeLists.txt` from `v4.4.2` to `v4.10.12`, now the newest "
        "`v*` tag of `NVIDIA/cutlass` ([release notes]"
        "(https://github.com/NVIDIA/cutlass/releases/tag/v4.10.12), [compare]("
    )
    assert bump_text.ALSO_CHANGED.format(files="`tools/cutlass.sh`") in text.body
    assert "Followup-Bot-Target: v4.10.12" in text.commit_message
