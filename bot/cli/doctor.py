"""``followup-bot doctor``: the service's environment, checked against GitHub and Buildkite."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TextIO

from bot.core.settings import Settings, SettingsError
from bot.doctor.fixes import FIX_SETTINGS
from bot.doctor.result import CheckResult, failed, render
from bot.doctor.run import exit_code, run_checks

CHECK_SETTINGS = "settings"


def doctor_command(env: Mapping[str, str], out: TextIO) -> int:
    """Print the table; 0 when every check passed (or was skipped), 1 otherwise."""
    try:
        # Read once, as ``serve`` reads it: a key file is opened here and nowhere after.
        settings = Settings.from_env(env)
    except SettingsError as exc:
        results: list[CheckResult] = [
            failed(CHECK_SETTINGS, problem, FIX_SETTINGS) for problem in exc.problems
        ]
    else:
        results = asyncio.run(run_checks(settings))
    out.write(render(results))
    return exit_code(results)
