"""Main's lanes: which lane a build belongs to, and the inputs each lane is routed with."""

from __future__ import annotations

from typing import Any

from bot.config.main_red import LaneConfig, MainRedConfig
from bot.main_red.lanes import REGULAR, Lane, by_lane, lane_of, lanes_of, routing_env
from bot.store.kinds import signal_key

NIGHTLY = Lane("torch-nightly", (("TORCH_NIGHTLY", "1"),))
CUDA13 = Lane("cuda13", (("CUDA", "13"),))
CUDA13_NIGHTLY = Lane("cuda13-nightly", (("CUDA", "13"), ("TORCH_NIGHTLY", "1")))


def build(number: int, env: object = None) -> dict[str, Any]:
    found: dict[str, Any] = {"number": number}
    if env is not None:
        found["env"] = env
    return found


def test_by_default_the_torch_nightly_lane_then_the_regular_one() -> None:
    assert lanes_of(None) == (NIGHTLY, REGULAR)
    assert lanes_of(MainRedConfig()) == (NIGHTLY, REGULAR)
    assert REGULAR.name == "regular"
    assert REGULAR.regular
    assert not NIGHTLY.regular


def test_configured_lanes_come_first_and_may_take_a_default_lanes_name() -> None:
    config = MainRedConfig(
        lanes=(
            LaneConfig(name="cuda13-nightly", env={"TORCH_NIGHTLY": "1", "CUDA": "13"}),
            LaneConfig(name="cuda13", env={"CUDA": "13"}),
        )
    )
    assert lanes_of(config) == (CUDA13_NIGHTLY, CUDA13, NIGHTLY, REGULAR)
    renamed = MainRedConfig(lanes=(LaneConfig(name="torch-nightly", env={"NIGHTLY_TORCH": "1"}),))
    assert lanes_of(renamed) == (Lane("torch-nightly", (("NIGHTLY_TORCH", "1"),)), REGULAR)


def test_a_build_belongs_to_the_first_lane_whose_env_items_it_all_has() -> None:
    lanes = (CUDA13_NIGHTLY, CUDA13, NIGHTLY, REGULAR)
    assert lane_of(build(1, {"TORCH_NIGHTLY": "1", "CUDA": "13", "X": "y"}), lanes) == (
        CUDA13_NIGHTLY
    )
    assert lane_of(build(2, {"TORCH_NIGHTLY": "1"}), lanes) == NIGHTLY
    assert lane_of(build(3, {"CUDA": "13"}), lanes) == CUDA13
    # The regular lane takes the builds no other lane takes.
    assert lane_of(build(4, {"TORCH_NIGHTLY": "0"}), lanes) == REGULAR
    assert lane_of(build(5, {}), lanes) == REGULAR
    assert lane_of(build(6), lanes) == REGULAR
    assert lane_of(build(7, ["TORCH_NIGHTLY=1"]), lanes) == REGULAR  # not a mapping
    assert lane_of(build(8, {"TORCH_NIGHTLY": 1}), lanes) == NIGHTLY  # a value read as text
    assert lane_of(build(9, {"TORCH_NIGHTLY": "1"}), (CUDA13,)) == REGULAR


def test_builds_split_by_lane_keep_their_order_and_lanes_theirs() -> None:
    builds = [
        build(5),
        build(4, {"TORCH_NIGHTLY": "1"}),
        build(3),
        build(2, {"TORCH_NIGHTLY": "1"}),
    ]
    split = by_lane(builds, (NIGHTLY, REGULAR))
    assert list(split) == [NIGHTLY, REGULAR]
    assert [b["number"] for b in split[NIGHTLY]] == [4, 2]
    assert [b["number"] for b in split[REGULAR]] == [5, 3]
    assert list(by_lane([build(1)], (NIGHTLY, REGULAR))) == [REGULAR]  # only lanes with builds
    assert by_lane([], (NIGHTLY, REGULAR)) == {}
    # Lanes not given (the regular one here) come after the given ones.
    assert list(by_lane([build(2), build(1, {"CUDA": "13"})], (CUDA13,))) == [CUDA13, REGULAR]


def test_each_lane_is_routed_with_its_own_environment() -> None:
    env = routing_env(NIGHTLY, branch="main", commit="abc")
    assert env == {"BUILDKITE_BRANCH": "main", "BUILDKITE_COMMIT": "abc", "TORCH_NIGHTLY": "1"}
    assert routing_env(REGULAR, branch="main", commit="abc") == {
        "BUILDKITE_BRANCH": "main",
        "BUILDKITE_COMMIT": "abc",
    }


def test_the_regular_lane_keeps_the_keys_of_before_lanes() -> None:
    # Documents stored before lanes existed are the regular lane's.
    assert REGULAR.tag == ""
    assert signal_key("o/r", "ci", "audit", REGULAR.tag) == signal_key("o/r", "ci", "audit")
    assert signal_key("o/r", "ci", "audit") == "o/r#red/ci/audit"
    assert NIGHTLY.tag == "torch-nightly"
    assert signal_key("o/r", "ci", "audit", NIGHTLY.tag) == "o/r#red/ci/audit@torch-nightly"
