"""Faults the tests can inject into the GitHub stand-in's API answers.

Besides planned faults (the next N requests, optionally of one operation),
a seeded random mix can be switched on: server errors, secondary rate limits,
and *ghost writes*, where the write is applied and the answer is still a 502,
as happens when GitHub's front end times out on a write that went through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from sandbox.fault_mix import FaultMix, RandomlyFaulty

SERVER_ERROR_MESSAGE = "Server Error"
PRIMARY_LIMIT_MESSAGE = (
    "API rate limit exceeded for installation. If you reach out to GitHub Support for help, "
    "please include the request ID."
)
SECONDARY_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)


@dataclass(frozen=True)
class Fault:
    """One planned bad answer: a 5xx (``kind`` "error") or a 403 rate limit."""

    kind: Literal["error", "primary", "secondary", "ghost", "crash"]
    status: int
    operation: str | None
    retry_after: int = 1


class Faults(RandomlyFaulty):
    """Planned faults, consumed in order by the requests they match."""

    def __init__(self) -> None:
        self.latency: float = 0.0
        self._pending: list[Fault] = []
        self._outage: Fault | None = None
        self.random: FaultMix | None = None
        self.injected: list[Fault] = []  # every fault answered, in order
        self.on_crash: Callable[[], None] | None = None
        # Someone else's action to run just before the next request of an operation is
        # served: the races a real repository has (a push lands as the merge arrives).
        self._before: list[tuple[str, Callable[[], Awaitable[None]]]] = []

    def before_next(self, operation: str, action: Callable[[], Awaitable[None]]) -> None:
        """Run ``action`` right before the next ``operation`` request is served (once)."""
        self._before.append((operation, action))

    async def run_before(self, operation_id: str) -> None:
        for index, (operation, action) in enumerate(self._before):
            if operation == operation_id:
                del self._before[index]
                await action()
                return

    def crash_after(self, operation: str, on_crash: Callable[[], None]) -> None:
        """The next ``operation`` is applied, then ``on_crash`` runs (say, SIGKILL the bot)
        before any answer: the client dies between this write and its next."""
        self.on_crash = on_crash
        self._pending.append(Fault("crash", 502, operation))

    def ghost_next(self, count: int, operation: str | None = None) -> None:
        """The next matching writes are applied, then answered 502."""
        self._pending.extend(Fault("ghost", 502, operation) for _ in range(count))

    def fail_next(self, count: int, status: int = 502, operation: str | None = None) -> None:
        self._pending.extend(Fault("error", status, operation) for _ in range(count))

    def rate_limit_next(
        self,
        count: int,
        kind: Literal["primary", "secondary"] = "secondary",
        operation: str | None = None,
        retry_after: int = 1,
    ) -> None:
        self._pending.extend(Fault(kind, 403, operation, retry_after) for _ in range(count))

    def outage(self, status: int = 503) -> None:
        """Every request fails with ``status`` until ``clear``: the API is down."""
        self._outage = Fault("error", status, None)

    def take(self, operation_id: str, method: str = "GET") -> Fault | None:
        """The first pending fault for this operation (or for any), removed from the plan;
        else the outage, if one is on; else, when switched on, a random one."""
        fault = None
        for index, planned in enumerate(self._pending):
            if planned.operation in (None, operation_id):
                fault = self._pending.pop(index)
                break
        if fault is None:
            fault = self._outage
        if fault is None and self.random is not None:
            fault = self._drawn(self.random, operation_id, method)
        if fault is not None:
            self.injected.append(fault)
        return fault

    @staticmethod
    def _drawn(mix: FaultMix, operation_id: str, method: str) -> Fault | None:
        drawn = mix.draw(method)
        if drawn == "error":
            return Fault("error", mix.server_error(), operation_id)
        if drawn == "limit":
            wait = 1 if mix.limit_wait is None else mix.limit_wait
            return Fault("secondary", 403, operation_id, retry_after=wait)
        if drawn == "ghost":
            return Fault("ghost", 502, operation_id)
        return None

    def clear(self) -> None:
        self.latency = 0.0
        self._pending.clear()
        self._outage = None
        self._before.clear()
        self.random = None
