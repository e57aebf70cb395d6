"""collect(): the dashboard's data from a real SQLite store holding the bot's documents."""

from __future__ import annotations

import pytest

from bot.config.errors import ConfigError
from bot.config.models import RepoConfig
from bot.config.parse import parse_repo_config
from bot.dashboard.flow import (
    EntryRow,
    PinRow,
    collect,
    pin_snapshot,
    record_allowlist_evidence,
    render,
)
from bot.pins.state import PinState
from bot.store.kinds import Kind, pin_key
from bot.store.sqlite import SQLiteStore

REPO = "acme/widgets"
OTHER = "acme/gadgets"
NOW = 1_800_000_000.0
DAY = 86400.0
SHA_PINNED = "1" * 40
SHA_HEAD = "2" * 40

CONFIG = """\
pins:
  - name: flash-attention
    upstream: vllm-project/flash-attention
    file: cmake/fa.cmake
    dependency: vllm-flash-attn
    owns: ["vllm_flash_attn/*"]
  - name: deepgemm
    upstream: deepseek-ai/DeepGEMM
    file: cmake/deepgemm.cmake
    dependency: deepgemm
    owns: ["third_party/deep_gemm/*"]
    paused: true
"""


@pytest.fixture
def config() -> RepoConfig:
    return parse_repo_config(CONFIG)


async def put_bump(store: SQLiteStore, repo: str, pin: str, state: PinState) -> None:
    state.extra["updated_at"] = NOW - 60  # as sync_pin records it
    await store.put_state(Kind.BUMP, pin_key(repo, pin), state.dump())


def retry_job(repo: str, pr: int, step: str, at: float, outcome: str | None) -> dict[str, object]:
    """A `retry-job` record as retry_flow writes it."""
    return {
        "repo": repo,
        "pr": pr,
        "original_job_id": "old",
        "step_key": step,
        "name": f":nvidia: {step}",
        "class": "flaky",
        "rule": "nccl-timeout",
        "evidence": "NCCL timeout",
        "requested_by": "alice",
        "reason": "looks like the NCCL hang",
        "forced": False,
        "build": "vllm/ci/12",
        "outcome": outcome,
        "at": at,
    }


async def test_an_empty_store(store: SQLiteStore, config: RepoConfig) -> None:
    data = await collect(store, REPO, config, now=NOW)
    assert data.config_errors == ()
    assert data.entries == ()
    assert data.retries == ()
    assert data.pins == (
        PinRow("deepgemm", None, None, None, None, None, None, True, None, "branch main"),
        PinRow("flash-attention", None, None, None, None, None, None, False, None, "branch main"),
    )


async def test_pins_from_bump_and_snapshot_documents(
    store: SQLiteStore, config: RepoConfig
) -> None:
    await put_bump(
        store,
        REPO,
        "flash-attention",
        PinState(head="c" * 40, target=SHA_HEAD, pr=41, last_result="updated"),
    )
    await store.put_state(
        Kind.DASHBOARD_PIN,
        pin_key(REPO, "flash-attention"),
        pin_snapshot(
            pinned=SHA_PINNED,
            upstream_head=SHA_HEAD,
            behind=4,
            oldest_unrolled_at=NOW - 3 * DAY,
            pr_state="open, CI running",
        ),
    )
    failure = "pinned 1111111 is not an ancestor of vllm-project/flash-attention@main"
    await put_bump(store, REPO, "deepgemm", PinState(last_result="failed", last_failure=failure))
    # The same pin name in another repository must not leak in.
    await put_bump(store, OTHER, "flash-attention", PinState(pr=999, last_result="created"))

    data = await collect(store, REPO, config, now=NOW)
    assert data.pins == (
        PinRow("deepgemm", None, None, None, None, None, None, True, failure, "branch main"),
        PinRow(
            "flash-attention",
            SHA_PINNED,
            SHA_HEAD,
            4,
            3.0,
            41,
            "open, CI running",
            False,
            None,
            "branch main",
        ),
    )


@pytest.mark.parametrize(
    ("outcome", "shown"),
    [
        ("created", "open"),
        ("human-owned", "open, human commits"),
        ("closed", "closed, pin current"),
        ("skipped", "closed by a human"),
        ("failed", None),
    ],
)
async def test_pr_state_falls_back_to_the_last_bump_outcome(
    store: SQLiteStore, config: RepoConfig, outcome: str, shown: str | None
) -> None:
    await put_bump(store, REPO, "flash-attention", PinState(pr=41, last_result=outcome))
    data = await collect(store, REPO, config, now=NOW)
    assert next(p for p in data.pins if p.name == "flash-attention").pr_state == shown


async def test_a_current_pin_has_no_unrolled_age(store: SQLiteStore, config: RepoConfig) -> None:
    snapshot = pin_snapshot(
        pinned=SHA_HEAD, upstream_head=SHA_HEAD, behind=0, oldest_unrolled_at=NOW - DAY
    )
    assert snapshot["oldest_unrolled_at"] is None
    await store.put_state(Kind.DASHBOARD_PIN, pin_key(REPO, "flash-attention"), snapshot)
    row = next(p for p in (await collect(store, REPO, config, now=NOW)).pins if p.behind == 0)
    assert row.oldest_unrolled_age_days is None


async def test_a_broken_config_shows_its_errors_and_the_last_known_pins(
    store: SQLiteStore,
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_repo_config("pins:\n  - name: fa\n")
    # load_config records exactly this document.
    await store.put_state(Kind.CONFIG, REPO, {"error": str(caught.value)})
    await put_bump(store, REPO, "fa", PinState(pr=3, last_result="paused"))
    await store.put_state(
        Kind.DASHBOARD_PIN,
        pin_key(REPO, "gone"),
        pin_snapshot(pinned=SHA_PINNED, upstream_head=SHA_HEAD, behind=1, oldest_unrolled_at=NOW),
    )
    await put_bump(store, OTHER, "elsewhere", PinState())

    data = await collect(store, REPO, None, now=NOW)
    assert data.config_errors == tuple(str(p) for p in caught.value.problems)
    assert len(data.config_errors) >= 2
    assert [(p.name, p.paused, p.pr) for p in data.pins] == [("fa", True, 3), ("gone", False, None)]
    body = render(data, handle="bot")
    assert body.index(data.config_errors[0]) < body.index("| fa |")


async def test_allowlist_evidence_is_recorded_merged_and_forgotten(
    store: SQLiteStore, config: RepoConfig
) -> None:
    await record_allowlist_evidence(
        store,
        REPO,
        config,
        {"vllm_flash_attn/_C.abi3.so": "stale", "_rocm_C.abi3.so": "not on this platform"},
        now=NOW - 2 * DAY,
    )
    await record_allowlist_evidence(
        store,
        REPO,
        config,
        {"third_party/deep_gemm/_C*.so": "unstable", "vllm_flash_attn/_C.abi3.so": "unstable"},
        now=NOW,
        gone=["_rocm_C.abi3.so"],
    )
    assert await store.get_state(Kind.DASHBOARD_ALLOWLIST, OTHER) is None
    data = await collect(store, REPO, config, now=NOW)
    assert data.entries == (
        EntryRow("third_party/deep_gemm/_C*.so", "deepgemm", "unstable", "2027-01-15"),
        EntryRow("vllm_flash_attn/_C.abi3.so", "flash-attention", "unstable", "2027-01-15"),
    )


async def test_allowlist_owner_from_config_when_the_document_has_none(
    store: SQLiteStore, config: RepoConfig
) -> None:
    await store.put_state(
        Kind.DASHBOARD_ALLOWLIST,
        REPO,
        {
            "vllm_flash_attn/*": {"evidence": "stale", "date": NOW - DAY, "owner": None},
            "_C.abi3.so": {"evidence": "stale", "date": "2027-01-01"},
        },
    )
    data = await collect(store, REPO, config, now=NOW)
    assert data.entries == (
        EntryRow("_C.abi3.so", None, "stale", "2027-01-01"),
        EntryRow("vllm_flash_attn/*", "flash-attention", "stale", "2027-01-14"),
    )
    without_config = await collect(store, REPO, None, now=NOW)
    assert without_config.entries[1].owner_pin is None


async def test_retries_of_this_repo_newest_first(store: SQLiteStore, config: RepoConfig) -> None:
    await store.put_state(
        Kind.RETRY_JOB, "job-b", retry_job(REPO, 7, "gpu-test", NOW - 10, "passed")
    )
    await store.put_state(Kind.RETRY_JOB, "job-a", retry_job(REPO, 8, "lora-test", NOW - 5, None))
    await store.put_state(Kind.RETRY_JOB, "job-c", retry_job(OTHER, 1, "gpu-test", NOW, "failed"))
    data = await collect(store, REPO, config, now=NOW)
    assert [(r.job_id, r.pr, r.step, r.outcome) for r in data.retries] == [
        ("job-a", 8, "lora-test", None),
        ("job-b", 7, "gpu-test", "passed"),
    ]
    first = data.retries[0]
    assert (first.job_class, first.rule, first.requested_by, first.reason) == (
        "flaky",
        "nccl-timeout",
        "alice",
        "looks like the NCCL hang",
    )
    assert "| lora-test | 1 | 0 | 0 |" in render(data, handle="bot")


async def test_same_store_same_day_same_body(store: SQLiteStore, config: RepoConfig) -> None:
    await store.put_state(
        Kind.DASHBOARD_PIN,
        pin_key(REPO, "flash-attention"),
        pin_snapshot(
            pinned=SHA_PINNED, upstream_head=SHA_HEAD, behind=2, oldest_unrolled_at=NOW - DAY
        ),
    )
    await store.put_state(Kind.RETRY_JOB, "j", retry_job(REPO, 7, "gpu-test", NOW - 10, "passed"))
    first = render(await collect(store, REPO, config, now=NOW), handle="bot")
    later = render(await collect(store, REPO, config, now=NOW + 3600), handle="bot")
    next_day = render(await collect(store, REPO, config, now=NOW + DAY), handle="bot")
    assert first == later
    assert first != next_day
