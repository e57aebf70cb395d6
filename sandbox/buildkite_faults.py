"""Faults and rate limits of the Buildkite stand-in.

Buildkite counts every request against an organisation budget and a per-user
(token) budget per window; over either it answers 429 with no ``Retry-After``,
only ``RateLimit-*`` headers and a ``reset`` field in the body.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from sandbox.fault_mix import FaultMix, RandomlyFaulty

RATE_LIMIT_MESSAGE = (
    "You have exceeded your API rate limit. Please wait a little while before trying again."
)
RATE_WINDOW = 60  # Buildkite's budgets are per minute
DEFAULT_ORGANIZATION_LIMIT = 200


@dataclass(frozen=True)
class Fault:
    """One planned bad answer: a server error, or a 429 (``status`` 429); a *ghost* is a
    request that is carried out and still answered with ``status``."""

    status: int
    path_contains: str | None
    ghost: bool = False
    crash: bool = False  # a ghost after which ``Faults.on_crash`` runs (kill the bot)
    reset: int | None = None  # a 429's seconds to wait; None: until the window ends
    method: str | None = None  # only requests of this method (None: any)

    def matches(self, path: str, method: str) -> bool:
        return (self.path_contains is None or self.path_contains in path) and (
            self.method is None or self.method == method
        )


def fault_message(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Server Error"


class Faults(RandomlyFaulty):
    """Planned faults, consumed in order by the requests they match; and, when switched
    on, a seeded random mix of them."""

    def __init__(self) -> None:
        self.latency: float = 0.0
        self._pending: list[Fault] = []
        self.on_crash: Callable[[], None] | None = None
        self.injected: list[Fault] = []
        self.random: FaultMix | None = None

    def crash_after(
        self, path_contains: str, on_crash: Callable[[], None], *, method: str | None = None
    ) -> None:
        """The next matching request is carried out, then ``on_crash`` runs before any
        answer (say, SIGKILL the bot between this write and its next)."""
        self.on_crash = on_crash
        self._pending.append(Fault(502, path_contains, ghost=True, crash=True, method=method))

    def fail_next(
        self,
        count: int,
        status: int = 502,
        path_contains: str | None = None,
        *,
        method: str | None = None,
    ) -> None:
        self._pending.extend(Fault(status, path_contains, method=method) for _ in range(count))

    def ghost_next(
        self, count: int, path_contains: str | None = None, *, method: str | None = None
    ) -> None:
        """The next matching requests (of ``method``, if given) are carried out, then
        answered 502."""
        self._pending.extend(
            Fault(502, path_contains, ghost=True, method=method) for _ in range(count)
        )

    def rate_limit_next(self, count: int, path_contains: str | None = None) -> None:
        self._pending.extend(Fault(429, path_contains) for _ in range(count))

    def take(self, path: str, method: str = "GET") -> Fault | None:
        """The first pending fault for this path (or for any), removed from the plan;
        else, when switched on, a random one."""
        fault = next((f for f in self._pending if f.matches(path, method)), None)
        if fault is not None:
            self._pending.remove(fault)
        elif self.random is not None:
            fault = self._drawn(self.random, method)
        if fault is not None:
            self.injected.append(fault)
        return fault

    @staticmethod
    def _drawn(mix: FaultMix, method: str) -> Fault | None:
        drawn = mix.draw(method)
        if drawn == "error":
            return Fault(mix.server_error(), None)
        if drawn == "limit":
            return Fault(429, None, reset=mix.limit_wait)
        if drawn == "ghost":
            return Fault(502, None, ghost=True)
        return None

    def clear(self) -> None:
        self.latency = 0.0
        self._pending.clear()
        self.random = None


def window_start(now: float) -> float:
    return math.floor(now / RATE_WINDOW) * RATE_WINDOW


def seconds_to_reset(now: float) -> int:
    """Whole seconds until the current window ends (windows are aligned to the clock)."""
    return max(math.ceil(window_start(now) + RATE_WINDOW - now), 1)


@dataclass
class Budget:
    """Requests allowed per window; ``used`` counts the current window only."""

    limit: int
    used: int = 0
    window_start: float = 0.0

    def roll(self, now: float) -> None:
        start = window_start(now)
        if start != self.window_start:
            self.window_start, self.used = start, 0

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)


class RateLimits:
    """The organisation budget and one budget per token; None = not enforced."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.organization: Budget | None = None
        self.per_token: int | None = None
        self._tokens: dict[str, Budget] = {}

    def set(self, *, organization: int | None, per_token: int | None) -> None:
        self.organization = Budget(organization) if organization is not None else None
        self.per_token = per_token
        self._tokens.clear()

    def _budgets(self, token: str) -> tuple[Budget | None, Budget | None]:
        now = self.clock()
        user = None
        if self.per_token is not None:
            user = self._tokens.setdefault(token, Budget(self.per_token))
            user.roll(now)
        if self.organization is not None:
            self.organization.roll(now)
        return self.organization, user

    def admit(self, token: str) -> bool:
        """Count one request; False when either budget is already spent."""
        org, user = self._budgets(token)
        if any(budget is not None and budget.remaining == 0 for budget in (org, user)):
            return False
        for budget in (org, user):
            if budget is not None:
                budget.used += 1
        return True

    def headers(
        self, token: str, *, exhausted: bool = False, reset_in: int | None = None
    ) -> dict[str, str]:
        """``RateLimit-*`` (organisation) and ``RateLimit-User-*`` (token) headers; the
        reset is the window's end unless ``reset_in`` says otherwise."""
        reset = str(seconds_to_reset(self.clock()) if reset_in is None else reset_in)
        org, user = self._budgets(token)
        found: dict[str, str] = {}
        for prefix, budget in (("RateLimit", org), ("RateLimit-User", user)):
            if budget is not None:
                remaining = 0 if exhausted else budget.remaining
                found[f"{prefix}-Remaining"] = str(remaining)
                found[f"{prefix}-Limit"] = str(budget.limit)
                found[f"{prefix}-Reset"] = reset
        if exhausted and not found:
            # A planned 429 with no budget configured still tells the client when to retry.
            found = {
                "RateLimit-Remaining": "0",
                "RateLimit-Limit": str(DEFAULT_ORGANIZATION_LIMIT),
                "RateLimit-Reset": reset,
            }
        return found
