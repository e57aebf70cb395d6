"""Running every doctor check: one session, independent checks at once, each bounded in time.

The key check goes first: without a JWT GitHub accepts, the repository checks would
only repeat its failure. Buildkite and the database are asked meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import aiohttp
import gidgethub.aiohttp

from bot.core.settings import Settings
from bot.doctor import fixes, github_checks
from bot.doctor.buildkite_check import CHECK_TOKEN, check_token, check_webhook
from bot.doctor.database_check import check_database
from bot.doctor.github_checks import GitHubSide
from bot.doctor.registry_check import RegistryAccess
from bot.doctor.result import FAIL, CheckResult, failed, ok
from bot.github.client import USER_AGENT, GitHubApp

CHECK_WEBHOOK_SECRET = "webhook secret"
DETAIL_SECRET = "set ({length} characters)"
DETAIL_TIMED_OUT = "no answer within {seconds:g} s"
# A repository's checks are several requests in a row (installation, config, pins, registry):
# each is bounded by the HTTP timeout, the whole by this many of them.
REQUESTS_PER_REPOSITORY = 4


async def run_checks(settings: Settings) -> list[CheckResult]:
    """Every check's result, in a fixed order whatever finished first."""
    timeout = aiohttp.ClientTimeout(total=settings.http_timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        side = GitHubSide(
            app_id=settings.app_id,
            private_key=settings.private_key,
            jwt_api=gidgethub.aiohttp.GitHubAPI(
                session, USER_AGENT, base_url=settings.github_api_url
            ),
            app=GitHubApp(
                session,
                app_id=settings.app_id,
                private_key=settings.private_key,
                base_url=settings.github_api_url,
                timeout=settings.http_timeout,
                # A diagnosis should say at once what fails, not wait through backoffs.
                max_retries=0,
            ),
            registry=RegistryAccess(
                session, settings.registry_username, settings.registry_password
            ),
        )
        buildkite = asyncio.create_task(
            _bounded(
                check_token(session, settings),
                settings.http_timeout,
                lambda: [_timed_out(CHECK_TOKEN, "Buildkite", settings.http_timeout)],
            )
        )
        database = asyncio.create_task(check_database(settings, settings.repositories))
        app_results, app = await _app(side, settings)
        repositories = await asyncio.gather(
            *(_repository(side, name, app is not None, settings) for name in settings.repositories)
        )
        token = await buildkite
        stored = await database
    secret = ok(CHECK_WEBHOOK_SECRET, DETAIL_SECRET.format(length=len(settings.webhook_secret)))
    return [
        secret,
        *stored,
        *app_results,
        *(result for results in repositories for result in results),
        *token,
        check_webhook(settings),
    ]


async def _app(
    side: GitHubSide, settings: Settings
) -> tuple[list[CheckResult], dict[str, object] | None]:
    try:
        async with asyncio.timeout(settings.http_timeout):
            return await github_checks.check_app(side)
    except TimeoutError:
        return [_timed_out(github_checks.CHECK_KEY, "GitHub", settings.http_timeout)], None


async def _repository(
    side: GitHubSide, full_name: str, have_key: bool, settings: Settings
) -> list[CheckResult]:
    if not have_key:
        return github_checks.skipped_repository(full_name)
    check = github_checks.CHECK_INSTALLATION.format(repo=full_name)
    return await _bounded(
        github_checks.check_repository(side, full_name),
        settings.http_timeout * REQUESTS_PER_REPOSITORY,
        lambda: [_timed_out(check, "GitHub", settings.http_timeout * REQUESTS_PER_REPOSITORY)],
    )


async def _bounded(
    work: Awaitable[CheckResult | list[CheckResult]],
    seconds: float,
    on_timeout: Callable[[], list[CheckResult]],
) -> list[CheckResult]:
    try:
        async with asyncio.timeout(seconds):
            found = await work
    except TimeoutError:
        return on_timeout()
    return [found] if isinstance(found, CheckResult) else found


def _timed_out(check: str, service: str, seconds: float) -> CheckResult:
    return failed(
        check,
        DETAIL_TIMED_OUT.format(seconds=seconds),
        fixes.FIX_TIMED_OUT.format(service=service, seconds=seconds),
    )


def exit_code(results: Sequence[CheckResult]) -> int:
    return 1 if any(result.status == FAIL for result in results) else 0
