"""The store's read-only views for the status page, on both backends."""

from __future__ import annotations

import pytest

from bot.store.postgres import PostgresStore
from bot.store.protocol import Delivery, DeliveryStatus, Store
from tests.conftest import backend_store

NOW = 1_754_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_recent_state_is_newest_first_within_the_kinds_asked(
    backend: str, request: pytest.FixtureRequest
) -> None:
    clock = Clock()
    async with backend_store(backend, request, clock) as store:
        for step, (kind, key) in enumerate(
            (("bump", "o/r#a"), ("landing", "o/r#1"), ("config", "o/r"), ("bump", "o/r#b"))
        ):
            clock.now = NOW + step
            await store.put_state(kind, key, {"n": step})
        clock.now = NOW + 10
        await store.put_state("bump", "o/r#a", {"n": 10})  # written again: newest now

        recent = await store.recent_state(["bump", "landing"], limit=10)
        two = await store.recent_state(["bump", "landing"], limit=2)

    assert [(r.kind, r.key, r.updated_at, r.value) for r in recent] == [
        ("bump", "o/r#a", NOW + 10, {"n": 10}),
        ("bump", "o/r#b", NOW + 3, {"n": 3}),
        ("landing", "o/r#1", NOW + 1, {"n": 1}),
    ]
    assert [r.key for r in two] == ["o/r#a", "o/r#b"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_latest_delivery_by_id_prefix(backend: str, request: pytest.FixtureRequest) -> None:
    async with backend_store(backend, request) as store:
        assert await store.latest_delivery("reconcile:") is None
        for n, delivery_id in enumerate(
            ("reconcile:o/r:1", "reconcile:o/r:3", "push-1", "reconcile:o/r:2", "reconcilex")
        ):
            await store.enqueue(Delivery(delivery_id, "internal", "e", b"{}", "s", NOW + n))
        latest = await store.latest_delivery("reconcile:")

    assert latest is not None
    assert latest.delivery.delivery_id == "reconcile:o/r:2"  # received last, whatever its id
    assert latest.status is DeliveryStatus.QUEUED


async def test_list_replicas_names_the_live_ones(any_store: Store) -> None:
    replicas = await any_store.list_replicas()
    if isinstance(any_store, PostgresStore):
        [me] = replicas  # the open store registers itself
        assert me.replica_id == any_store.replica_id
    else:
        assert replicas == []
