"""Release tags as versions: what parses, what is refused and why, and which tag is newest."""

from __future__ import annotations

import pytest

from bot.pins import versions
from bot.pins.versions import Version, newest, parse_version, why_not_a_version


def version(tag: str) -> Version:
    parsed = parse_version(tag)
    assert parsed is not None, tag
    return parsed


@pytest.mark.parametrize(
    ("tag", "release", "prerelease"),
    [
        ("v4.4.2", (4, 4, 2), False),
        ("3.6.0", (3, 6, 0), False),
        ("v0.0.0", (0, 0, 0), False),
        ("v10.20.30", (10, 20, 30), False),
        ("v1.2.3-rc1", (1, 2, 3), True),
        ("v1.2.3-rc.1", (1, 2, 3), True),
        ("v1.2.3-alpha", (1, 2, 3), True),
        ("v1.2.3-beta.2", (1, 2, 3), True),
        ("1.2.3rc1", (1, 2, 3), True),
        ("1.2.3a1", (1, 2, 3), True),
        ("1.2.3b2", (1, 2, 3), True),
        ("1.2.3.dev0", (1, 2, 3), True),
        ("1.2.3-RC2", (1, 2, 3), True),
        ("1.2.3_rc_2", (1, 2, 3), True),
        ("v2.1.1.post3", (2, 1, 1), False),
        ("v2.1.1-post.3", (2, 1, 1), False),
        ("v1.2.3+build.5", (1, 2, 3), False),
        ("v1.2.3-rc.1+exp-sha.5114f85", (1, 2, 3), True),
    ],
)
def test_version_tags_parse(tag: str, release: tuple[int, int, int], prerelease: bool) -> None:
    parsed = version(tag)

    assert (parsed.major, parsed.minor, parsed.patch) == release
    assert parsed.is_prerelease is prerelease
    assert parsed.tag == tag
    assert str(parsed) == tag
    assert why_not_a_version(tag) is None


@pytest.mark.parametrize(
    ("tag", "why"),
    [
        ("", versions.MSG_EMPTY),
        ("v1.2", versions.MSG_NOT_THREE_NUMBERS.format(count=2)),
        ("v1.2.3.4", versions.MSG_NOT_THREE_NUMBERS.format(count=4)),
        ("1", versions.MSG_NOT_THREE_NUMBERS.format(count=1)),
        ("v1.2rc1", versions.MSG_NOT_THREE_NUMBERS.format(count=2)),
        ("release-2026-01", versions.MSG_NO_NUMBERS),
        ("cutlass-3.5.0", versions.MSG_NO_NUMBERS),
        ("V1.2.3", versions.MSG_NO_NUMBERS),
        ("main", versions.MSG_NO_NUMBERS),
        ("v01.2.3", versions.MSG_LEADING_ZERO.format(number="01")),
        ("1.02.3", versions.MSG_LEADING_ZERO.format(number="02")),
        ("2024.01.01", versions.MSG_LEADING_ZERO.format(number="01")),
        ("v1.2.3-x.7", versions.MSG_BAD_SUFFIX.format(suffix="-x.7")),
        ("v1.2.3-rc.01", versions.MSG_BAD_SUFFIX.format(suffix="-rc.01")),
        ("v1.2.3-rc1.post1", versions.MSG_BAD_SUFFIX.format(suffix="-rc1.post1")),
        ("v1.2.3.", versions.MSG_BAD_SUFFIX.format(suffix=".")),
        ("v1.2.3+", versions.MSG_BAD_SUFFIX.format(suffix="+")),
        ("v1.2.3 ", versions.MSG_BAD_SUFFIX.format(suffix=" ")),
        ("v1.2.3-1", versions.MSG_BAD_SUFFIX.format(suffix="-1")),
        ("v1.2.\u0663", versions.MSG_NOT_THREE_NUMBERS.format(count=2)),  # an Arabic-Indic 3
    ],
)
def test_other_tags_are_refused_with_a_reason(tag: str, why: str) -> None:
    assert parse_version(tag) is None
    assert why_not_a_version(tag) == why


def test_the_reasons_read_as_sentences() -> None:
    assert why_not_a_version("v1.2") == "it has 2 numbers where MAJOR.MINOR.PATCH has 3"
    assert why_not_a_version("v01.2.3") == "'01' has a leading zero"


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("v4.9.9", "v4.10.0"),
        ("v1.9.0", "v1.10.0"),
        ("v1.2.3", "v2.0.0"),
        ("v1.2.3-rc1", "v1.2.3"),
        ("v1.2.3-rc2", "v1.2.3-rc10"),
        ("v1.2.3-rc.2", "v1.2.3rc10"),
        ("1.2.3.dev5", "1.2.3a0"),
        ("1.2.3-alpha", "1.2.3-alpha.1"),
        ("1.2.3-alpha.9", "1.2.3-beta"),
        ("1.2.3b9", "1.2.3rc0"),
        ("v1.2.3", "v1.2.3.post1"),
        ("v1.2.3.post9", "v1.2.4-dev0"),
        ("v1.2.2", "v1.2.3-rc1"),
    ],
)
def test_versions_order_by_precedence(older: str, newer: str) -> None:
    assert version(older) < version(newer)
    assert version(newer) > version(older)
    assert version(older) != version(newer)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("v1.2.3", "1.2.3"),
        ("1.2.3rc1", "v1.2.3-rc.1"),
        ("1.2.3-alpha", "1.2.3a0"),
        ("1.2.3+a", "1.2.3+b"),
        ("1.2.3.post", "1.2.3-post0"),
    ],
)
def test_spellings_of_one_version_are_equal(one: str, other: str) -> None:
    assert version(one) == version(other)
    assert hash(version(one)) == hash(version(other))
    assert not version(one) < version(other)
    assert {version(one), version(other)} == {version(one)}


def test_newest_takes_the_highest_matching_release() -> None:
    tags = ["v4.9.9", "v4.10.0", "v4.10.1-rc1", "v3.0.0", "cutlass-9.9.9", "nightly", "V9.0.0"]

    found = newest(tags, "v*", prereleases=False)

    assert found is not None
    assert found.tag == "v4.10.0"


def test_newest_takes_prereleases_when_asked() -> None:
    found = newest(["v4.10.0", "v4.10.1-rc1", "v4.10.1.dev3"], "v*", prereleases=True)

    assert found is not None
    assert found.tag == "v4.10.1-rc1"


def test_newest_takes_post_releases_without_prereleases() -> None:
    found = newest(["v2.1.1", "v2.1.1.post3"], "v*", prereleases=False)

    assert found is not None
    assert found.tag == "v2.1.1.post3"


def test_newest_matches_the_glob_case_sensitively() -> None:
    tags = ["v1.0.0", "V2.0.0", "release-v3.0.0", "v1.5.0"]

    assert newest(tags, "v1.*", prereleases=False) == version("v1.5.0")
    assert newest(tags, "V*", prereleases=False) is None  # V2.0.0 is not a version
    assert newest(tags, "*", prereleases=False) == version("v1.5.0")


def test_newest_is_none_without_candidates() -> None:
    assert newest([], "v*", prereleases=True) is None
    assert newest(["v1.0.0-rc1"], "v*", prereleases=False) is None
    assert newest(["release-1"], "*", prereleases=True) is None


@pytest.mark.parametrize(
    "tags",
    [
        ["1.2.3", "v1.2.3", "1.2.3+b"],
        ["1.2.3+b", "v1.2.3", "1.2.3"],
        ["v1.2.3", "1.2.3+b", "1.2.3"],
    ],
)
def test_newest_breaks_ties_by_tag_text_whatever_the_order(tags: list[str]) -> None:
    found = newest(tags, "*", prereleases=False)

    assert found is not None
    assert found.tag == "v1.2.3"  # 'v' sorts after the digits
