"""``followup-bot check-config PATH --repo DIR``: the config, then its pins in a checkout."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TextIO

from bot.cli.discover import EXIT_USAGE, MSG_NOT_A_DIRECTORY
from bot.config.check import check_config
from bot.pins.checkout_check import checkout_problems


def check_config_command(path: Path, repo: Path | None, out: TextIO, err: TextIO) -> int:
    """0 valid (and, with ``repo``, every pin found as configured), 1 problems, 2 unusable
    input: an unreadable config or a ``repo`` that is not a directory."""
    if repo is None:
        return check_config(path, out, err)
    if not repo.is_dir():
        print(MSG_NOT_A_DIRECTORY.format(repo=repo), file=err)
        return EXIT_USAGE
    return check_config(path, out, err, checkout=partial(checkout_problems, repo))
