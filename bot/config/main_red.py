"""The `main_red` and `images` sections: watching main's builds, and the image registry.

``main_red`` turns on the follow-ups of a step that went red on the default branch: the
issue with the signal table and the culprit, one comment on the culprit's PR, and (when
the culprit re-routed the step) the partial revert PR. ``images`` says where the registry
named in ``ci_config.yaml`` answers (tests and mirrors use another endpoint than the
image names say) and when every image a build pulls is checked against it.

Main's builds come in *lanes* judged apart (``main_red.lanes``): a lane is the builds whose
environment has all its ``env`` items, the first matching lane taking a build; the regular
lane takes the rest. The torch-nightly lane (``TORCH_NIGHTLY=1``) is always there unless a
configured lane takes its name.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from bot.config.types import Endpoint, Glob, Label, Slug, SmallCount

DEFAULT_MAIN_HISTORY_BUILDS = 30
DEFAULT_WATCHED_STEPS = ("*",)
REGULAR_LANE = "regular"  # the lane of main's builds no other lane takes
TORCH_NIGHTLY_LANE = "torch-nightly"

MSG_BAD_ENV_NAME = "{value!r} is not an environment variable name (letters, digits and '_')"
MSG_LANE_NO_ENV = "a lane needs at least one env item: the regular lane takes the other builds"
MSG_LANE_RESERVED = f"{REGULAR_LANE!r} is the lane of the builds no other lane takes"
MSG_DUPLICATE_LANE = "lane {name!r} is named twice"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise PydanticCustomError("env_name", MSG_BAD_ENV_NAME.format(value=value))
    return value


EnvName = Annotated[str, AfterValidator(_check_env_name)]


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class LaneConfig(_Section):
    """Main's builds whose environment has every ``env`` item, judged on their own."""

    name: Slug  # in the title, its marker and the stored key
    env: dict[EnvName, str]

    @field_validator("name")
    @classmethod
    def _not_the_regular_lane(cls, name: str) -> str:
        if name == REGULAR_LANE:
            raise PydanticCustomError("lane", MSG_LANE_RESERVED)
        return name

    @field_validator("env")
    @classmethod
    def _some_env(cls, env: dict[str, str]) -> dict[str, str]:
        if not env:
            raise PydanticCustomError("lane", MSG_LANE_NO_ENV)
        return env

    def __hash__(self) -> int:
        # A config is hashable all the way down.
        return hash((self.name, tuple(sorted(self.env.items()))))


# Judged apart by default: vLLM's torch-nightly builds of main pull other images
# (``-torch-nightly-cpu``) and fail for other reasons than the regular builds of a commit.
DEFAULT_LANES = (LaneConfig(name=TORCH_NIGHTLY_LANE, env={"TORCH_NIGHTLY": "1"}),)


class MainRedConfig(_Section):
    # Pipelines watched on the default branch; empty: every pipeline of `buildkite`.
    pipelines: tuple[Slug, ...] = ()
    steps: tuple[Glob, ...] = DEFAULT_WATCHED_STEPS  # step keys watched (fnmatch globs)
    history_builds: SmallCount = DEFAULT_MAIN_HISTORY_BUILDS  # finished main builds read
    revert: bool = True  # propose the partial revert when the culprit re-routed the step
    # Retry the first red job once before calling the step broken (never more than once):
    # a failure that passes on retry was flaky after all.
    confirm: bool = False
    labels: tuple[Label, ...] = ()  # put on the red-on-main issue
    # Lanes judged apart, before the defaults (``DEFAULT_LANES``) they do not rename.
    lanes: tuple[LaneConfig, ...] = ()

    @field_validator("lanes")
    @classmethod
    def _unique_lanes(cls, lanes: tuple[LaneConfig, ...]) -> tuple[LaneConfig, ...]:
        names = [lane.name for lane in lanes]
        for name in names:
            if names.count(name) > 1:
                raise PydanticCustomError("lane", MSG_DUPLICATE_LANE.format(name=name))
        return lanes

    def judged_lanes(self) -> tuple[LaneConfig, ...]:
        """The lanes other than the regular one, in the order a build is matched: the
        configured ones, then the defaults whose name none of them took."""
        taken = {lane.name for lane in self.lanes}
        return self.lanes + tuple(lane for lane in DEFAULT_LANES if lane.name not in taken)


class ImagesConfig(_Section):
    # Where the registry of ``ci_config.yaml``'s ``registries`` answers; by default
    # ``https://<host>`` of the image names themselves.
    registry_url: Endpoint | None = None
    # Check every tag a torch-nightly build (build env TORCH_NIGHTLY=1) pulls when it
    # finishes, not only when a job's log says a manifest is unknown.
    nightly: bool = True
