"""The GitHub stand-in and the real bot, wired together on loopback.

Shared by the end-to-end tests, the benchmarks and ``followup-bot demo`` so
there is one way to stand the system up (not a copy per test file).
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from aiohttp import web

from bot.context.services import Services
from bot.core.settings import Settings
from bot.service.app import INBOX, SERVICES, create_app
from bot.service.inbox import Inbox
from bot.store.protocol import DeliveryRecord, DeliveryStatus
from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.contract import Contract
from sandbox.github_server import GitHubSandbox
from sandbox.keys import generate_app_key

APP_ID = "424242"
BUILDKITE_ORG = "vllm"
BUILDKITE_TOKEN = "bkua_sandbox_token"
SETTLE_TIMEOUT = 60.0


@functools.cache
def app_key() -> tuple[str, str]:
    """One RSA key pair per process: generating one costs tens of milliseconds."""
    return generate_app_key()


FAILURES_LISTED = 1000


def _failure_key(record: DeliveryRecord) -> tuple[str, str]:
    return record.delivery.delivery_id, record.last_error or ""


class HandlerFailures(AssertionError):
    """Deliveries the bot recorded failed: each id, event and the reason it gave."""

    def __init__(self, records: list[DeliveryRecord]) -> None:
        self.records = records
        lines = [f"{r.delivery.delivery_id} ({r.delivery.event}): {r.last_error}" for r in records]
        super().__init__(f"{len(records)} delivery(ies) failed:\n" + "\n".join(lines))


@dataclass
class BotProcess:
    """The bot's aiohttp app served on a loopback port."""

    app: web.Application
    runner: web.AppRunner
    webhook_url: str

    @property
    def buildkite_webhook_url(self) -> str:
        return self.webhook_url.removesuffix("/github") + "/buildkite"

    @property
    def inbox(self) -> Inbox:
        return self.app[INBOX]

    @property
    def services(self) -> Services:
        return self.app[SERVICES]

    async def stop(self) -> None:
        await self.runner.cleanup()


async def start_bot(
    settings: Settings,
    *,
    backoff_base: float = 0.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> BotProcess:
    app = create_app(settings, backoff_base=backoff_base, sleep=sleep)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return BotProcess(app, runner, f"http://127.0.0.1:{port}/webhooks/github")


@dataclass
class Harness:
    sandbox: GitHubSandbox
    settings: Settings
    bot: BotProcess | None
    buildkite: BuildkiteSandbox | None = None
    # Rate-limit waits the bot's clients asked for: recorded, not slept, so tests stay fast.
    waits: list[float] = field(default_factory=list)
    # Failed deliveries settle() has reported already: (delivery id, reason).
    _reported: set[tuple[str, str]] = field(default_factory=set)

    async def _record_wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)

    @property
    def ci(self) -> BuildkiteSandbox:
        if self.buildkite is None:
            raise RuntimeError("this harness has no Buildkite stand-in")
        return self.buildkite

    @property
    def running(self) -> BotProcess:
        if self.bot is None:
            raise RuntimeError("the bot is not running")
        return self.bot

    async def settle(self, *, expect_failures: bool = False) -> list[DeliveryRecord]:
        """Until quiet: deliver what GitHub emitted, let the bot finish, repeat.

        The bot's own writes make GitHub emit more webhooks (a push to the bump
        branch, ``pull_request.opened``), so one round is not always enough.

        Deliveries the bot recorded failed since the last settle (a handler raised
        and the inbox gave up) raise ``HandlerFailures``, so a bug is a test failure
        and not a line in a log; with ``expect_failures`` they are returned instead.
        """
        await self._until_quiet()
        failed = await self._new_failures()
        if failed and not expect_failures:
            raise HandlerFailures(failed)
        return failed

    async def _new_failures(self) -> list[DeliveryRecord]:
        if self.bot is None:
            return []
        records = await self.bot.services.store.list_deliveries(
            DeliveryStatus.FAILED, limit=FAILURES_LISTED
        )
        new = [r for r in records if _failure_key(r) not in self._reported]
        self._reported.update(_failure_key(r) for r in new)
        return sorted(new, key=lambda r: r.delivery.received_at)

    async def _until_quiet(self) -> None:
        async def delivered() -> int:
            await self.sandbox.flush()
            if self.buildkite is not None:
                await self.buildkite.flush()
                return len(self.sandbox.deliveries) + len(self.buildkite.deliveries)
            return len(self.sandbox.deliveries)

        async def rounds() -> None:
            while True:
                seen = await delivered()
                if self.bot is not None:
                    await self.bot.inbox.wait_idle()
                if await delivered() == seen:
                    return

        await asyncio.wait_for(rounds(), SETTLE_TIMEOUT)

    async def start(self, *, backoff_base: float = 0.0) -> BotProcess:
        self.bot = await start_bot(
            self.settings, backoff_base=backoff_base, sleep=self._record_wait
        )
        self.sandbox.webhook_url = self.bot.webhook_url
        if self.buildkite is not None:
            self.buildkite.webhook_url = self.bot.buildkite_webhook_url
        return self.bot

    async def stop(self) -> None:
        if self.bot is not None:
            await self.bot.stop()
            self.bot = None
            self.sandbox.webhook_url = None
            if self.buildkite is not None:
                self.buildkite.webhook_url = None


@asynccontextmanager
async def harness(
    workdir: Path,
    *,
    repositories: tuple[str, ...],
    start: bool = True,
    strict: bool = True,
    backoff_base: float = 0.0,
    buildkite: bool = False,
    **settings_overrides: object,
) -> AsyncIterator[Harness]:
    """The GitHub stand-in (and with ``buildkite`` the Buildkite one), and with ``start``
    the bot serving webhooks from them."""
    private_key, public_key = app_key()
    secret = secrets.token_hex(16)
    sandbox = GitHubSandbox(
        workdir / "github",
        app_id=APP_ID,
        app_public_key_pem=public_key,
        webhook_secret=secret,
        contract=Contract.load(),
        strict=strict,
    )
    await sandbox.start()
    ci = None
    if buildkite:
        ci = BuildkiteSandbox(
            organization=BUILDKITE_ORG, api_token=BUILDKITE_TOKEN, webhook_token=secret
        )
        await ci.start()
        settings_overrides = {
            "buildkite_api_token": BUILDKITE_TOKEN,
            "buildkite_api_url": ci.base_url,
            "buildkite_webhook_secret": secret,
            **settings_overrides,
        }
    settings = Settings(
        webhook_secret=secret,
        app_id=APP_ID,
        private_key=private_key,
        repositories=repositories,
        github_api_url=sandbox.base_url,
        database=str(workdir / "followup-bot.sqlite3"),
        reconcile_interval=0,
    )
    settings = replace(settings, **settings_overrides)  # type: ignore[arg-type]
    env = Harness(sandbox, settings, None, ci)
    try:
        if start:
            await env.start(backoff_base=backoff_base)
        yield env
    finally:
        await env.stop()
        if ci is not None:
            await ci.close()
        await sandbox.close()
