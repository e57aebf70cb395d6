"""What /metrics shows besides the delivery counters: the process and its build, intake
latency, each repository's last reconcile, each pin's lag, and no ``_created`` series."""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

import aiohttp
from gidgethub import routing, sansio

from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core.metrics import installed_version
from bot.core.sources import RECONCILE_EVENT
from bot.pins.snapshot import pin_snapshot
from bot.service.reconcile import reconcile_delivery
from bot.store.kinds import Kind, pin_key

from .service import Handlers, push_body, settings_for
from .test_watching import get, samples, serving

NOW = 1_800_000_000.0
RECONCILED = "test.reconciled"


async def test_process_build_and_intake_series_and_no_created_ones(tmp_path: Path) -> None:
    handlers = Handlers()
    handlers.broken = False
    async with serving(settings_for(tmp_path / "bot.db"), [handlers.router]) as service:
        await service.post("d1", push_body())
        await service.post("d1", push_body())  # a duplicate is a 202 too
        async with (
            aiohttp.ClientSession() as session,
            session.post(service.url + "/webhooks/github", data=b"{}") as refused,
        ):
            assert refused.status == 400  # refused: not timed as an intake
        await service.settle()
        _, text = await get(service, "/metrics")

    found = samples(text)
    names = {name for name, _ in found}
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes"} <= names
    assert "python_info" in names
    build = ("version", installed_version()), ("python", platform.python_version())
    assert found["followup_bot_build_info", tuple(sorted(build))] == 1.0
    intake = ("followup_bot_intake_duration_seconds_count", (("source", "github"),))
    assert found[intake] == 2
    assert [name for name in names if name.endswith("_created")] == []


class Reconciles:
    def __init__(self) -> None:
        self.router = routing.Router()
        self.router.add(self.reconcile, RECONCILE_EVENT)

    @handler_id(RECONCILED)
    async def reconcile(self, event: sansio.Event, services: Services) -> None:
        return None


async def test_last_reconcile_per_repository(tmp_path: Path) -> None:
    now = [NOW]
    async with serving(
        settings_for(tmp_path / "bot.db"), [Reconciles().router], clock=lambda: now[0]
    ) as service:
        _, before = await get(service, "/metrics")
        await service.inbox.submit(reconcile_delivery("o/r", now[0], 60.0))
        await service.settle()
        now[0] += 90.0
        _, after = await get(service, "/metrics")
    series = "followup_bot_last_reconcile_timestamp_seconds", (("repository", "o/r"),)
    assert series not in samples(before)
    assert samples(after)[series] == NOW


async def test_pins_behind_and_their_oldest_unrolled_commit_age(tmp_path: Path) -> None:
    settings = dataclasses.replace(settings_for(tmp_path / "bot.db"), repositories=("o/r",))
    async with serving(settings, [Handlers().router], clock=lambda: NOW) as service:
        store = service.store
        behind = pin_snapshot(
            pinned="a" * 40, upstream_head="b" * 40, behind=3, oldest_unrolled_at=NOW - 7200
        )
        current = pin_snapshot(
            pinned="c" * 40, upstream_head="c" * 40, behind=0, oldest_unrolled_at=None
        )
        await store.put_state(Kind.DASHBOARD_PIN, pin_key("o/r", "torch"), behind)
        await store.put_state(Kind.DASHBOARD_PIN, pin_key("o/r", "cutlass"), current)
        # A repository this bot no longer serves: its old documents are not shown.
        await store.put_state(Kind.DASHBOARD_PIN, pin_key("x/gone", "torch"), behind)
        _, text = await get(service, "/metrics")

    found = samples(text)
    lag = {
        (name, dict(labels)["pin"]): value
        for (name, labels), value in found.items()
        if name.startswith("followup_bot_pin_")
    }
    assert lag == {
        ("followup_bot_pin_commits_behind", "torch"): 3,
        ("followup_bot_pin_oldest_unrolled_commit_age_seconds", "torch"): 7200,
        ("followup_bot_pin_commits_behind", "cutlass"): 0,
        ("followup_bot_pin_oldest_unrolled_commit_age_seconds", "cutlass"): 0,
    }
    assert {dict(labels)["repository"] for (name, labels) in found if "_pin_" in name} == {"o/r"}
