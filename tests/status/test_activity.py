"""The recent activity and the links it carries, from state records alone (pure)."""

from __future__ import annotations

from bot.status import links
from bot.status.activity import activity, describe
from bot.status.model import ActivityRow, Linked
from bot.store.kinds import Kind
from bot.store.protocol import StateRecord

REPO = "o/r"
AT = 1_754_000_000.0
GH = f"https://github.com/{REPO}"


def row(kind: str, key: str, **doc: object) -> ActivityRow | None:
    return describe(StateRecord(kind, key, AT, dict(doc)))


def test_bumps() -> None:
    created = row(Kind.BUMP, f"{REPO}#fa", last_result="created", pr=12)
    assert created == ActivityRow(
        AT, REPO, "bump PR opened for fa", (Linked("#12", f"{GH}/pull/12"),)
    )
    failed = row(Kind.BUMP, f"{REPO}#fa", last_result="failed", pr=12, last_failure="no tag")
    assert failed == ActivityRow(AT, REPO, "bump of fa failed: no tag", ())
    assert row(Kind.BUMP, f"{REPO}#fa", last_result="unchanged", pr=12) is None
    no_pr = row(Kind.BUMP, f"{REPO}#fa", last_result="closed")
    assert no_pr is not None
    assert no_pr.links == ()


def test_landings() -> None:
    merged = row(Kind.LANDING, f"{REPO}#5", merged_sha="c" * 40, approved_by="m")
    assert merged is not None
    assert merged.what == "merged #5"
    assert merged.links == (
        Linked("#5", f"{GH}/pull/5"),
        Linked("ccccccc", f"{GH}/commit/{'c' * 40}"),
    )
    assert row(Kind.LANDING, f"{REPO}#5", stopped_for="h").what == "landing of #5 left to humans"  # type: ignore[union-attr]
    assert row(Kind.LANDING, f"{REPO}#5", auto_merge_for="h").what == "auto-merge enabled on #5"  # type: ignore[union-attr]
    assert row(Kind.LANDING, f"{REPO}#5", approved_by="m").what == "landing #5, approved by @m"  # type: ignore[union-attr]
    assert row(Kind.LANDING, f"{REPO}#5") is None
    assert row(Kind.LANDING, f"{REPO}#x", merged_sha="c") is None


def test_comments() -> None:
    marker = "<!-- followup-bot:already-current pin=fa -->"
    posted = row(Kind.POSTED_COMMENT, f"{REPO}#7#{marker}", pr=7, id=99)
    assert posted == ActivityRow(
        AT,
        REPO,
        "commented on #7 (already-current)",
        (Linked("#7", f"{GH}/issues/7#issuecomment-99"),),
    )
    pending = row(Kind.POSTED_COMMENT, f"{REPO}#7#plain", pending=True, pr=7)
    assert pending == ActivityRow(AT, REPO, "commenting on #7 (comment): not confirmed yet", ())
    assert row(Kind.POSTED_COMMENT, f"{REPO}#x#m") is None


def test_retries_link_the_build_and_the_job() -> None:
    job = "0190a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b"
    found = describe(
        StateRecord(Kind.RETRY_JOB, job, AT, {"repo": REPO, "pr": 3, "step_key": "gpu",
                                               "build": "vllm/ci/41", "outcome": "passed"})
    )  # fmt: skip
    build = "https://buildkite.com/vllm/ci/builds/41"
    assert found == ActivityRow(
        AT,
        REPO,
        "retried gpu on #3: passed",
        (Linked("#3", f"{GH}/pull/3"), Linked("build 41", build), Linked("job", f"{build}#{job}")),
    )
    running = describe(StateRecord(Kind.RETRY_JOB, "1", AT, {"repo": REPO, "pr": 3, "name": "n"}))
    assert running == ActivityRow(
        AT, REPO, "retried n on #3: running", (Linked("#3", f"{GH}/pull/3"),)
    )
    assert describe(StateRecord(Kind.RETRY_JOB, "1", AT, {"pr": 3})) is None


def test_main_migrations_stale_pr_and_dashboard() -> None:
    red = row(Kind.MAIN_SIGNAL, f"{REPO}#red/ci/kernels", state="broken", since=41, issue=7,
              revert_pr=8)  # fmt: skip
    assert red == ActivityRow(
        AT,
        REPO,
        "ci/kernels red on main since build 41",
        (Linked("#7", f"{GH}/issues/7"), Linked("#8", f"{GH}/pull/8")),
    )
    green = row(Kind.MAIN_SIGNAL, f"{REPO}#red/ci/kernels", state="green", closed=True, issue=7)
    assert green is not None
    assert green.what == "ci/kernels green again on main"
    unknown = row(Kind.MAIN_SIGNAL, f"{REPO}#red/ci/k", state="broken", revert_pr=8)
    assert unknown is not None
    assert unknown.what == "ci/k red on main since build ?"
    assert row(Kind.MAIN_SIGNAL, f"{REPO}#red/ci/k", state="broken") is None
    migration = row(Kind.MIGRATION, f"{REPO}#migrate/l4", pr=9, last_result="updated")
    assert migration == ActivityRow(
        AT, REPO, "migration l4: updated", (Linked("#9", f"{GH}/pull/9"),)
    )
    assert row(Kind.MIGRATION, f"{REPO}#migrate/l4", pr=9) is None
    stale = row(Kind.ALLOWLIST_STALE, REPO, pr=4)
    assert stale == ActivityRow(
        AT, REPO, "stale allowlist entries PR", (Linked("#4", f"{GH}/pull/4"),)
    )
    assert row(Kind.ALLOWLIST_STALE, REPO) is None
    dashboard = row(Kind.DASHBOARD, REPO, issue=2, hash="h")
    assert dashboard == ActivityRow(
        AT, REPO, "dashboard issue edited", (Linked("#2", f"{GH}/issues/2"),)
    )
    assert row(Kind.DASHBOARD, REPO) is None
    assert row(Kind.CONFIG, REPO, error="x") is None


def test_activity_keeps_the_served_repositories_up_to_the_limit() -> None:
    records = [
        StateRecord(Kind.DASHBOARD, repo, AT - n, {"issue": n})
        for n, repo in enumerate((REPO, "else/where", REPO, REPO))
    ]
    rows = activity(records, {REPO}, limit=2)
    assert [(r.repo, r.at) for r in rows] == [(REPO, AT), (REPO, AT - 2)]


def test_links_refuse_what_is_not_shaped_right() -> None:
    assert links.pull("not a repo", 1) is None
    assert links.pull(REPO, None) is None
    assert links.issue("a/b/c", 1) is None
    assert links.comment(REPO, 7, None) == f"{GH}/issues/7"
    assert links.comment("bad", 7, 1) is None
    assert links.commit(REPO, "v1.2.3") is None  # a tag is not a commit
    assert links.commit(None, "a" * 40) is None
    assert links.build("vllm", "ci", None) is None
    assert links.build("vllm", "../x", 1) is None
    assert links.build_key("vllm/ci/x") is None
    assert links.build_key("vllm/ci/7") == "https://buildkite.com/vllm/ci/builds/7"
    assert links.job(None, "abcdef12") is None
    assert links.job("https://buildkite.com/a/b/builds/1", "<x>") is None
