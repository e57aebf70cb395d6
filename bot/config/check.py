"""``followup-bot check-config PATH [--repo DIR]``: validate a config file before committing it.

The checkout check (``--repo``) is passed in as a function: the config package reads
nothing of the bot outside itself, and the CLI knows where the pin editor lives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from bot.config.errors import ConfigError
from bot.config.messages import (
    MSG_CANNOT_READ,
    MSG_CHECK_FAILED,
    MSG_CHECK_OK,
    MSG_CHECKOUT_FAILED,
    MSG_CHECKOUT_OK,
    plural,
)
from bot.config.models import RepoConfig
from bot.config.parse import MAX_CONFIG_BYTES, parse_repo_config_bytes

# Said where an operator reads it: the check run needs a permission the App may lack.
SUMMARY_ROUTING = "CI routing check (the App needs Checks: write)"
SUMMARY_MAIN_RED = "red-on-main follow-ups (the App needs Issues: write)"


def summarize(config: RepoConfig) -> str:
    """One line saying what the bot will do in this repository."""
    pins = plural(len(config.pins), "pin")
    if config.pins:
        pins += " (" + ", ".join(pin.name for pin in config.pins) + ")"
    allowlist, buildkite, landing = config.allowlist, config.buildkite, config.landing
    parts = [
        f"handle @{config.handle}",
        pins,
        "allowlist off" if allowlist is None else f"allowlist in {allowlist.file}",
        "buildkite off"
        if buildkite is None
        else f"buildkite {buildkite.organization}/{','.join(buildkite.pipelines)}",
        "landing off" if landing is None else f"landing by {landing.merge_method}",
    ]
    if config.routing is not None:
        parts.append(SUMMARY_ROUTING)
    if config.main_red is not None:
        parts.append(SUMMARY_MAIN_RED)
    if config.migrations:
        names = ", ".join(migration.name for migration in config.migrations)
        parts.append(f"{plural(len(config.migrations), 'migration')} ({names})")
    return "; ".join(parts)


def _load(path: Path) -> RepoConfig:
    with path.open("rb") as stream:
        # One byte past the limit is enough to know the file is too big.
        data = stream.read(MAX_CONFIG_BYTES + 1)
    return parse_repo_config_bytes(data, filename=str(path))


# The configured pins checked against a checkout: one problem line each.
CheckoutCheck = Callable[[RepoConfig], Sequence[str]]


def check_config(
    path: Path, out: TextIO, err: TextIO, *, checkout: CheckoutCheck | None = None
) -> int:
    """``followup-bot check-config PATH``: 0 valid, 1 invalid, 2 unreadable.

    With ``checkout``, a valid config's pins are checked too: 1 on any problem.
    """
    try:
        config = _load(path)
    except OSError as exc:
        print(MSG_CANNOT_READ.format(file=path, reason=exc.strerror or exc), file=err)
        return 2
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=err)
        print(
            MSG_CHECK_FAILED.format(problems=plural(len(exc.problems), "problem"), file=path),
            file=err,
        )
        return 1
    if checkout is None:
        print(MSG_CHECK_OK.format(summary=summarize(config)), file=out)
        return 0
    return _check_checkout(config, checkout, out, err)


def _check_checkout(config: RepoConfig, checkout: CheckoutCheck, out: TextIO, err: TextIO) -> int:
    # The checkout first: an "ok" above its problems would read as a pass.
    problems = checkout(config)
    for problem in problems:
        print(problem, file=err)
    if problems:
        print(MSG_CHECKOUT_FAILED.format(problems=plural(len(problems), "problem")), file=err)
        return 1
    print(MSG_CHECK_OK.format(summary=summarize(config)), file=out)
    print(MSG_CHECKOUT_OK.format(pins=plural(len(config.pins), "pin")), file=out)
    return 0
