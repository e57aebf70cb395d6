"""A real ``followup-bot serve`` killed between two writes finishes its own work.

For each write of the bump, retry-flaky and landing flows, a stand-in applies
the write and SIGKILLs the bot before it can answer; the restarted bot must
recognise its half-done work and roll it forward. Afterwards every effect is
there exactly once: one PR, each upstream target pushed once, one sticky
comment, each job retried once, one label set, one merge, and no "someone
else pushed" notice.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.allowlist.text import STALE_BRANCH
from bot.edit.allowlist import read_allowlist
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, PIPELINE, UPSTREAM
from tests.e2e.conftest import (
    ABI_CHECK_FILE,
    DEEP_GEMM,
    FA3,
    finish_audit_build,
    seed,
    seed_allowlist,
    stale_line,
)
from tests.e2e.crash_driver import ServedBot, WriteBoundary, buildkite, delivered, github
from tests.e2e.test_bump_faults import assert_exactly_once, branch_pushes
from tests.e2e.test_bump_flow import BRANCH, bump_pulls, merge_upstream
from tests.e2e.test_landing import (
    BUILDKITE,
    CI,
    LANDING,
    LOST_AGENT,
    MAINTAINER,
    PASSING,
    REAL,
    current,
    labels,
    merges,
    seed_landing,
)
from tests.e2e.test_main_red import (
    AUDIT_FAILURE,
    audit,
    finish_main_build,
    merge_migration,
    others,
    revert_pulls,
    seed_incident_a,
)
from tests.e2e.test_main_red import issues as red_issues
from tests.e2e.test_pin_commands import bot_replies
from tests.e2e.test_retry_flaky import INFRA, NEW, pr_build, retried, seed_pr, sticky

CREATE_PHASE = ["git/create-tree", "git/create-commit", "git/create-ref"]
PR_PHASE = ["pulls/create"]
UPDATE_PHASE = ["git/update-ref", "pulls/update"]

Serve = Callable[[Harness], ServedBot]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Serve]:
    """Makes the test's served bot; its process ends with the test."""
    bots: list[ServedBot] = []

    def make(env: Harness) -> ServedBot:
        bots.append(ServedBot(env, tmp_path))
        return bots[-1]

    yield make
    for bot in bots:
        await bot.stop()


@pytest.mark.parametrize("operation", CREATE_PHASE + PR_PHASE + UPDATE_PHASE)
async def test_killed_between_bump_writes_rolls_forward(
    env: Harness, served: Serve, operation: str
) -> None:
    seed(env)
    bot = served(env)

    if operation in UPDATE_PHASE:
        await bot.run(lambda: merge_upstream(env, 1))
        newest = await bot.crash_on(github(operation), lambda: merge_upstream(env, 2))
        expected_pushes = 2
    else:
        newest = await bot.crash_on(github(operation), lambda: merge_upstream(env, 1))
        expected_pushes = 1

    assert_exactly_once(env, newest)
    assert len(branch_pushes(env)) == expected_pushes


@pytest.mark.parametrize(
    "boundary",
    [
        github("reactions/create-for-issue-comment"),
        buildkite("/retry"),
        github("issues/create-comment"),
    ],
    ids=str,
)
async def test_killed_between_retry_flaky_writes_rolls_forward(
    ci_env: Harness, served: Serve, boundary: WriteBoundary
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    bot = served(env)

    async def ask() -> None:
        env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot retry-flaky")
        await env.sandbox.flush()

    await bot.crash_on(boundary, ask)

    assert len(retried(env)) == 1
    assert "| infra |" in sticky(env, number)  # exactly one sticky comment
    assert env.sandbox.violations == []


async def _bump_pr(env: Harness, bot: ServedBot) -> dict[str, object]:
    await bot.run(
        lambda: env.sandbox.push_commit(UPSTREAM, {"csrc/a.cu": "// a\n"}, "Change (#171)")
    )
    [pull] = bump_pulls(env)
    return pull


async def _finish_build(env: Harness, number: int, *jobs: object) -> None:
    head = current(env, number)["head"]["sha"]
    build = env.ci.create_build(
        PIPELINE,
        commit=head,
        branch=BRANCH,
        jobs=list(jobs),  # type: ignore[arg-type]
        pull_request={"id": str(number), "base": "main", "repository": "x"},
    )
    await env.ci.finish_build(PIPELINE, int(build["number"]))
    await env.ci.flush()


async def _landing_bump(env: Harness, served: Serve) -> tuple[ServedBot, int]:
    """A served bot and its bump PR, in a repository set up for landing."""
    seed_landing(env, config=CONFIG + LANDING + BUILDKITE)
    bot = served(env)
    pull = await _bump_pr(env, bot)
    return bot, int(str(pull["number"]))


async def _approve(env: Harness, number: int) -> None:
    env.sandbox.submit_review(DOWNSTREAM, number, MAINTAINER)
    await env.sandbox.flush()


async def test_killed_after_the_labels_of_an_approval(ci_env: Harness, served: Serve) -> None:
    env = ci_env
    bot, number = await _landing_bump(env, served)

    await bot.crash_on(github("issues/add-labels"), lambda: _approve(env, number))
    assert labels(env, number) == ["ci-full", "ready"]

    env.sandbox.set_status(DOWNSTREAM, current(env, number)["head"]["sha"], "success", context=CI)
    await bot.run(lambda: _finish_build(env, number, PASSING))
    assert current(env, number)["merged"] is True
    assert merges(env) == [200]


async def test_killed_right_after_the_merge(ci_env: Harness, served: Serve) -> None:
    env = ci_env
    bot, number = await _landing_bump(env, served)
    env.sandbox.set_status(DOWNSTREAM, current(env, number)["head"]["sha"], "success", context=CI)

    await bot.run(lambda: _approve(env, number))
    await bot.crash_on(github("pulls/merge"), lambda: _finish_build(env, number, PASSING))

    assert current(env, number)["merged"] is True
    assert merges(env) == [502]  # the one merge, whose answer the dead bot never read


async def test_killed_right_after_a_landing_retry(ci_env: Harness, served: Serve) -> None:
    env = ci_env
    bot, number = await _landing_bump(env, served)

    await bot.run(lambda: _approve(env, number))
    await bot.crash_on(buildkite("/retry"), lambda: _finish_build(env, number, LOST_AGENT))

    retries = [r.path for r in env.ci.requests if r.method == "PUT"]
    assert len(retries) == 1
    assert [c for c in env.sandbox.comments(DOWNSTREAM, number)] == []  # not left to humans


@pytest.mark.parametrize(
    "boundary",
    [
        github("git/create-commit"),
        github("git/update-ref"),
        github("issues/create-comment"),
    ],
    ids=str,
)
async def test_killed_between_allowlist_prune_writes_rolls_forward(
    ci_env: Harness, served: Serve, boundary: WriteBoundary
) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    bot = served(env)
    [pull] = [await _bump_pr(env, bot)]
    number = int(str(pull["number"]))
    bumped = env.sandbox.head(DOWNSTREAM, BRANCH)

    await bot.crash_on(
        boundary,
        lambda: finish_audit_build(env, branch=BRANCH, commit=bumped, lines=(stale_line(FA3),)),
    )

    text = env.sandbox.read_file(DOWNSTREAM, BRANCH, ABI_CHECK_FILE) or ""
    assert read_allowlist(text).entries == (DEEP_GEMM,)
    pruned = env.sandbox.head(DOWNSTREAM, BRANCH)
    parents = env.sandbox.store.read_commit(DOWNSTREAM, pruned).parents
    assert parents == (bumped,)  # one prune commit on the bump, not two
    [comment] = env.sandbox.comments(DOWNSTREAM, number)  # the evidence, once
    assert stale_line(FA3) in comment["body"]
    assert "so the bot added" in comment["body"]  # pruned by the bot, not "suggested only"


ROUNDS = 40
UPDATE_WRITES = ["git/create-tree", "git/create-commit", *UPDATE_PHASE]


async def test_random_kills_over_many_mixed_deliveries(env: Harness, served: Serve) -> None:
    """Upstream merges and command comments, round after round, with the bot killed after
    a randomly chosen write in a third of the rounds (seeded): every merge ends in one
    push of its target, every comment in one reply."""
    rng = random.Random(8)
    seed(env)
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    bot = served(env)
    await bot.run(lambda: merge_upstream(env, 0))
    [pull] = bump_pulls(env)
    number = int(pull["number"])
    newest, kills, comments = "", 0, 0
    for n in range(1, ROUNDS + 1):

        async def act(n: int = n) -> str:
            if n % 2:
                env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot help")
            return await merge_upstream(env, n)

        comments += n % 2
        if rng.random() < 1 / 3:
            newest = await bot.crash_on(github(rng.choice(UPDATE_WRITES)), act)
            kills += 1
        else:
            newest = await bot.run(act)

    assert kills >= 5
    assert delivered(bot.database) >= 200  # webhooks and the bot's own fan-out, in all
    assert_exactly_once(env, newest)
    assert len(branch_pushes(env)) == ROUNDS + 1  # each upstream target pushed exactly once
    assert len(bot_replies(env, number)) == comments  # one reply per command comment


@pytest.mark.parametrize(
    "boundary",
    [github("git/create-commit"), github("git/create-ref"), github("pulls/create")],
    ids=str,
)
async def test_killed_between_stale_entries_pr_writes_rolls_forward(
    ci_env: Harness, served: Serve, boundary: WriteBoundary
) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    bot = served(env)
    main = env.sandbox.head(DOWNSTREAM, "main")

    await bot.crash_on(
        boundary,
        lambda: finish_audit_build(env, branch="main", commit=main, lines=(stale_line(FA3),)),
    )

    [pull] = [p for p in env.sandbox.pulls(DOWNSTREAM) if p["head"]["ref"] == STALE_BRANCH]
    assert pull["state"] == "open"
    text = env.sandbox.read_file(DOWNSTREAM, STALE_BRANCH, ABI_CHECK_FILE) or ""
    assert read_allowlist(text).entries == (DEEP_GEMM,)
    pushes = [
        d.delivery_id
        for d in env.sandbox.deliveries
        if d.event == "push" and d.payload.get("ref") == f"refs/heads/{STALE_BRANCH}"
    ]
    assert len(set(pushes)) == 1  # the branch was pushed once
    assert env.sandbox.comments(DOWNSTREAM, int(pull["number"])) == []

    # The PR is still the bot's: newer evidence updates it (a human's would be left alone).
    later = (stale_line(FA3, DEEP_GEMM),)
    await bot.run(lambda: finish_audit_build(env, branch="main", commit=main, lines=later))
    text = env.sandbox.read_file(DOWNSTREAM, STALE_BRANCH, ABI_CHECK_FILE) or ""
    assert read_allowlist(text).entries == ()


async def test_killed_after_the_landing_stop_comment(ci_env: Harness, served: Serve) -> None:
    env = ci_env
    bot, number = await _landing_bump(env, served)

    await bot.run(lambda: _approve(env, number))
    await bot.crash_on(github("issues/create-comment"), lambda: _finish_build(env, number, REAL))

    assert len(env.sandbox.comments(DOWNSTREAM, number)) == 1  # left to humans, said once
    assert current(env, number)["merged"] is False


@pytest.mark.parametrize("operation", ["issues/create-comment", "pulls/update"])
async def test_killed_while_closing_a_bump_that_is_no_longer_needed(
    env: Harness, served: Serve, operation: str
) -> None:
    seed(env)
    bot = served(env)
    newest = await bot.run(lambda: merge_upstream(env, 1))
    [pull] = bump_pulls(env)

    async def pin_by_hand() -> str:  # a maintainer bumps the pin on main themselves
        return await env.sandbox.push_commit(
            DOWNSTREAM, {PIN_FILE: PIN_TEMPLATE.format(sha=newest)}, "Bump FA by hand"
        )

    await bot.crash_on(github(operation), pin_by_hand)

    [closed] = bump_pulls(env)
    assert closed["state"] == "closed"
    assert len(env.sandbox.comments(DOWNSTREAM, int(pull["number"]))) == 1


async def _auto_merge_bump(env: Harness, served: Serve) -> tuple[ServedBot, int]:
    """A served bot and its bump PR in a repository that allows auto-merge, CI pending."""
    seed_landing(env, config=CONFIG + LANDING, auto_merge=True)
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI])
    bot = served(env)
    pull = await _bump_pr(env, bot)
    number = int(str(pull["number"]))
    env.sandbox.set_status(DOWNSTREAM, current(env, number)["head"]["sha"], "pending", context=CI)
    return bot, number


async def test_killed_right_after_enabling_auto_merge(env: Harness, served: Serve) -> None:
    bot, number = await _auto_merge_bump(env, served)

    await bot.crash_on(github("graphql"), lambda: _approve(env, number))

    assert current(env, number)["auto_merge"] is not None
    assert labels(env, number) == ["ci-full", "ready"]
    head = current(env, number)["head"]["sha"]
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await bot.run(env.sandbox.flush)
    assert current(env, number)["merged"] is True
    assert env.sandbox.comments(DOWNSTREAM, number) == []


async def test_killed_after_asking_for_re_approval(env: Harness, served: Serve) -> None:
    bot, number = await _auto_merge_bump(env, served)
    await bot.run(lambda: _approve(env, number))

    await bot.crash_on(github("issues/create-comment"), lambda: merge_upstream(env, 2))

    [comment] = env.sandbox.comments(DOWNSTREAM, number)  # asked once
    assert "approve" in comment["body"]
    assert current(env, number)["auto_merge"] is None
    assert current(env, number)["merged"] is False


RED_ON_MAIN_WRITES = [
    "git/create-commit",
    "git/create-ref",
    "pulls/create",
    "issues/create",
    "issues/update",
    "issues/create-comment",
]


@pytest.mark.parametrize("operation", RED_ON_MAIN_WRITES)
async def test_killed_between_red_on_main_writes_rolls_forward(
    ci_env: Harness, served: Serve, operation: str
) -> None:
    env = ci_env
    w = seed_incident_a(env)
    bot = served(env)
    await bot.run(lambda: finish_main_build(w, [audit("passed"), *others()]))
    culprit_pr, _culprit = await bot.run(lambda: merge_migration(w))
    red = [audit("failed", *AUDIT_FAILURE), *others()]
    await bot.run(lambda: finish_main_build(w, red))
    await bot.crash_on(github(operation), lambda: finish_main_build(w, red))

    [issue] = red_issues(env)
    [revert] = revert_pulls(env)
    assert f"#{revert['number']}" in issue["body"]
    assert len(w.comments({"number": culprit_pr})) == 1
    assert env.sandbox.violations == []
