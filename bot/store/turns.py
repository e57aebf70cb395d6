"""What both backends share of the inbox's writes: turns and admissions, batched.

A backend supplies ``_write_turns`` and ``_write_admissions`` (one transaction per
batch); this mixin turns the protocol's calls into requests to the two coalescers, so
the SQLite and PostgreSQL stores mean the same by every one of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from bot.store.coalesce import Coalescer
from bot.store.protocol import Delivery, DeliveryStatus, EnqueueResult, Settlement


@dataclasses.dataclass(frozen=True)
class Turn:
    """How an attempt ended (if one did), then maybe a claim of the next delivery."""

    settled: Settlement | None
    now: float
    busy: frozenset[str]
    claim: bool


class BatchedWrites:
    """``enqueue``, the claims and the ends of attempts, each batched with its kind."""

    def __init__(self, name: str) -> None:
        self._admissions: Coalescer[tuple[Delivery, bool], EnqueueResult] = Coalescer(
            self._write_admissions, f"{name}-enqueue"
        )
        self._turns: Coalescer[Turn, Delivery | None] = Coalescer(
            self._write_turns, f"{name}-turns"
        )

    async def _write_admissions(
        self, batch: list[tuple[Delivery, bool]]
    ) -> Sequence[EnqueueResult | BaseException]:
        raise NotImplementedError

    async def _write_turns(self, batch: list[Turn]) -> Sequence[Delivery | BaseException | None]:
        raise NotImplementedError

    async def _written(self) -> None:
        """Wait for the batches in flight (before closing)."""
        await self._admissions.wait_written()
        await self._turns.wait_written()

    async def enqueue(self, delivery: Delivery) -> bool:
        return await self._admissions.submit((delivery, False)) is EnqueueResult.NEW

    async def enqueue_or_requeue(self, delivery: Delivery) -> EnqueueResult:
        return await self._admissions.submit((delivery, True))

    async def claim(self, now: float, busy_subjects: frozenset[str]) -> Delivery | None:
        return await self.settle_and_claim(None, now, busy_subjects)

    async def settle_and_claim(
        self,
        settled: Settlement | None,
        now: float,
        busy_subjects: frozenset[str],
        *,
        claim: bool = True,
    ) -> Delivery | None:
        return await self._turns.submit(Turn(settled, now, busy_subjects, claim))

    async def finish(self, delivery_id: str, *, handlers: Collection[str] = ()) -> None:
        done = Settlement(delivery_id, DeliveryStatus.DONE, handlers=tuple(handlers))
        await self.settle_and_claim(done, 0.0, frozenset(), claim=False)

    async def retry_later(self, delivery_id: str, at: float, reason: str) -> None:
        retry = Settlement(delivery_id, DeliveryStatus.QUEUED, retry_at=at, reason=reason)
        await self.settle_and_claim(retry, 0.0, frozenset(), claim=False)

    async def fail(self, delivery_id: str, reason: str) -> None:
        failed = Settlement(delivery_id, DeliveryStatus.FAILED, reason=reason)
        await self.settle_and_claim(failed, 0.0, frozenset(), claim=False)
