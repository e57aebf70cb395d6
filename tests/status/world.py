"""One recorded world, made by the real flows through the stand-ins and served on loopback.

The bump flow opens a bump PR (pins), the bump PR's audit job prunes a stale allowlist
entry (allowlist evidence), `@bot retry-flaky` retries an infra failure that then passes
(the flaky trail), and a malformed delivery fails for good (the service's failures).
The red step and the migration PR are written with the documents their flows write,
since staging a red main or a migration sweep here would double the suite's setup.

The bot runs on an event loop of its own thread, so the synchronous browser can load
the page while the server answers.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.main_red.state import SignalDoc
from bot.routing_check.migrate_pr import MigrationState
from bot.status.read import StatusSources
from bot.status.route import status_view
from bot.store.kinds import Kind, migration_key, signal_key
from bot.store.outage import Outage
from bot.store.protocol import Delivery
from sandbox.harness import Harness, harness
from sandbox.scenario import World
from sandbox.vllm_shapes import ALLOWLIST_CONFIG, CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.conftest import DEEP_GEMM, FA3, audit_build, seed, stale_line
from tests.e2e.test_allowlist_flow import BRANCH
from tests.e2e.test_bump_flow import merge_upstream
from tests.e2e.test_retry_flaky import INFRA, MAINTAINER, ask, pr_build

T = TypeVar("T")

PIN = "flash-attention"
HOSTILE_STEP = "<img src=x onerror=alert(1)>"
HOSTILE_SUBJECT = "github:<script>alert('subject')</script>"
MIGRATION = "l4-sweep"
MIGRATION_PR = 4242
RED_ISSUE = 77
FAILED_DELIVERY = "status-page-malformed"
STARTUP_TIMEOUT = 120.0
DOWN_SINCE = 1_754_000_000.0  # when the stand-in database went away


@dataclass
class ServedWorld:
    env: Harness
    loop: asyncio.AbstractEventLoop

    @property
    def status_url(self) -> str:
        return self.env.running.webhook_url.removesuffix("/webhooks/github") + "/status"

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the bot's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(STARTUP_TIMEOUT)


async def record(env: Harness) -> None:
    """The world the page shows, made by the flows (see the module's docstring)."""
    seed(env, config=CONFIG + ALLOWLIST_CONFIG)
    World(env).allowlist(FA3, DEEP_GEMM)
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3),))

    feature = env.sandbox.commit(DOWNSTREAM, {"vllm/m.py": "x = 1\n"}, "Add", branch="feature")
    pull = env.sandbox.open_pull(DOWNSTREAM, head="feature", title="Add", by="contributor")
    env.ci.set_retry_outcome(INFRA.step_key, state="passed")
    pr_build(env, int(pull["number"]), feature, INFRA)
    await ask(env, int(pull["number"]), MAINTAINER)

    store = env.running.services.store
    red = SignalDoc(state="broken", reason="failed twice", since=41, issue=RED_ISSUE)
    await store.put_state(
        Kind.MAIN_SIGNAL, signal_key(DOWNSTREAM, PIPELINE, HOSTILE_STEP), red.dump()
    )
    sweep = MigrationState(pr=MIGRATION_PR, last_result="created", steps_left=8, head="f" * 40)
    await store.put_state(Kind.MIGRATION, migration_key(DOWNSTREAM, MIGRATION), sweep.dump())

    # A comment event whose comment id is not a number: the handler refuses it for good.
    payload = {
        "action": "created",
        "repository": {"full_name": DOWNSTREAM},
        "comment": {"id": "one", "body": "@bot help", "user": {"login": MAINTAINER}},
        "issue": {"number": int(pull["number"]), "pull_request": {"url": "x"}},
    }
    delivery = Delivery(
        delivery_id=FAILED_DELIVERY,
        source="github",
        event="issue_comment",
        payload=json.dumps(payload).encode(),
        subject=HOSTILE_SUBJECT,
        received_at=1_754_000_000.0,
    )
    await env.running.inbox.submit(delivery)
    await env.settle(expect_failures=True)


async def nothing(env: Harness) -> None:
    """The empty world: the bot started, nothing recorded yet."""
    await env.start()


@contextmanager
def serve_world(
    workdir: Path,
    make: Callable[[Harness], Awaitable[None]] = record,
    status_token: str | None = None,
) -> Iterator[ServedWorld]:
    """The world ``make`` records, its bot serving until the context ends."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="status-world", daemon=True)
    thread.start()
    stop = asyncio.Event()
    ready: asyncio.Future[Harness] = loop.create_future()

    async def main() -> None:
        async with harness(
            workdir,
            repositories=(DOWNSTREAM,),
            start=False,
            buildkite=True,
            status_token=status_token,
        ) as env:
            try:
                await make(env)
            except BaseException as exc:
                ready.set_exception(exc)
                raise
            ready.set_result(env)
            await stop.wait()

    running = asyncio.run_coroutine_threadsafe(main(), loop)
    try:
        env = asyncio.run_coroutine_threadsafe(_wait(ready), loop).result(STARTUP_TIMEOUT)
        yield ServedWorld(env, loop)
    finally:
        loop.call_soon_threadsafe(stop.set)
        try:
            running.result(STARTUP_TIMEOUT)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(STARTUP_TIMEOUT)
            loop.close()


async def _wait(future: asyncio.Future[Harness]) -> Harness:
    return await future


class Unreachable:
    """A store whose database does not answer: every read is refused, as a stopped
    PostgreSQL's connection is."""

    def __init__(self) -> None:
        self.outage = Outage(lambda: DOWN_SINCE)

    def __getattr__(self, name: str) -> Callable[..., Awaitable[None]]:
        async def refused(*args: object, **kwargs: object) -> None:
            raise ConnectionRefusedError(111, "Connect call failed")

        return refused


@contextmanager
def serve_unreachable() -> Iterator[str]:
    """``/status`` alone over a database that does not answer; its address."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="status-down", daemon=True)
    thread.start()
    app = web.Application()
    app.router.add_get(
        "/status",
        status_view(
            token=None,
            sources=lambda: StatusSources(Unreachable()),  # type: ignore[arg-type]
            repositories=(DOWNSTREAM,),
            clock=lambda: DOWN_SINCE + 60,
        ),
    )
    server = TestServer(app, host="127.0.0.1")
    try:
        asyncio.run_coroutine_threadsafe(server.start_server(), loop).result(STARTUP_TIMEOUT)
        yield str(server.make_url("/status"))
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(STARTUP_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(STARTUP_TIMEOUT)
        loop.close()
