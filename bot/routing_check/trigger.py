"""Which PRs get the "CI routing" check: those touching what vLLM's pipeline generator reads.

The generator reads ``ci_config.yaml`` and every job file under the ``job_dirs`` it names. A
fixed list of globs left out directories the config named (``.buildkite/hardware_tests/``,
``.buildkite/image_build/``), so the set comes from the config itself: the base's and the
head's, since a PR may add a job directory and main may have added one since the PR branched.
A job directory covers every file under it (the check is cheap to run; a missed file is not).
``routing.paths`` only adds globs: the generator's own files always count.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.config.path_globs import path_matches
from bot.config.routing import RoutingConfig


def fixed_trigger(touched: Iterable[str], routing: RoutingConfig) -> bool:
    """Whether ``touched`` holds the config itself or an extra glob's path: known without
    reading the config."""
    return any(
        path == routing.ci_config or any(path_matches(path, glob) for glob in routing.paths)
        for path in touched
    )


def under_job_dirs(touched: Iterable[str], job_dirs: Iterable[str]) -> bool:
    """Whether a path of ``touched`` is under one of ``job_dirs`` (as a config writes them)."""
    prefixes = tuple({_directory(job_dir) for job_dir in job_dirs})
    return any(path.startswith(prefixes) for path in touched)


def _directory(job_dir: str) -> str:
    # Written as the generator takes it: relative to the checkout, "./" and a trailing "/"
    # optional (the routing model reads job files the same way).
    return job_dir.removeprefix("./").rstrip("/") + "/"
