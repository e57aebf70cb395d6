"""The `main_red` and `images` sections: watching main's builds, and the image registry.

``main_red`` turns on the follow-ups of a step that went red on the default branch: the
issue with the signal table and the culprit, one comment on the culprit's PR, and (when
the culprit re-routed the step) the partial revert PR. ``images`` says where the registry
named in ``ci_config.yaml`` answers (tests and mirrors use another endpoint than the
image names say) and when every image a build pulls is checked against it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.config.types import Endpoint, Glob, Label, Slug, SmallCount

DEFAULT_MAIN_HISTORY_BUILDS = 30
DEFAULT_WATCHED_STEPS = ("*",)


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


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


class ImagesConfig(_Section):
    # Where the registry of ``ci_config.yaml``'s ``registries`` answers; by default
    # ``https://<host>`` of the image names themselves.
    registry_url: Endpoint | None = None
    # Check every tag a torch-nightly build (build env TORCH_NIGHTLY=1) pulls when it
    # finishes, not only when a job's log says a manifest is unknown.
    nightly: bool = True
