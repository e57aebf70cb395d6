"""Small trees for the routing tests: a ci_config and job files from step snippets."""

from __future__ import annotations

from collections.abc import Mapping

from bot.routing.model import RoutedStep, Routes, route
from bot.routing.tables import default_tables

CONFIG = """\
name: vllm_ci
job_dirs:
  - .buildkite/test_areas
registries: registry.example
repositories:
  main: main-repo
  premerge: premerge-repo
"""
JOB = ".buildkite/test_areas/area.yaml"
BUILDS = """\
steps:
  - label: ":docker: build image"
    key: image-build
  - label: ":docker: build CPU image"
    key: image-build-cpu
  - label: ":docker: build arm64 image"
    key: arm64-image-build
"""


def files(job: str, **more: str) -> dict[str, str]:
    return {
        ".buildkite/ci_config.yaml": CONFIG,
        ".buildkite/test_areas/builds.yaml": BUILDS,
        JOB: job,
        **{f".buildkite/test_areas/{name}.yaml": text for name, text in more.items()},
    }


def routes(job: str, env: Mapping[str, str] | None = None) -> Routes:
    return route(files(job), env=env or {}, tables=default_tables())


def one(step: str, env: Mapping[str, str] | None = None) -> RoutedStep:
    """The routed step of a job file with one step (and ``depends_on: image-build``)."""
    routed = routes("depends_on: [image-build]\nsteps:\n" + step, env)
    return next(s for s in routed.steps if s.file == JOB)


def messages(job: str, env: Mapping[str, str] | None = None) -> list[str]:
    return [problem.message for problem in routes(job, env).problems]
