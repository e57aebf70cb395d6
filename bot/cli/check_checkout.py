"""``followup-bot check-config PATH --repo DIR``: the config, then its pins in a checkout.

The ``ok`` line comes last, once everything asked for passed: never above an error. It
names every section, the ones that are off too, so a section left out by a typo shows.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TextIO

from bot.cli.discover import EXIT_USAGE, MSG_NOT_A_DIRECTORY
from bot.config.check import check_config, summarize
from bot.config.messages import MSG_CHECK_OK, MSG_CHECKOUT_OK, plural
from bot.config.models import RepoConfig
from bot.pins.checkout_check import checkout_problems

SUMMARY_ROUTING_OFF = "CI routing check off"
SUMMARY_MAIN_RED_OFF = "red-on-main off"
SUMMARY_NO_MIGRATIONS = "no migrations"
SUMMARY_IMAGES = "images checked at {registry}{nightly}"
SUMMARY_IMAGES_REGISTRY = "the registry ci_config.yaml names"
SUMMARY_IMAGES_NIGHTLY = " (every torch-nightly tag too)"
SUMMARY_RETRY = "retry-flaky up to {jobs} failed jobs, {retries} per step"


def check_config_command(path: Path, repo: Path | None, out: TextIO, err: TextIO) -> int:
    """0 valid (and, with ``repo``, every pin found as configured), 1 problems, 2 unusable
    input: an unreadable config or a ``repo`` that is not a directory."""
    if repo is not None and not repo.is_dir():
        print(MSG_NOT_A_DIRECTORY.format(repo=repo), file=err)
        return EXIT_USAGE
    checked: list[RepoConfig] = []

    def checkout(config: RepoConfig) -> list[str]:
        checked.append(config)
        return [] if repo is None else list(checkout_problems(repo, config))

    # Problems go to ``err`` as they are found; the ``ok`` lines are written here, last.
    code = check_config(path, io.StringIO(), err, checkout=checkout)
    if code != 0 or not checked:
        return code
    config = checked[0]
    print(MSG_CHECK_OK.format(summary=summary(config)), file=out)
    if repo is not None:
        print(MSG_CHECKOUT_OK.format(pins=plural(len(config.pins), "pin")), file=out)
    return 0


def summary(config: RepoConfig) -> str:
    """``summarize``'s line, with the sections that are off and those always on."""
    parts = [summarize(config)]
    if config.routing is None:
        parts.append(SUMMARY_ROUTING_OFF)
    if config.main_red is None:
        parts.append(SUMMARY_MAIN_RED_OFF)
    if not config.migrations:
        parts.append(SUMMARY_NO_MIGRATIONS)
    images = config.images
    registry = SUMMARY_IMAGES_REGISTRY if images.registry_url is None else images.registry_url
    nightly = SUMMARY_IMAGES_NIGHTLY if images.nightly else ""
    parts.append(SUMMARY_IMAGES.format(registry=registry, nightly=nightly))
    retry = config.retry
    parts.append(
        SUMMARY_RETRY.format(jobs=retry.max_failed_jobs, retries=retry.max_retries_per_step)
    )
    return "; ".join(parts)
