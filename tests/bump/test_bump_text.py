from __future__ import annotations

from typing import Any

import pytest

from bot.config.models import PinConfig
from bot.pins import text as bump_text
from bot.pins.text import UpstreamCommit

OLD = "a" * 40
NEW = "b" * 40
WEB = "https://github.com/vllm-project/flash-attention"
PIN = PinConfig(
    name="flash-attention",
    upstream="vllm-project/flash-attention",
    file="cmake/external_projects/vllm_flash_attn.cmake",
    dependency="vllm-flash-attn",
)


def commit(n: int, subject: str = "") -> UpstreamCommit:
    sha = f"{n:040x}"
    return UpstreamCommit(
        sha=sha,
        date=f"2026-08-0{n % 9 + 1}",
        author=f"dev{n}",
        subject=subject or f"Change {n} (#{100 + n})",
        html_url=f"{WEB}/commit/{sha}",
    )


def render(commits: list[UpstreamCommit], total: int | None = None) -> bump_text.BumpText:
    return bump_text.render(
        pin=PIN,
        old=OLD,
        new=NEW,
        total_commits=len(commits) if total is None else total,
        commits=commits,
        compare_url=f"{WEB}/compare/{OLD}...{NEW}",
    )


def test_title_names_pin_short_shas_and_count() -> None:
    assert render([commit(1)]).title == "Bump flash-attention from aaaaaaa to bbbbbbb (1 commit)"
    assert render([commit(1), commit(2)]).title.endswith("(2 commits)")


def test_body_lists_commits_newest_first_with_upstream_pr_links() -> None:
    body = render([commit(1), commit(2)]).body
    first, second = body.index("Change 2"), body.index("Change 1")
    assert first < second
    assert f"([#102]({WEB}/pull/102))" in body
    assert "(#102)" not in body  # a bare #N would link to the downstream repo


def test_body_without_pr_number_links_the_commit() -> None:
    body = render([commit(3, subject="Direct push to main")]).body
    assert f"[`{commit(3).sha[:7]}`]({commit(3).html_url})" in body


def test_body_truncates_after_fifty_with_compare_link() -> None:
    commits = [commit(n) for n in range(1, 61)]
    body = render(commits, total=75).body
    lines = [line for line in body.splitlines() if line.startswith("- 2026")]
    assert len(lines) == bump_text.MAX_LISTED_COMMITS
    assert "Change 60 " in lines[0]
    assert f"- … and 25 more: [full comparison]({WEB}/compare/{OLD}...{NEW})" in body


def test_body_has_controls_revert_advice_and_marker() -> None:
    body = render([commit(1)]).body
    assert "If this bump breaks main, revert it and pause the bot for this pin" in body
    assert "Push to this branch" in body
    assert body.endswith(bump_text.MARKER.format(pin="flash-attention", target=NEW))


def test_mentions_do_not_ping_upstream_authors() -> None:
    body = render([commit(1, subject="Thanks @alice for the fix")]).body
    assert "@alice" not in body
    assert "@\N{WORD JOINER}alice" in body


def test_commit_message_has_trailers_that_parse_back() -> None:
    message = render([commit(1)]).commit_message
    assert bump_text.commit_trailers(message) == {
        bump_text.TRAILER_PIN: "flash-attention",
        bump_text.TRAILER_FROM: OLD,
        bump_text.TRAILER_TARGET: NEW,
    }


@pytest.mark.parametrize(
    ("title", "target"),
    [
        ("Bump x from aaaaaaa to bbbbbbb (3 commits)", "bbbbbbb"),
        ("Bump x from aaaaaaa to bbbbbbb (1 commit)", "bbbbbbb"),
        ("Some human title", None),
    ],
)
def test_title_target(title: str, target: str | None) -> None:
    assert bump_text.title_target(title) == target


def test_parse_compare_commits_prefers_login_and_first_line() -> None:
    item: dict[str, Any] = {
        "sha": NEW,
        "html_url": f"{WEB}/commit/{NEW}",
        "author": {"login": "octocat"},
        "commit": {
            "author": {"name": "Mona", "date": "2026-08-06T10:00:00Z"},
            "message": "Subject (#7)\n\nbody",
        },
    }
    no_login = {**item, "author": None}
    parsed = bump_text.parse_compare_commits([item, no_login])
    assert parsed[0] == UpstreamCommit(
        NEW, "2026-08-06", "octocat", "Subject (#7)", item["html_url"]
    )
    assert parsed[1].author == "Mona"


def test_repo_web_url() -> None:
    assert bump_text.repo_web_url(f"{WEB}/commit/{NEW}") == WEB


NOTES = "https://github.com/NVIDIA/cutlass/releases/tag/v4.5.0"


def test_late_release_notes_go_where_render_puts_them() -> None:
    without = render([commit(1)]).body
    with_notes = bump_text.render(
        pin=PIN,
        old=OLD,
        new=NEW,
        total_commits=1,
        commits=[commit(1)],
        compare_url=f"{WEB}/compare/{OLD}...{NEW}",
        release_url=NOTES,
    ).body
    assert bump_text.with_release_notes(without, NOTES) == with_notes
    assert bump_text.with_release_notes(with_notes, NOTES) is None  # linked already


def test_late_release_notes_touch_only_the_intro() -> None:
    body = "Bumps it by hand.\n\n- a subject with ([compare](x)) in it"
    assert bump_text.with_release_notes(body, NOTES) is None  # a human rewrote the intro
    listed = render([commit(1, subject="Add [release notes](y) to the docs")]).body
    added = bump_text.with_release_notes(listed, NOTES)
    assert added is not None
    assert added.count(f"[release notes]({NOTES})") == 1
