"""The pure decisions of landing: paths, code owners, heads, attempts, cooldown."""

from __future__ import annotations

import pytest

from bot.landing.checks import blocked_build_is_green, is_blocked
from bot.landing.rules import (
    MAX_LANDING_ATTEMPTS,
    OwnerRule,
    approved_at_head,
    in_cooldown,
    is_user_owner,
    may_retry,
    owners_of,
    parse_codeowners,
    path_matches,
    paths_not_owned_by,
    paths_outside,
    touched_paths,
)

LANDING_GLOBS = ("cmake/**", ".buildkite/check-torch-abi.py")
HEAD = "a" * 40


@pytest.mark.parametrize(
    ("path", "glob", "expected"),
    [
        ("cmake/external_projects/vllm_flash_attn.cmake", "cmake/**", True),
        ("cmake/utils.cmake", "cmake/**", True),
        ("cmakefile", "cmake/**", False),
        ("vllm/cmake/x.cmake", "cmake/**", False),
        ("cmake/a/b/c.cmake", "cmake/*", False),
        ("cmake/c.cmake", "cmake/*", True),
        ("a/b/c.cmake", "**/*.cmake", True),
        ("c.cmake", "**/*.cmake", True),
        ("c.cmake.bak", "**/*.cmake", False),
        (".buildkite/check-torch-abi.py", ".buildkite/check-torch-abi.py", True),
        (".buildkite/check-torch-abixpy", ".buildkite/check-torch-abi.py", False),
        ("cmake/v1.cmake", "cmake/v?.cmake", True),
        ("cmake/v12.cmake", "cmake/v?.cmake", False),
        ("cmake/a.cmake", "cmake/[ab].cmake", True),
        ("cmake/c.cmake", "cmake/[!ab].cmake", True),
        ("cmake/a.cmake", "cmake/[!ab].cmake", False),
        ("docs/x/y.md", "docs/**/y.md", True),
        ("docs/y.md", "docs/**/y.md", True),
    ],
)
def test_landing_globs(path: str, glob: str, expected: bool) -> None:
    assert path_matches(path, glob) is expected


def test_paths_outside_lists_only_the_disallowed_ones_sorted_once() -> None:
    paths = ["vllm/model.py", "cmake/fa.cmake", "README.md", "vllm/model.py"]
    assert paths_outside(paths, LANDING_GLOBS) == ["README.md", "vllm/model.py"]
    assert paths_outside(["cmake/fa.cmake"], LANDING_GLOBS) == []
    assert paths_outside(["cmake/fa.cmake"], ()) == ["cmake/fa.cmake"]


def test_a_rename_touches_both_names() -> None:
    files = [
        {"filename": "cmake/new.cmake", "previous_filename": "vllm/old.cmake"},
        {"filename": "cmake/fa.cmake"},
    ]
    assert touched_paths(files) == ["cmake/fa.cmake", "cmake/new.cmake", "vllm/old.cmake"]
    assert paths_outside(touched_paths(files), LANDING_GLOBS) == ["vllm/old.cmake"]


CODEOWNERS = """\
# vLLM-like owners
*                   @everyone-fallback
/cmake              @tlrmchlsmth @LucasWilkinson
/.buildkite/        @khluu @simon-mo   # CI owners
docs/*              @docs-writer
*.md                @vllm-project/docs-team
apps/               @apps-owner
/orphaned/
"""


@pytest.mark.parametrize(
    ("path", "owners"),
    [
        ("cmake/external_projects/fa.cmake", ("@tlrmchlsmth", "@LucasWilkinson")),
        (".buildkite/check-torch-abi.py", ("@khluu", "@simon-mo")),
        ("vllm/model.py", ("@everyone-fallback",)),
        ("docs/intro.rst", ("@docs-writer",)),
        ("docs/deep/page.rst", ("@everyone-fallback",)),  # docs/* is one level only
        ("cmake/README.md", ("@vllm-project/docs-team",)),  # the last match wins
        ("src/apps/main.c", ("@apps-owner",)),  # unanchored directory: any depth
        ("apps", ("@everyone-fallback",)),  # a trailing slash names a directory only
        ("orphaned/x.py", ()),  # explicitly unowned
    ],
)
def test_codeowners_last_matching_rule_wins(path: str, owners: tuple[str, ...]) -> None:
    assert owners_of(path, parse_codeowners(CODEOWNERS)) == owners


def test_codeowners_parsing_skips_comments_and_blank_lines() -> None:
    rules = parse_codeowners(CODEOWNERS)
    assert rules[2] == OwnerRule("/.buildkite/", ("@khluu", "@simon-mo"))
    assert len(rules) == 7
    assert owners_of("x", []) == ()


def test_only_users_count_as_owners_case_insensitively() -> None:
    owners = ("@Tlrmchlsmth", "@vllm-project/ci", "ci@example.com")
    assert is_user_owner("tlrmchlsmth", owners)
    assert not is_user_owner("ci", owners)  # a team never counts
    assert not is_user_owner("vllm-project", owners)
    assert not is_user_owner("ci@example.com", owners)


def test_a_code_owner_must_own_every_touched_path() -> None:
    rules = parse_codeowners(CODEOWNERS)
    paths = ["cmake/fa.cmake", ".buildkite/check-torch-abi.py"]
    assert paths_not_owned_by("khluu", paths, rules) == ["cmake/fa.cmake"]
    assert paths_not_owned_by("LucasWilkinson", ["cmake/fa.cmake"], rules) == []
    assert paths_not_owned_by("anyone", ["orphaned/x.py"], rules) == ["orphaned/x.py"]


@pytest.mark.parametrize(
    ("commit_id", "expected"),
    [(HEAD, True), ("b" * 40, False), (None, False), ("", False), (HEAD[:7], False)],
)
def test_an_approval_counts_only_at_the_current_head(commit_id: object, expected: bool) -> None:
    assert approved_at_head(commit_id, HEAD) is expected


def test_a_head_gets_three_attempts() -> None:
    assert MAX_LANDING_ATTEMPTS == 3
    assert [may_retry(runs) for runs in range(5)] == [True, True, True, False, False]
    assert may_retry(1, max_attempts=1) is False


@pytest.mark.parametrize(
    ("doc", "now", "expected"),
    [
        (None, 1000.0, False),
        ({}, 1000.0, False),
        ({"landed_at": 1000.0}, 1000.0, True),
        ({"landed_at": 1000.0}, 1000.0 + 599, True),
        ({"landed_at": 1000.0}, 1000.0 + 600, False),
        ({"landed_at": 1000}, 1100.0, True),
        ({"landed_at": "1000"}, 1100.0, False),
        ({"landed_at": True}, 0.5, False),
        ({"pr": 3}, 1100.0, False),
    ],
)
def test_cooldown(doc: dict[str, object] | None, now: float, expected: bool) -> None:
    assert in_cooldown(doc, now, 10) is expected


def test_no_cooldown_with_zero_minutes() -> None:
    assert not in_cooldown({"landed_at": 1000.0}, 1000.0, 0)


def job(state: str, **extra: object) -> dict[str, object]:
    started = None if state in ("blocked", "waiting", "broken") else "2026-12-02T10:00:00Z"
    return {"type": "script", "state": state, "started_at": started, **extra}


BLOCKED = {"state": "blocked", "blocked": True}


def test_a_blocked_build_is_green_only_when_every_job_that_ran_passed() -> None:
    clean = {**BLOCKED, "jobs": [job("passed"), job("blocked")]}
    failed = {**BLOCKED, "jobs": [job("failed"), job("blocked")]}
    soft = {**BLOCKED, "jobs": [job("failed", soft_failed=True), job("blocked")]}
    assert blocked_build_is_green(clean, "green")
    assert not blocked_build_is_green(failed, "green")
    assert blocked_build_is_green(soft, "green")
    assert not blocked_build_is_green(clean, "wait")
    assert not blocked_build_is_green({"state": "passed", "jobs": []}, "green")
    assert is_blocked({"state": "passed", "blocked": True})  # the webhook's flag counts too
