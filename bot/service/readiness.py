"""``/readyz``: whether this process can do its work now, check by check.

``/healthz`` only says the process answers. Ready means all three of:

- database: ``store.ping()`` answers within ``CHECK_TIMEOUT`` seconds.
- github: GitHub gave the App an installation token within ``TOKEN_RECENT`` seconds
  (tokens last an hour and are refreshed five minutes early, so a bot at work gets
  one at least hourly), or else, when none was needed that recently, the App's JWT
  works: ``GET /repos/{owner}/{repo}/installation`` of the first configured
  repository answers. That request is made at most once per ``CREDENTIALS_TTL``
  seconds (its answer, good or bad, stands that long), so probes cost GitHub little.
  With no repository configured there is nothing to ask about, and the check passes.
- inbox: not stuck. Stuck is a queued delivery due for more than ``STUCK_AFTER``
  seconds while no attempt ended for that long either: workers that are gone or
  wedged, not a busy bot (a busy one keeps ending attempts).

Any failing check makes the answer 503 with each failing check and why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass

from bot.service.attempt_end import failure_reason
from bot.service.inbox import Inbox
from bot.service.services import Services

CHECK_TIMEOUT = 10.0
TOKEN_RECENT = 2 * 3600.0
CREDENTIALS_TTL = 60.0
STUCK_AFTER = 900.0

DATABASE = "database"
GITHUB = "github"
INBOX = "inbox"

TIMED_OUT = "no answer within {seconds:g} s"
INBOX_STUCK = (
    "a delivery has been due for {due:.0f} s and no attempt ended for {idle:.0f} s "
    "(stuck after {limit:g} s)"
)


@dataclass
class _Verdict:
    at: float
    problem: str | None


class Readiness:
    """The checks of one app; remembers the last credentials check (see the module)."""

    def __init__(self, services: Services, inbox: Inbox) -> None:
        self._services = services
        self._inbox = inbox
        self._credentials: _Verdict | None = None

    async def failing(self) -> dict[str, str]:
        """Each failing check's name and why; empty when ready."""
        problems = {
            DATABASE: await _within(self._services.store.ping()),
            GITHUB: await self._github(),
        }
        if problems[DATABASE] is None:  # the inbox check reads the database
            problems[INBOX] = await _within(self._inbox_stuck())
        return {name: problem for name, problem in problems.items() if problem is not None}

    async def _github(self) -> str | None:
        services = self._services
        now = services.clock()
        fetched = services.github.tokens.last_fetched_at
        if fetched is not None and now - fetched <= TOKEN_RECENT:
            return None
        if not services.settings.repositories:
            return None
        cached = self._credentials
        if cached is not None and now - cached.at < CREDENTIALS_TTL:
            return cached.problem
        check = services.github.check_credentials(services.settings.repositories[0])
        problem = await _within(check)
        self._credentials = _Verdict(now, problem)
        return problem

    async def _inbox_stuck(self) -> None:
        now = self._services.clock()
        due = await self._services.store.next_due()
        idle = now - self._inbox.last_end_at
        if due is not None and now - due > STUCK_AFTER and idle > STUCK_AFTER:
            raise _Stuck(INBOX_STUCK.format(due=now - due, idle=idle, limit=STUCK_AFTER))


class _Stuck(Exception):
    pass


async def _within(check: Awaitable[None]) -> str | None:
    """None when ``check`` completes in time, else what went wrong, in one line."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await check
    except TimeoutError:
        return TIMED_OUT.format(seconds=CHECK_TIMEOUT)
    except _Stuck as stuck:
        return str(stuck)
    except Exception as exc:  # readiness reports a broken dependency; it never raises
        return failure_reason(exc)
    return None
