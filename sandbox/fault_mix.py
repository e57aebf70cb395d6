"""A seeded random mix of bad answers, shared by the GitHub and Buildkite stand-ins.

Each request draws at most one: a server error, a rate limit, or (for writes
only) a *ghost*: the write is applied and the answer is lost anyway. Each
stand-in turns the drawn kind into its own fault (GitHub's 403 secondary limit,
Buildkite's 429).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Drawn = Literal["error", "limit", "ghost"]
READS = frozenset({"GET", "HEAD"})
SERVER_ERRORS = (500, 502, 503)


@dataclass
class FaultMix:
    rng: random.Random
    error_rate: float = 0.0
    limit_rate: float = 0.0
    ghost_rate: float = 0.0
    # Seconds a drawn rate limit tells the client to wait; None: the stand-in's own answer
    # (GitHub's one second, the end of Buildkite's minute window).
    limit_wait: int | None = None

    @classmethod
    def seeded(
        cls,
        seed: int,
        *,
        error_rate: float = 0.0,
        limit_rate: float = 0.0,
        ghost_rate: float = 0.0,
        limit_wait: int | None = None,
    ) -> FaultMix:
        return cls(random.Random(seed), error_rate, limit_rate, ghost_rate, limit_wait)

    def draw(self, method: str) -> Drawn | None:
        roll = self.rng.random()
        if roll < self.error_rate:
            return "error"
        roll -= self.error_rate
        if roll < self.limit_rate:
            return "limit"
        roll -= self.limit_rate
        if method not in READS and roll < self.ghost_rate:
            return "ghost"
        return None

    def server_error(self) -> int:
        return self.rng.choice(SERVER_ERRORS)


class RandomlyFaulty:
    """The random side of a stand-in's faults: off until ``randomly`` switches it on."""

    random: FaultMix | None = None

    def randomly(
        self,
        *,
        seed: int,
        error_rate: float = 0.0,
        limit_rate: float = 0.0,
        ghost_rate: float = 0.0,
        limit_wait: int | None = None,
    ) -> None:
        self.random = FaultMix.seeded(
            seed,
            error_rate=error_rate,
            limit_rate=limit_rate,
            ghost_rate=ghost_rate,
            limit_wait=limit_wait,
        )
