"""``/readyz``: whether this replica can take webhooks in and store them now.

``/healthz`` only says the process answers. Ready means one thing: the database
answers a round trip (``store.ping()``) within ``CHECK_TIMEOUT`` seconds, because a
webhook is only acknowledged once it is stored.

Nothing else belongs here. GitHub or Buildkite being slow or refusing, or the inbox
falling behind, is true of every replica at once: a readiness check on any of them
would take the whole Service out of rotation, and webhooks that could have been
stored for later would be refused instead. Those are reported by ``/status``,
``/metrics`` (the inbox's depth and oldest age, the APIs' answers and rate limits)
and ``followup-bot doctor``.
"""

from __future__ import annotations

import asyncio

from bot.service.attempt_end import failure_reason
from bot.store.protocol import Store

CHECK_TIMEOUT = 10.0

DATABASE = "database"

TIMED_OUT = "no answer within {seconds:g} s"


class Readiness:
    """The readiness check of one app."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def failing(self) -> dict[str, str]:
        """Each failing check's name and why; empty when ready."""
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                await self._store.ping()
        except TimeoutError:
            return {DATABASE: TIMED_OUT.format(seconds=CHECK_TIMEOUT)}
        except Exception as exc:  # readiness reports a broken dependency; it never raises
            return {DATABASE: failure_reason(exc)}
        return {}
