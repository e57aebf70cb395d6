"""The full-CI and merge-race rules of landing: which builds count, when the wait is over,
which refused merges are tried again."""

from __future__ import annotations

from typing import Any

import pytest

from bot.landing.rules import (
    MERGE_RACE_RETRIES,
    counts_for_landing,
    full_build_overdue,
    labels_on_since,
    lost_a_race,
    may_merge_again,
    parse_time,
)

NOON = 1_786_017_600.0  # 2026-08-06T12:00:00Z


def labeled(name: str, at: str, event: str = "labeled") -> dict[str, Any]:
    return {"event": event, "created_at": at, "label": {"name": name, "color": "ededed"}}


# -- times -----------------------------------------------------------------------------------


def test_github_and_buildkite_times_are_read() -> None:
    assert parse_time("2026-08-06T12:00:00Z") == NOON
    assert parse_time("2026-08-06T12:00:00.250Z") == NOON + 0.25
    assert parse_time("2026-08-06T14:00:00+02:00") == NOON


def test_a_time_without_a_zone_is_utc() -> None:
    assert parse_time("2026-08-06T12:00:00") == NOON


@pytest.mark.parametrize("value", [None, 1786017600, "", "yesterday", "2026-13-01T00:00:00Z"])
def test_what_is_no_time(value: object) -> None:
    assert parse_time(value) is None


# -- when the labels went on -------------------------------------------------------------------


def test_the_last_label_to_go_on_sets_the_time() -> None:
    events = [
        labeled("ready", "2026-08-06T12:00:00Z"),
        {"event": "commented", "created_at": "2026-08-06T12:00:30Z"},
        labeled("ci-full", "2026-08-06T12:01:00Z"),
    ]
    assert labels_on_since(events, ["ready", "ci-full"]) == NOON + 60


def test_a_label_put_back_counts_from_its_newest_event() -> None:
    events = [
        labeled("ready", "2026-08-06T12:05:00Z"),
        labeled("ready", "2026-08-06T12:00:00Z", event="unlabeled"),
        labeled("ready", "2026-08-06T12:02:00Z"),
    ]
    assert labels_on_since(events, ["ready"]) == NOON + 300


def test_names_are_compared_without_case() -> None:
    assert labels_on_since([labeled("Ready", "2026-08-06T12:00:00Z")], ["ready"]) == NOON


def test_no_time_while_a_label_has_no_event_yet() -> None:
    events = [labeled("ready", "2026-08-06T12:00:00Z"), labeled("other", "2026-08-06T12:01:00Z")]
    assert labels_on_since(events, ["ready", "ci-full"]) is None
    assert labels_on_since(events, []) is None


def test_events_without_a_label_or_a_time_are_skipped() -> None:
    events = [
        {"event": "labeled", "created_at": "2026-08-06T12:09:00Z", "label": None},
        labeled("ready", "not a time"),
        labeled("ready", "2026-08-06T12:00:00Z"),
    ]
    assert labels_on_since(events, ["ready"]) == NOON


# -- which builds count ------------------------------------------------------------------------


def test_every_build_counts_without_labels_on_approval() -> None:
    assert counts_for_landing({}, None) is True


def test_only_a_build_created_once_the_labels_were_on_counts() -> None:
    assert counts_for_landing({"created_at": "2026-08-06T12:00:01.000Z"}, NOON) is True
    assert counts_for_landing({"created_at": "2026-08-06T11:59:59.999Z"}, NOON) is False


def test_a_build_within_the_labels_second_counts() -> None:
    # GitHub writes whole seconds: 12:00:00 is any moment of that second.
    assert counts_for_landing({"created_at": "2026-08-06T12:00:00.000Z"}, NOON) is True


def test_a_build_without_a_creation_time_does_not_count() -> None:
    assert counts_for_landing({"created_at": None}, NOON) is False


def test_the_wait_for_a_full_build_is_over_after_the_minutes() -> None:
    assert full_build_overdue(NOON, NOON + 30 * 60 - 1, 30) is False
    assert full_build_overdue(NOON, NOON + 30 * 60, 30) is True
    assert full_build_overdue(NOON, NOON, 0) is True


# -- merge races -------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["clean", "behind", "blocked", None])
def test_a_409_at_an_unchanged_head_is_a_race(state: str | None) -> None:
    assert lost_a_race(409, state) is True


@pytest.mark.parametrize(("state", "race"), [("behind", True), ("unknown", True)])
def test_a_405_while_the_base_moves_is_a_race(state: str, race: bool) -> None:
    assert lost_a_race(405, state) is race


@pytest.mark.parametrize("state", ["blocked", "unstable", "clean", "dirty", None])
def test_a_405_for_missing_reviews_or_checks_is_not(state: str | None) -> None:
    assert lost_a_race(405, state) is False


def test_other_refusals_are_not_races() -> None:
    assert lost_a_race(422, "unknown") is False


def test_a_lost_race_is_tried_again_a_few_times() -> None:
    assert [may_merge_again(n) for n in range(1, MERGE_RACE_RETRIES + 2)] == [
        *[True] * MERGE_RACE_RETRIES,
        False,
    ]
