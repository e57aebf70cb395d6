"""The status page's reader, on a real SQLite store holding the documents the flows write."""

from __future__ import annotations

from bot.config.models import RepoConfig
from bot.core.metrics import Metrics
from bot.dashboard.flow import pin_snapshot, record_allowlist_evidence
from bot.landing.state import LandingState
from bot.main_red.state import SignalDoc
from bot.pins.state import Outcome, PinState
from bot.routing_check.migrate_pr import MigrationState
from bot.status.model import FailureRow, FlakyStep, Linked, MigrationRow, RedRow
from bot.status.pins import ACTIVE, CLOSED, MERGED, OPEN, PAUSED, WAITING
from bot.status.read import ERROR_SHOWN, StatusSources, known_configs, read_status, sources_of
from bot.status.service import rate_limit_headroom
from bot.store.kinds import Kind, migration_key, pin_key, pr_key, signal_key
from bot.store.protocol import Delivery
from bot.store.sqlite import SQLiteStore

REPO, OTHER = "vllm-project/vllm", "someone/else"
UPSTREAM = "Dao-AILab/flash-attention"
NOW = 1_754_000_000.0
DAY = 86400.0
CONFIG = RepoConfig.model_validate(
    {
        "pins": (
            {
                "name": "flash-attention",
                "upstream": UPSTREAM,
                "file": "cmake/external_projects/vllm_flash_attn.cmake",
                "dependency": "vllm-flash-attn",
            },
        ),
        "buildkite": {"organization": "vllm", "pipelines": ("ci",)},
    }
)


def retry_job(repo: str, step: str, outcome: str | None) -> dict[str, object]:
    """A ``retry-job`` record as ``bot.retry.plan`` writes it."""
    return {"repo": repo, "pr": 3, "step_key": step, "name": step, "class": "infra",
            "rule": None, "outcome": outcome, "requested_by": "maintainer", "at": NOW,
            "build": "vllm/ci/41"}  # fmt: skip


def sources(store: SQLiteStore, config: RepoConfig | None = None) -> StatusSources:
    return StatusSources(store, configs={} if config is None else {REPO: config})


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

    status = await read_status(sources(store, CONFIG), (REPO, OTHER), now=NOW)

    mine, other = status.repos
    assert mine.repo == REPO
    assert other.repo == OTHER
    [pin] = mine.pins
    row = pin.row
    assert (row.name, row.pinned, row.behind, row.pr) == ("flash-attention", "a" * 40, 2, 12)
    assert row.oldest_unrolled_age_days == 3.0
    assert (pin.mode, pin.pr_state) == (ACTIVE, OPEN)
    assert pin.pr == Linked("#12", f"https://github.com/{REPO}/pull/12")
    # Commits link to the pin's upstream, which the config names.
    assert pin.pinned == Linked("a" * 40, f"https://github.com/{UPSTREAM}/commit/{'a' * 40}")
    assert pin.upstream_head is not None
    assert pin.upstream_head.href == f"https://github.com/{UPSTREAM}/commit/{'b' * 40}"
    [entry] = mine.entries
    assert (entry.row.pattern, entry.row.evidence, entry.row.date) == (
        "vllm_flash_attn/*.so",
        "stale",
        "2025-07-31",
    )
    assert [m.row for m in mine.migrations] == [MigrationRow("l4", 9, 4, "updated")]
    assert mine.migrations[0].pr == Linked("#9", f"https://github.com/{REPO}/pull/9")
    [red_row] = mine.red
    assert red_row.row == RedRow("ci/kernels", 41, 7, 8)
    assert red_row.since == Linked("build 41", "https://buildkite.com/vllm/ci/builds/41")
    assert red_row.issue == Linked("#7", f"https://github.com/{REPO}/issues/7")
    assert red_row.revert_pr == Linked("#8", f"https://github.com/{REPO}/pull/8")
    assert mine.flakiest == (FlakyStep("gpu", 2, 1, 1), FlakyStep("tp", 1, 0, 0))
    assert other.pins == ()
    assert other.red == ()
    assert other.flakiest == (FlakyStep("elsewhere", 1, 1, 0),)
    assert status.failures == ()
    # The activity: the served repositories' actions only, newest first.
    assert {row.repo for row in status.activity} == {REPO, OTHER}
    assert status.activity[0].at >= status.activity[-1].at


async def test_without_a_config_commits_and_builds_are_text(store: SQLiteStore) -> None:
    key = pin_key(REPO, "fa")
    await store.put_state(Kind.BUMP, key, PinState(pr=12, last_result="created").dump())
    snap = pin_snapshot(pinned="a" * 40, upstream_head="b" * 40, behind=1, oldest_unrolled_at=NOW)
    await store.put_state(Kind.DASHBOARD_PIN, key, snap)
    red = SignalDoc(state="broken", since=41)
    await store.put_state(Kind.MAIN_SIGNAL, signal_key(REPO, "ci", "kernels"), red.dump())

    [repo] = (await read_status(sources(store), (REPO,), now=NOW)).repos

    assert repo.pins[0].pinned == Linked("a" * 40, None)
    assert repo.red[0].since == Linked("build 41", None)
    assert repo.pins[0].pr == Linked("#12", f"https://github.com/{REPO}/pull/12")


async def test_pr_states_and_modes(store: SQLiteStore) -> None:
    """Merged by the bot (landing), merged by a human (pin current), closed, paused,
    waiting; the old reader showed a merged PR as '-'."""
    docs = {
        "landed": PinState(pr=1, last_result=Outcome.COOLDOWN.value),
        "human-merged": PinState(pr=2, last_result=Outcome.CURRENT.value),
        "closed": PinState(pr=3, last_result=Outcome.CLOSED.value),
        "paused": PinState(pr=4, last_result=Outcome.PAUSED.value),
        "merged-by-bot": PinState(pr=5, last_result=Outcome.UNCHANGED.value),
        "told": PinState(pr=6, last_result=Outcome.UPDATED.value),
    }
    for name, state in docs.items():
        await store.put_state(Kind.BUMP, pin_key(REPO, name), state.dump())
    await store.put_state(Kind.PIN_COOLDOWN, pin_key(REPO, "landed"), {"landed_at": NOW, "pr": 1})
    merged = LandingState(merged_sha="c" * 40)
    await store.put_state(Kind.LANDING, pr_key(REPO, 5), merged.dump())
    await store.put_state(Kind.PAUSE, pin_key(REPO, "told"), {"by": "someone", "at": NOW})

    [repo] = (await read_status(sources(store), (REPO,), now=NOW)).repos

    found = {pin.row.name: (pin.mode, pin.pr_state) for pin in repo.pins}
    assert found == {
        "landed": (WAITING, MERGED),
        "human-merged": (ACTIVE, MERGED),
        "closed": (ACTIVE, CLOSED),
        "paused": (PAUSED, OPEN),
        "merged-by-bot": (ACTIVE, MERGED),
        "told": (PAUSED, OPEN),
    }


async def test_an_entry_a_merged_bump_pruned_is_gone(store: SQLiteStore) -> None:
    evidence = {"gone/*.so": "stale", "pending/*.so": "stale", "kept/*.so": "unstable"}
    await record_allowlist_evidence(store, REPO, None, evidence, now=NOW)
    merged = PinState(pr=1, last_result=Outcome.CURRENT.value, prunes={"gone/*.so": []})
    pending = PinState(pr=2, last_result=Outcome.UPDATED.value, prunes={"pending/*.so": []})
    await store.put_state(Kind.BUMP, pin_key(REPO, "a"), merged.dump())
    await store.put_state(Kind.BUMP, pin_key(REPO, "b"), pending.dump())

    [repo] = (await read_status(sources(store), (REPO,), now=NOW)).repos

    shown = {entry.row.pattern: entry.prune for entry in repo.entries}
    assert shown == {
        "kept/*.so": None,
        "pending/*.so": Linked("#2", f"https://github.com/{REPO}/pull/2"),
    }


async def test_failed_deliveries_newest_first_with_their_reason(store: SQLiteStore) -> None:
    for n in (1, 2):
        delivery = Delivery(f"d{n}", "github", "push", b"{}", f"github:{n}", NOW + n)
        await store.enqueue(delivery)
        await store.fail(f"d{n}", "x" * (ERROR_SHOWN + 5) if n == 2 else "boom")
    await store.enqueue(Delivery("fine", "github", "push", b"{}", "github:3", NOW))

    status = await read_status(sources(store), (), now=NOW)

    assert [f.delivery_id for f in status.failures] == ["d2", "d1"]
    assert len(status.failures[0].error) == ERROR_SHOWN  # a traceback is cut short
    assert status.failures[1] == FailureRow("d1", "github", "push", "github:1", NOW + 1, 0, "boom")


async def test_the_service_section(store: SQLiteStore) -> None:
    await store.enqueue(Delivery("reconcile:o/r:1", "internal", "t", b"{}", "s", NOW - 60))
    await store.enqueue(Delivery("push-1", "github", "push", b"{}", "github:1", NOW - 30))
    limits = {"github": 4999.0}

    status = await read_status(StatusSources(store, rate_limits=limits), (), now=NOW)

    service = status.service
    assert service is not None
    assert service.replicas is None  # SQLite: one process
    assert (service.queued, service.running, service.oldest_queued_at) == (2, 0, NOW - 60)
    assert (service.last_tick_at, service.last_tick_status) == (NOW - 60, "queued")
    assert service.rate_limits == (("github", 4999.0),)


async def test_nothing_recorded_reads_empty(store: SQLiteStore) -> None:
    status = await read_status(sources(store), (REPO,), now=NOW)
    [repo] = status.repos
    assert (repo.pins, repo.entries, repo.migrations, repo.red, repo.flakiest) == ((),) * 5
    assert status.activity == ()
    assert status.service is not None
    assert status.service.last_tick_at is None


def test_the_sources_of_a_running_service() -> None:
    metrics = Metrics()
    assert rate_limit_headroom(metrics) == {}
    metrics.response("github", 200, {"X-RateLimit-Remaining": "4321"})
    metrics.response("buildkite", 200, {"RateLimit-Remaining": "180"})
    assert rate_limit_headroom(metrics) == {"github": 4321.0, "buildkite": 180.0}
    cache = {("config-at", REPO, "f" * 40): CONFIG, ("other", REPO, "x"): 1, "plain": CONFIG}
    assert known_configs(cache) == {REPO: CONFIG}

    class Services:  # the two fields ``sources_of`` reads beside the store
        store = None
        metrics = Metrics()

    Services.cache = cache  # type: ignore[attr-defined]
    found = sources_of(Services)  # type: ignore[arg-type]
    assert found.configs == {REPO: CONFIG}
    assert found.rate_limits == {}
