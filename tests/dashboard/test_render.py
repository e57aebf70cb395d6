"""The dashboard's markdown: exact for small cases, sorted, escaped, stable."""

from __future__ import annotations

from dataclasses import replace

from bot.dashboard.text import (
    HEADING_CONFIG_ERRORS,
    HEADING_FLAKIEST,
    HEADING_PINS,
    LESS_THAN_A_DAY,
    MARKER,
    RECENT_RETRIES,
    DashboardData,
    EntryRow,
    PinRow,
    RetryRow,
    render,
)

DAY = 86400.0
SHA_A = "a" * 40
SHA_B = "b" * 40

INTRO = (
    "What followup-bot knows about this repository's pins, allowlist entries and "
    "retries. The bot compares this issue with what it knows on every reconcile tick "
    "and rewrites it when they differ, so an edit by hand is undone at the next tick. "
    "Comment `@bot help` on a bump PR for the commands."
)


def pin(name: str = "flash-attention", **changes: object) -> PinRow:
    row = PinRow(
        name=name,
        pinned=SHA_A,
        upstream_head=SHA_B,
        behind=3,
        oldest_unrolled_age_days=2.6,
        pr=12,
        pr_state="open",
        paused=False,
        last_failure=None,
        follows="branch main",
    )
    return replace(row, **changes)  # type: ignore[arg-type]


def retry(job_id: str, at: float, **changes: object) -> RetryRow:
    row = RetryRow(
        job_id=job_id,
        pr=7,
        step="gpu-test",
        job_class="flaky",
        rule="nccl-timeout",
        outcome="passed",
        requested_by="alice",
        reason=None,
        at=at,
    )
    return replace(row, **changes)  # type: ignore[arg-type]


def pin_line(body: str, name: str) -> str:
    return next(line for line in body.splitlines() if line.startswith(f"| {name} |"))


def test_empty_data_exactly() -> None:
    assert render(DashboardData(repo="acme/widgets"), handle="bot") == (
        f"{INTRO}\n\n"
        "## Pins\n\nNo pins configured.\n\n"
        "## Allowlist entries\n\nNo allowlist evidence recorded yet.\n\n"
        "## Recent retry-flaky decisions\n\nNo retries recorded yet.\n\n"
        f"{MARKER}\n"
    )


def test_one_of_each_exactly() -> None:
    data = DashboardData(
        repo="acme/widgets",
        pins=(pin(),),
        entries=(EntryRow("vllm_flash_attn/*", "flash-attention", "stale", "2026-12-01"),),
        retries=(retry("j1", 1_800_000_000.0),),
    )
    assert render(data, handle="bot") == (
        f"{INTRO}\n\n"
        "## Pins\n\n"
        "| pin | follows | pinned | kept in sync | upstream head | behind "
        "| oldest unrolled commit | bump PR | paused | last failure |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
        "| flash-attention | `branch main` | `aaaaaaa` | - | `bbbbbbb` | 3 | 2 days "
        "| #12 (open) | no | - |\n\n"
        "## Allowlist entries\n\n"
        "| entry | owning pin | last evidence | date |\n"
        "|---|---|---|---|\n"
        "| `vllm_flash_attn/*` | flash-attention | stale | 2026-12-01 |\n\n"
        "## Recent retry-flaky decisions\n\n"
        "| date | PR | step | class | rule | outcome | asked by | reason |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| 2027-01-15 | #7 | `gpu-test` | flaky | nccl-timeout | passed | @alice | - |\n\n"
        "## Flakiest steps\n\n"
        "| step | retries | passed on retry | failed again |\n"
        "|---|---|---|---|\n"
        "| gpu-test | 1 | 1 | 0 |\n\n"
        "| rule or class | retries | passed on retry |\n"
        "|---|---|---|\n"
        "| nccl-timeout | 1 | 1 |\n\n"
        f"{MARKER}\n"
    )


def test_a_tag_pin_shows_whole_tags_and_its_files_kept_in_sync() -> None:
    row = pin(
        "deepgemm",
        pinned="v4.10.12",
        upstream_head="v4.11.0",
        follows="tags v*",
        companions=(
            ("tools/install_deepgemm.sh", None),
            ("docker/Dockerfile", "holds 'v4.9.0'"),
        ),
    )
    line = pin_line(render(DashboardData(repo="a/b", pins=(row,)), handle="bot"), "deepgemm")
    assert line.startswith(
        "| deepgemm | `tags v*` | `v4.10.12` | tools/install_deepgemm.sh ✓; "
        "docker/Dockerfile ✗ (holds 'v4.9.0') | `v4.11.0` |"
    )


def test_without_a_config_what_a_pin_follows_is_unknown() -> None:
    line = pin_line(
        render(DashboardData(repo="a/b", pins=(pin(follows=None),)), handle="bot"),
        "flash-attention",
    )
    assert line.startswith("| flash-attention | ? | `aaaaaaa` | - |")


def test_config_errors_come_first() -> None:
    errors = (
        ".github/followup-bot.yml:3:5: pins.0.name: not a valid pin name",
        ".github/followup-bot.yml:9:3: retry.max_failed_jobs: must be at least 1",
    )
    body = render(DashboardData(repo="a/b", config_errors=errors, pins=(pin(),)), handle="bot")
    assert body.index(HEADING_CONFIG_ERRORS) < body.index(HEADING_PINS)
    assert f"```text\n{errors[0]}\n{errors[1]}\n```" in body
    assert HEADING_CONFIG_ERRORS not in render(DashboardData(repo="a/b"), handle="bot")


def test_handle_is_the_configured_one() -> None:
    assert "`@ci-bot help`" in render(DashboardData(repo="a/b"), handle="ci-bot")


def test_rows_are_sorted_whatever_the_input_order() -> None:
    pins = (pin("zeta"), pin("alpha"), pin("mid"))
    entries = (EntryRow("z/*", None, None, None), EntryRow("a/*", None, None, None))
    body = render(DashboardData(repo="a/b", pins=pins, entries=entries), handle="bot")
    assert body.index("| alpha |") < body.index("| mid |") < body.index("| zeta |")
    assert body.index("`a/*`") < body.index("`z/*`")
    shuffled = DashboardData(repo="a/b", pins=pins[::-1], entries=entries[::-1])
    assert render(shuffled, handle="bot") == body


def test_unknown_and_current_pins() -> None:
    unknown = pin(
        "unknown",
        pinned=None,
        upstream_head=None,
        behind=None,
        oldest_unrolled_age_days=None,
        pr=None,
        pr_state=None,
    )
    current = pin("current", behind=0, oldest_unrolled_age_days=None, pr=None)
    body = render(DashboardData(repo="a/b", pins=(unknown, current)), handle="bot")
    assert pin_line(body, "unknown") == (
        "| unknown | `branch main` | ? | - | ? | ? | ? | - | no | - |"
    )
    assert pin_line(body, "current") == (
        "| current | `branch main` | `aaaaaaa` | - | `bbbbbbb` | 0 | - | - | no | - |"
    )


def test_ages_are_whole_days() -> None:
    ages = {0.4: LESS_THAN_A_DAY, 1.99: "1 day", 9.0: "9 days", -0.1: LESS_THAN_A_DAY}
    for days, shown in ages.items():
        body = render(
            DashboardData(repo="a/b", pins=(pin(oldest_unrolled_age_days=days),)), handle="bot"
        )
        assert f"| 3 | {shown} |" in pin_line(body, "flash-attention")


def test_same_day_renders_the_same_body() -> None:
    # The body is compared to decide on an edit: hours passing must not change it.
    morning = DashboardData(repo="a/b", pins=(pin(oldest_unrolled_age_days=2.1),))
    evening = DashboardData(repo="a/b", pins=(pin(oldest_unrolled_age_days=2.9),))
    tomorrow = DashboardData(repo="a/b", pins=(pin(oldest_unrolled_age_days=3.1),))
    assert render(morning, handle="bot") == render(evening, handle="bot")
    assert render(morning, handle="bot") != render(tomorrow, handle="bot")


def test_paused_pr_state_and_failure_with_table_breaking_text() -> None:
    row = pin(
        paused=True,
        pr_state="closed by a human",
        last_failure="pinned abc | not an ancestor\nof upstream",
    )
    line = pin_line(render(DashboardData(repo="a/b", pins=(row,)), handle="bot"), row.name)
    assert line.endswith(
        "| #12 (closed by a human) | yes | pinned abc \\| not an ancestor of upstream |"
    )


def test_a_backtick_cannot_break_out_of_a_code_span() -> None:
    body = render(
        DashboardData(repo="a/b", entries=(EntryRow("a`b|c", None, None, None),)), handle="bot"
    )
    assert "| `a'b\\|c` | - | - | - |" in body


def test_only_recent_retries_are_listed_but_all_count_as_flaky_history() -> None:
    retries = tuple(
        retry(f"j{n:02d}", 1_800_000_000.0 - n * 3600, pr=100 + n)
        for n in range(RECENT_RETRIES + 3)
    )
    body = render(DashboardData(repo="a/b", retries=retries), handle="bot")
    assert f"| #{100 + RECENT_RETRIES - 1} |" in body
    assert f"| #{100 + RECENT_RETRIES} |" not in body
    flakiest = body[body.index(HEADING_FLAKIEST) :]
    total = RECENT_RETRIES + 3
    assert f"| gpu-test | {total} | {total} | 0 |" in flakiest


def test_a_running_retry_and_missing_fields() -> None:
    row = retry("j1", 0.0, pr=None, job_class=None, rule=None, outcome=None, requested_by=None)
    body = render(DashboardData(repo="a/b", retries=(row,)), handle="bot")
    assert "| 1970-01-01 | - | `gpu-test` | - | - | running | - | - |" in body
