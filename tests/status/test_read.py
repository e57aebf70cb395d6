"""The status page's reader, on a real SQLite store holding the documents the flows write."""

from __future__ import annotations

from bot.dashboard.flow import pin_snapshot, record_allowlist_evidence
from bot.main_red.state import SignalDoc
from bot.pins.state import Outcome, PinState
from bot.routing_check.migrate_pr import MigrationState
from bot.status.model import FailureRow, FlakyStep, MigrationRow, RedRow
from bot.status.read import ERROR_SHOWN, read_status
from bot.store.kinds import Kind, migration_key, pin_key, signal_key
from bot.store.protocol import Delivery
from bot.store.sqlite import SQLiteStore

REPO, OTHER = "vllm-project/vllm", "someone/else"
NOW = 1_754_000_000.0
DAY = 86400.0


def retry_job(repo: str, step: str, outcome: str | None) -> dict[str, object]:
    """A ``retry-job`` record as ``bot.retry.plan`` writes it."""
    return {"repo": repo, "pr": 3, "step_key": step, "name": step, "class": "infra",
            "rule": None, "outcome": outcome, "requested_by": "maintainer", "at": NOW}  # fmt: skip


async def test_reads_every_section_of_each_repository(store: SQLiteStore) -> None:
    key = pin_key(REPO, "flash-attention")
    bump = PinState(pr=12, last_result=Outcome.CREATED.value)
    await store.put_state(Kind.BUMP, key, bump.dump())
    snap = pin_snapshot(
        pinned="a" * 40, upstream_head="b" * 40, behind=2, oldest_unrolled_at=NOW - 3 * DAY
    )
    await store.put_state(Kind.DASHBOARD_PIN, key, snap)
    await record_allowlist_evidence(store, REPO, None, {"vllm_flash_attn/*.so": "stale"}, now=NOW)
    opened = MigrationState(pr=9, last_result="updated", steps_left=4)
    closed = MigrationState(pr=8, last_result="closed", closed_by_bot=8, steps_left=0)
    await store.put_state(Kind.MIGRATION, migration_key(REPO, "l4"), opened.dump())
    await store.put_state(Kind.MIGRATION, migration_key(REPO, "done"), closed.dump())
    await store.put_state(Kind.MIGRATION, migration_key(OTHER, "l4"), opened.dump())
    red = SignalDoc(state="broken", since=41, issue=7, revert_pr=8)
    await store.put_state(Kind.MAIN_SIGNAL, signal_key(REPO, "ci", "kernels"), red.dump())
    green = SignalDoc(state="green")
    await store.put_state(Kind.MAIN_SIGNAL, signal_key(REPO, "ci", "lint"), green.dump())
    for job, step, outcome in (("1", "gpu", "passed"), ("2", "gpu", "failed"), ("3", "tp", None)):
        await store.put_state(Kind.RETRY_JOB, job, retry_job(REPO, step, outcome))
    await store.put_state(Kind.RETRY_JOB, "4", retry_job(OTHER, "elsewhere", "passed"))

    status = await read_status(store, (REPO, OTHER), now=NOW)

    mine, other = status.repos
    assert mine.repo == REPO
    assert other.repo == OTHER
    [row] = mine.pins
    assert (row.name, row.pinned, row.behind, row.pr, row.pr_state) == (
        "flash-attention", "a" * 40, 2, 12, "open"
    )  # fmt: skip
    assert row.oldest_unrolled_age_days == 3.0
    [entry] = mine.entries
    assert (entry.pattern, entry.evidence, entry.date) == (
        "vllm_flash_attn/*.so",
        "stale",
        "2025-07-31",
    )
    assert mine.migrations == (MigrationRow("l4", 9, 4, "updated"),)
    assert mine.red == (RedRow("ci/kernels", 41, 7, 8),)
    assert mine.flakiest == (FlakyStep("gpu", 2, 1, 1), FlakyStep("tp", 1, 0, 0))
    assert other.pins == ()
    assert other.red == ()
    assert other.flakiest == (FlakyStep("elsewhere", 1, 1, 0),)
    assert status.failures == ()


async def test_failed_deliveries_newest_first_with_their_reason(store: SQLiteStore) -> None:
    for n in (1, 2):
        delivery = Delivery(f"d{n}", "github", "push", b"{}", f"github:{n}", NOW + n)
        await store.enqueue(delivery)
        await store.fail(f"d{n}", "x" * (ERROR_SHOWN + 5) if n == 2 else "boom")
    await store.enqueue(Delivery("fine", "github", "push", b"{}", "github:3", NOW))

    status = await read_status(store, (), now=NOW)

    assert [f.delivery_id for f in status.failures] == ["d2", "d1"]
    assert len(status.failures[0].error) == ERROR_SHOWN  # a traceback is cut short
    assert status.failures[1] == FailureRow("d1", "github", "push", "github:1", NOW + 1, 0, "boom")


async def test_nothing_recorded_reads_empty(store: SQLiteStore) -> None:
    [repo] = (await read_status(store, (REPO,), now=NOW)).repos
    assert (repo.pins, repo.entries, repo.migrations, repo.red, repo.flakiest) == ((),) * 5
