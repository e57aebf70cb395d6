"""The aiohttp application: routes, and the services' lifetime in ``cleanup_ctx``.

One ``ClientSession`` per app, one store, one inbox, one GitHub App client;
all created when the app starts and closed when it stops. The routes are
registered up front and reach the inbox through a typed app key once the
context has built it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp
from aiohttp import web
from gidgethub import routing

import handlers.allowlist
import handlers.bump
import handlers.commands
import handlers.dashboard
import handlers.landing
import handlers.main_red
import handlers.routing
from bot.buildkite.client import BuildkiteClient
from bot.buildkite.transport import BuildkiteConnection
from bot.context.services import Services
from bot.core import log_context
from bot.core.blocking import BlockingRunner
from bot.core.locks import KeyedLocks
from bot.core.metrics import Metrics
from bot.core.settings import Settings
from bot.core.sources import Source
from bot.core.subjects import buildkite_subject, github_subject
from bot.github.client import GitHubApp
from bot.registry.pool import Registries
from bot.service import startup
from bot.service.delivery_watch import payload_repository
from bot.service.dispatch import build_dispatcher, build_wants
from bot.service.inbox import Inbox
from bot.service.readiness import Readiness
from bot.service.reconcile import RECONCILE_LOCK, reconcile_forever
from bot.service.watching import WATCH, Watch, count_answer, metrics_view, readyz
from bot.service.webhooks import (
    MAX_BODY,
    SubjectFn,
    buildkite_webhook_handler,
    github_webhook_handler,
    healthz,
)
from bot.status.read import sources_of
from bot.status.route import status_view
from bot.store.open import store_for
from bot.store.protocol import Store
from bot.store.retention import start_retention, stop_retention

log = logging.getLogger(__name__)

WebView = Callable[[web.Request], Awaitable[web.StreamResponse]]

SETTINGS = web.AppKey("settings", Settings)
SERVICES = web.AppKey("services", Services)
INBOX = web.AppKey("inbox", Inbox)
GITHUB_VIEW: web.AppKey[WebView] = web.AppKey("github_view")
BUILDKITE_VIEW: web.AppKey[WebView | None] = web.AppKey("buildkite_view")

DEFAULT_ROUTERS: tuple[routing.Router, ...] = (
    handlers.bump.router,
    handlers.allowlist.router,
    handlers.commands.router,
    handlers.dashboard.router,
    handlers.routing.router,
    handlers.main_red.router,
    handlers.landing.router,
)
BUILDKITE_WEBHOOKS_OFF = "Buildkite webhooks are not configured on this bot"


def create_app(
    settings: Settings,
    *,
    routers: Sequence[routing.Router] = DEFAULT_ROUTERS,
    clock: Callable[[], float] = time.time,
    backoff_base: float | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> web.Application:
    """The service; ``backoff_base`` is the inbox's first retry delay (default: the
    setting) and ``sleep`` the
    clients' rate-limit waits (tests shrink the one and record the other)."""
    # Let the webhook view see (and refuse with 413) bodies just over the cap,
    # instead of aiohttp answering before our handler runs.
    app = web.Application(client_max_size=MAX_BODY + 1)
    app[SETTINGS] = settings
    metrics = Metrics()  # this app's own registry: apps in one process never collide

    async def services_ctx(app: web.Application) -> AsyncIterator[None]:
        blocking = BlockingRunner(max_workers=4)
        # The single-writer lock comes first: the inbox's start-up re-queues every
        # RUNNING delivery as its own interrupted work, so a second serve on this
        # database must stop here (DatabaseInUse), not run the first one's again.
        store: Store = store_for(settings.database, blocking, clock=clock, serve=True)
        try:
            await store.open()
        except BaseException:
            blocking.close()
            raise
        # Said once this process owns its database: the line an operator checks first.
        log.info(startup.summary(settings))
        session, github, buildkite = _clients(settings, clock, sleep, metrics)
        registries = Registries(
            session,
            username=settings.registry_username,
            password=settings.registry_password,
            timeout=settings.http_timeout,
        )
        services = Services(
            settings,
            session,
            store,
            blocking,
            github,
            clock,
            KeyedLocks(),
            buildkite,
            registries,
            metrics=metrics,
        )
        inbox = Inbox(
            store,
            build_dispatcher(routers, services),
            workers=settings.workers,
            max_attempts=settings.max_attempts,
            backoff_base=settings.retry_backoff if backoff_base is None else backoff_base,
            clock=clock,
            wants=build_wants(routers),
            metrics=metrics,
        )
        services.followups.attach(inbox)
        app[SERVICES] = services
        app[INBOX] = inbox
        app[WATCH] = Watch(services, Readiness(store))
        app[GITHUB_VIEW] = github_webhook_handler(
            settings.webhook_secret.encode(), inbox, _naming(Source.GITHUB, github_subject), clock
        )
        app[BUILDKITE_VIEW] = _buildkite_view(settings, inbox, clock)
        await inbox.start()
        retention = start_retention(store, settings.retention_days, clock)
        ticker = None
        if settings.reconcile_interval > 0 and settings.repositories:
            ticker = asyncio.create_task(
                reconcile_forever(
                    inbox,
                    settings.repositories,
                    settings.reconcile_interval,
                    clock,
                    leader=lambda: store.try_lock(RECONCILE_LOCK),
                ),
                name="reconcile",
            )
        try:
            yield
        finally:
            await stop_retention(retention)
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            await inbox.stop()
            await session.close()
            await store.close()
            blocking.close()

    app.cleanup_ctx.append(services_ctx)
    app.router.add_post("/webhooks/github", github_webhook)
    app.router.add_post("/webhooks/buildkite", buildkite_webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_view)
    status = status_view(
        token=settings.status_token,
        sources=lambda: sources_of(app[SERVICES]),
        repositories=settings.repositories,
        clock=clock,
    )
    app.router.add_get("/status", status)
    app.router.add_post("/status", status)  # the login form
    return app


async def github_webhook(request: web.Request) -> web.StreamResponse:
    view: WebView = request.app[GITHUB_VIEW]
    started = time.perf_counter()
    with log_context.bound():  # the repository is noted once the body is verified
        response = await view(request)
    count_answer(request.app[SERVICES], Source.GITHUB, response, time.perf_counter() - started)
    return response


async def buildkite_webhook(request: web.Request) -> web.StreamResponse:
    view = request.app[BUILDKITE_VIEW]
    response: web.StreamResponse
    started = time.perf_counter()
    if view is None:
        response = web.json_response({"message": BUILDKITE_WEBHOOKS_OFF}, status=404)
    else:
        with log_context.bound():
            response = await view(request)
    seconds = time.perf_counter() - started
    count_answer(request.app[SERVICES], Source.BUILDKITE, response, seconds)
    return response


def _naming(source: str, subject_of: SubjectFn) -> SubjectFn:
    """``subject_of``, which the intake calls once the body is verified and parsed, also
    noting the delivery's repository for the intake's log lines that follow."""

    def subject(event: str, payload: Mapping[str, Any]) -> str:
        log_context.note(repository=payload_repository(source, payload))
        return subject_of(event, payload)

    return subject


def _clients(
    settings: Settings,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
    metrics: Metrics,
) -> tuple[aiohttp.ClientSession, GitHubApp, BuildkiteClient | None]:
    """The one HTTP session of the app and the clients that share it."""
    timeout = aiohttp.ClientTimeout(total=settings.http_timeout)
    session = aiohttp.ClientSession(timeout=timeout)
    github = GitHubApp(
        session,
        app_id=settings.app_id,
        private_key=settings.private_key,
        base_url=settings.github_api_url,
        timeout=settings.http_timeout,
        retry_backoff=settings.http_retry_backoff,
        clock=clock,
        sleep=sleep,
        concurrency=settings.github_concurrency,
        writes_per_minute=settings.github_writes_per_minute,
        writes_per_hour=settings.github_writes_per_hour,
        observe=metrics.response,
    )
    buildkite = None
    if settings.buildkite_api_token is not None:
        buildkite = BuildkiteClient(
            session,
            BuildkiteConnection(
                api_url=settings.buildkite_api_url,
                token=settings.buildkite_api_token,
                timeout=settings.http_timeout,
                retry_backoff=settings.http_retry_backoff,
                requests_per_minute=settings.buildkite_requests_per_minute,
            ),
            clock=clock,
            sleep=sleep,
            observe=metrics.response,
        )
    return session, github, buildkite


def _buildkite_view(settings: Settings, inbox: Inbox, clock: Callable[[], float]) -> WebView | None:
    """The Buildkite intake, in signature or plain-token mode as configured (None: off)."""
    secret, token = settings.buildkite_webhook_secret, settings.buildkite_webhook_token
    if secret is None and token is None:
        return None
    return buildkite_webhook_handler(
        signature_secret=secret.encode() if secret is not None else None,
        token=token.encode() if token is not None else None,
        inbox=inbox,
        subject_of=_naming(Source.BUILDKITE, buildkite_subject),
        clock=clock,
        max_age=settings.buildkite_signature_max_age,
    )
