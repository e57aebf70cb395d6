"""``followup-bot doctor`` against the GitHub and Buildkite stand-ins."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import sys
from dataclasses import replace
from pathlib import Path

from bot.cli.doctor import doctor_command
from bot.doctor import fixes
from bot.doctor.buildkite_check import CHECK_TOKEN
from bot.doctor.github_checks import (
    CHECK_CONFIG,
    CHECK_EVENTS,
    CHECK_INSTALLATION,
    CHECK_KEY,
    CHECK_PERMISSIONS,
    CHECK_PIN_FILE,
    CHECK_UPSTREAM,
)
from bot.doctor.result import FAIL, OK, SKIP, SUMMARY_OK, CheckResult
from bot.doctor.run import exit_code, run_checks
from sandbox.harness import BUILDKITE_TOKEN, Harness
from sandbox.keys import generate_app_key
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, UPSTREAM
from tests.e2e.conftest import seed

PIN = "flash-attention"
MAIN = Path(__file__).parents[2]


def by_check(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.check: result for result in results}


def failures(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.check: r for r in results if r.status == FAIL}


async def test_a_well_set_up_app_passes_every_check(ci_env: Harness) -> None:
    seed(ci_env)
    results = await run_checks(ci_env.settings)
    assert failures(results) == {}
    checks = by_check(results)
    for check in (
        CHECK_KEY,
        CHECK_PERMISSIONS,
        CHECK_EVENTS,
        CHECK_INSTALLATION.format(repo=DOWNSTREAM),
        CHECK_CONFIG.format(repo=DOWNSTREAM),
        CHECK_UPSTREAM.format(repo=DOWNSTREAM, pin=PIN),
        CHECK_PIN_FILE.format(repo=DOWNSTREAM, pin=PIN),
        CHECK_TOKEN,
    ):
        assert checks[check].status == OK, checks[check]
    assert exit_code(results) == 0


async def test_too_few_permissions_and_events_are_named_with_the_fix(ci_env: Harness) -> None:
    seed(ci_env)
    ci_env.sandbox.app_permissions = {"contents": "read", "issues": "write", "metadata": "read"}
    ci_env.sandbox.app_events = ["push", "issue_comment"]
    results = await run_checks(ci_env.settings)
    failed = failures(results)
    permissions = failed[CHECK_PERMISSIONS]
    assert "contents: read, needs write" in permissions.detail
    assert "checks: none, needs write" in permissions.detail
    assert permissions.fix == fixes.FIX_PERMISSIONS
    assert "pull_request_review" in failed[CHECK_EVENTS].detail
    assert failed[CHECK_EVENTS].fix == fixes.FIX_EVENTS
    assert exit_code(results) == 1


async def test_a_repository_without_the_installation(ci_env: Harness) -> None:
    seed(ci_env)
    ci_env.sandbox.create_repo("vllm-project/other", files={"README.md": "x\n"})
    settings = replace(ci_env.settings, repositories=(DOWNSTREAM, "vllm-project/other"))
    checks = by_check(await run_checks(settings))
    missing = checks[CHECK_INSTALLATION.format(repo="vllm-project/other")]
    assert missing.status == FAIL
    assert missing.fix == fixes.FIX_NOT_INSTALLED.format(repo="vllm-project/other")
    assert checks[CHECK_CONFIG.format(repo="vllm-project/other")].status == SKIP
    assert checks[CHECK_INSTALLATION.format(repo=DOWNSTREAM)].status == OK


async def test_an_invalid_config(ci_env: Harness) -> None:
    seed(ci_env, config=CONFIG + "bogus: 1\n")
    results = await run_checks(ci_env.settings)
    config = by_check(results)[CHECK_CONFIG.format(repo=DOWNSTREAM)]
    assert config.status == FAIL
    assert "bogus" in config.detail
    assert config.fix == fixes.FIX_CONFIG.format(repo=DOWNSTREAM)
    assert "\n" not in config.detail


async def test_an_unreachable_upstream(ci_env: Harness) -> None:
    seed(ci_env, config=CONFIG.replace(UPSTREAM, "vllm-project/gone"))
    checks = by_check(await run_checks(ci_env.settings))
    upstream = checks[CHECK_UPSTREAM.format(repo=DOWNSTREAM, pin=PIN)]
    assert upstream.status == FAIL
    assert upstream.fix == fixes.FIX_UPSTREAM.format(upstream="vllm-project/gone")
    # The pin file names flash-attention, not the configured upstream.
    pin_file = checks[CHECK_PIN_FILE.format(repo=DOWNSTREAM, pin=PIN)]
    assert pin_file.status == FAIL
    assert "is not vllm-project/gone" in pin_file.detail


async def test_a_buildkite_token_missing_a_scope(ci_env: Harness) -> None:
    seed(ci_env)
    ci_env.ci.set_token_scopes(BUILDKITE_TOKEN, ["read_builds", "read_artifacts"])
    token = by_check(await run_checks(ci_env.settings))[CHECK_TOKEN]
    assert token.status == FAIL
    assert "read_build_logs, write_builds" in token.detail
    assert token.fix == fixes.FIX_BUILDKITE_SCOPES.format(scopes="read_build_logs, write_builds")


async def test_a_wrong_private_key(ci_env: Harness) -> None:
    seed(ci_env)
    other_key, _ = generate_app_key()
    results = await run_checks(replace(ci_env.settings, private_key=other_key))
    checks = by_check(results)
    assert checks[CHECK_KEY].status == FAIL
    assert checks[CHECK_KEY].fix == fixes.FIX_KEY
    assert checks[CHECK_PERMISSIONS].status == SKIP
    assert checks[CHECK_INSTALLATION.format(repo=DOWNSTREAM)].status == SKIP
    assert checks[CHECK_TOKEN].status == OK  # Buildkite is checked all the same


def test_missing_settings_are_failures_with_the_fix() -> None:
    out = io.StringIO()
    assert doctor_command({}, out) == 1
    assert "FOLLOWUP_BOT_WEBHOOK_SECRET: required but not set" in out.getvalue()
    assert fixes.FIX_SETTINGS in out.getvalue()


async def test_the_command_as_a_process(ci_env: Harness, tmp_path: Path) -> None:
    seed(ci_env)
    settings = ci_env.settings
    env = {
        "PATH": os.environ.get("PATH", ""),
        # The default database, under a state folder of this test's: not created yet.
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "FOLLOWUP_BOT_WEBHOOK_SECRET": settings.webhook_secret,
        "FOLLOWUP_BOT_APP_ID": settings.app_id,
        "FOLLOWUP_BOT_PRIVATE_KEY": settings.private_key,
        "FOLLOWUP_BOT_REPOSITORIES": ",".join(settings.repositories),
        "FOLLOWUP_BOT_GITHUB_API_URL": settings.github_api_url,
        "FOLLOWUP_BOT_BUILDKITE_API_TOKEN": BUILDKITE_TOKEN,
        "FOLLOWUP_BOT_BUILDKITE_API_URL": settings.buildkite_api_url,
        "FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET": settings.buildkite_webhook_secret or "",
    }
    # Awaited as a subprocess so this loop keeps serving the stand-ins meanwhile.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "doctor",
        env=env,
        cwd=MAIN,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    text = out.decode()
    assert process.returncode == 0, text + err.decode()
    assert text.splitlines()[0].split() == ["check", "result", "detail", "fix"]
    assert SUMMARY_OK.format(count=len(text.splitlines()) - 3) in text
    assert settings.private_key not in text
    assert settings.webhook_secret not in text


async def test_services_that_do_not_answer(ci_env: Harness) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings = replace(ci_env.settings, github_api_url=closed, buildkite_api_url=closed + "/v2")
    checks = by_check(await run_checks(settings))
    assert checks[CHECK_KEY].status == FAIL
    assert checks[CHECK_KEY].fix == fixes.FIX_GITHUB_UNREACHABLE
    assert checks[CHECK_TOKEN].fix == fixes.FIX_BUILDKITE_UNREACHABLE
    assert checks[CHECK_INSTALLATION.format(repo=DOWNSTREAM)].status == SKIP
