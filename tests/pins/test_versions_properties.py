"""Laws of release-tag versions, on generated tags of every accepted spelling."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version as Pep440

from bot.pins.versions import Version, newest, parse_version, why_not_a_version

# How the generated tags spell each part, with the rank a part gives within its release.
LABELS = {
    "dev": 0,
    "a": 1,
    "alpha": 1,
    "b": 2,
    "beta": 2,
    "rc": 3,
    "RC": 3,
    "post": 5,
}
RELEASE_RANK = 4


@dataclass(frozen=True)
class Spelled:
    tag: str
    release: tuple[int, int, int]
    rank: int  # LABELS' rank, or RELEASE_RANK
    number: int
    build: str

    @property
    def expected(self) -> tuple[int, int, int, int, int]:
        return (*self.release, self.rank, self.number)


def version(tag: str) -> Version:
    parsed = parse_version(tag)
    assert parsed is not None, tag
    return parsed


numbers = st.integers(0, 30) | st.integers(0, 10**12)


@st.composite
def spelled(draw: st.DrawFn) -> Spelled:
    release = (draw(numbers), draw(numbers), draw(numbers))
    prefix = draw(st.sampled_from(["", "v"]))
    tag = prefix + ".".join(map(str, release))
    rank, number = RELEASE_RANK, 0
    if draw(st.booleans()):
        label = draw(st.sampled_from(sorted(LABELS)))
        rank = LABELS[label]
        tag += draw(st.sampled_from(["", "-", ".", "_"])) + label
        if draw(st.booleans()):
            number = draw(numbers)
            tag += draw(st.sampled_from(["", ".", "-", "_"])) + str(number)
    build = draw(st.sampled_from(["", "+build.5", "+exp-sha.5114f85", "+0"]))
    return Spelled(tag + build, release, rank, number, build)


@given(spelled())
def test_parse_reads_every_part_and_keeps_the_tag(example: Spelled) -> None:
    parsed = parse_version(example.tag)

    assert parsed is not None
    assert parsed.tag == example.tag
    assert parsed.precedence == example.expected
    assert parsed.is_prerelease is (example.rank < RELEASE_RANK)
    assert why_not_a_version(example.tag) is None


@given(st.lists(spelled(), min_size=1, max_size=12))
def test_order_is_the_order_of_the_parts(examples: list[Spelled]) -> None:
    parsed = [version(example.tag) for example in examples]

    by_version = sorted(zip(parsed, examples, strict=True), key=lambda pair: pair[0])
    expected = [example.expected for _, example in by_version]

    assert expected == sorted(expected)


@given(spelled(), spelled())
def test_order_is_total_and_agrees_with_equality_and_hash(a: Spelled, b: Spelled) -> None:
    one, other = version(a.tag), version(b.tag)

    assert [one < other, one == other, one > other].count(True) == 1
    assert (one == other) is (a.expected == b.expected)
    assert (one <= other) is (a.expected <= b.expected)
    if one == other:
        assert hash(one) == hash(other)


@given(spelled(), spelled())
def test_order_agrees_with_pep_440(a: Spelled, b: Spelled) -> None:
    # packaging orders these spellings too; build metadata is a local version there
    # (ordered, not ignored), so it is left out of the comparison.
    one, other = version(a.tag), version(b.tag)
    pep_one = Pep440(a.tag.removesuffix(a.build))
    pep_other = Pep440(b.tag.removesuffix(b.build))

    assert (one < other) is (pep_one < pep_other)
    assert (one == other) is (pep_one == pep_other)
    assert one.is_prerelease is pep_one.is_prerelease


# Near misses too: versions with a few characters added, and shapes of numbers and dots.
tags_at_large = st.one_of(
    st.text(max_size=20),
    st.builds(lambda example, extra: example.tag + extra, spelled(), st.text(max_size=4)),
    st.from_regex(r"v?[0-9]{1,3}(\.[0-9]{1,3}){0,4}[-.+a-z0-9]{0,6}", fullmatch=True),
)


@given(tags_at_large)
def test_a_tag_is_refused_exactly_when_it_has_a_reason(tag: str) -> None:
    why = why_not_a_version(tag)

    assert (parse_version(tag) is None) is (why is not None)


@given(
    st.lists(spelled().map(lambda example: example.tag) | st.text(max_size=8), max_size=15),
    st.sampled_from(["*", "v*", "1.*", "v1.*", "*-rc*", "[0-9]*"]),
    st.booleans(),
)
def test_newest_is_the_greatest_of_the_filtered_tags(
    tags: list[str], pattern: str, prereleases: bool
) -> None:
    candidates = [
        version
        for tag in tags
        if fnmatchcase(tag, pattern)
        and (version := parse_version(tag)) is not None
        and (prereleases or not version.is_prerelease)
    ]

    found = newest(tags, pattern, prereleases=prereleases)

    if not candidates:
        assert found is None
        return
    assert found is not None
    assert found == max(candidates)
    assert all(version <= found for version in candidates)
    ties = [version.tag for version in candidates if version == found]
    assert found.tag == max(ties)
    again = newest(reversed(tags), pattern, prereleases=prereleases)
    assert again is not None
    assert again.tag == found.tag
