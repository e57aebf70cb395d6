"""Main's lanes: its builds split by their environment, each lane judged on its own.

vLLM builds main twice over: the regular builds and the torch-nightly ones
(``TORCH_NIGHTLY=1``), which pull other images and break for other reasons. Mixed into
one timeline, a nightly build red after a regular green build of the same commit looks
like a breakage with no commit to blame. So a build belongs to the first lane whose
``env`` items its environment all has, and the regular lane (no items) takes the rest;
each lane has its own timelines, episodes, issues and routes. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config.main_red import DEFAULT_LANES, REGULAR_LANE, LaneConfig, MainRedConfig


@dataclass(frozen=True)
class Lane:
    name: str
    env: tuple[tuple[str, str], ...] = ()  # the items a build's environment must have

    @property
    def regular(self) -> bool:
        return not self.env

    @property
    def tag(self) -> str:
        """The lane in keys, markers and titles: empty for the regular lane, so what was
        stored and written before lanes existed reads as the regular lane's."""
        return "" if self.regular else self.name

    def takes(self, build: Mapping[str, Any]) -> bool:
        env = build.get("env")
        found = env if isinstance(env, Mapping) else {}
        return all(key in found and str(found[key]) == value for key, value in self.env)


REGULAR = Lane(REGULAR_LANE)


def _lane(config: LaneConfig) -> Lane:
    return Lane(config.name, tuple(sorted(config.env.items())))


def lanes_of(config: MainRedConfig | None) -> tuple[Lane, ...]:
    """Every lane in the order a build is matched; the regular lane last."""
    judged = config.judged_lanes() if config is not None else DEFAULT_LANES
    return (*(_lane(lane) for lane in judged), REGULAR)


def lane_of(build: Mapping[str, Any], lanes: Sequence[Lane]) -> Lane:
    return next((lane for lane in lanes if lane.takes(build)), REGULAR)


def by_lane(
    builds: Sequence[Mapping[str, Any]], lanes: Sequence[Lane]
) -> dict[Lane, list[Mapping[str, Any]]]:
    """The builds of each lane that has some, in their order, lanes in ``lanes``' order."""
    found: dict[Lane, list[Mapping[str, Any]]] = {}
    for build in builds:
        found.setdefault(lane_of(build, lanes), []).append(build)
    order = {lane: index for index, lane in enumerate(lanes)}
    return dict(sorted(found.items(), key=lambda item: order.get(item[0], len(order))))


def routing_env(lane: Lane, *, branch: str, commit: str) -> dict[str, str]:
    """The generator's inputs for a build of ``lane``: the lane's own environment, so a
    nightly step routes to the ``-torch-nightly-cpu`` image it really pulled."""
    return {"BUILDKITE_BRANCH": branch, "BUILDKITE_COMMIT": commit, **dict(lane.env)}


__all__ = ["REGULAR", "Lane", "by_lane", "lane_of", "lanes_of", "routing_env"]
