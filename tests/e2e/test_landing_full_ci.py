"""Landing only on the full CI: a build from before `ready` (vLLM's reduced pipeline, GPU
suites behind block steps) is no verdict; landing waits for, or starts, a full build."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from bot.landing import text as landing_text
from bot.landing.full_ci import ENV_MARKER
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind, pr_key
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.test_landing import (
    BRANCH,
    BUILDKITE,
    CI,
    LANDING,
    LOST_AGENT,
    MAINTAINER,
    PASSING,
    REAL,
    REPO_URL,
    approve,
    bodies,
    current,
    finished_build,
    graphql_calls,
    labels,
    merges,
    open_bump,
)

FASTCHECK = JobSpec("fastcheck", "Fastcheck")
GPU_SUITES = [JobSpec(f"gpu-{n}", f"GPU suite {n}", state="blocked") for n in range(10)]
START = LANDING.replace("}", ", start_full_build: true}")


def reduced_build(env: Harness, pull: dict[str, Any], *jobs: JobSpec, age: float = 120) -> int:
    """The build the PR got before `ready`: fastcheck, the GPU suites blocked; made
    ``age`` seconds ago."""
    build = env.ci.create_build(
        PIPELINE,
        commit=current(env, int(pull["number"]))["head"]["sha"],
        branch=BRANCH,
        jobs=list(jobs) or [FASTCHECK, *GPU_SUITES],
        pull_request={"id": str(pull["number"]), "base": "main", "repository": REPO_URL},
        created_at=time.time() - age,
    )
    return int(build["number"])


def created(env: Harness) -> list[int]:
    """The statuses of the bot's create-build calls."""
    return [r.status for r in env.ci.requests if r.route == "builds.create"]


async def landing_state(env: Harness, number: int) -> dict[str, Any]:
    doc = await env.running.services.store.get_state(Kind.LANDING, pr_key(DOWNSTREAM, number))
    assert doc is not None
    return doc


async def test_an_approval_over_the_reduced_build_waits_for_the_full_one_and_lands_on_it(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    reduced = reduced_build(env, pull)
    await env.ci.finish_build(PIPELINE, reduced)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()

    await approve(env, pull, MAINTAINER)

    assert labels(env, number) == ["ci-full", "ready"]
    assert merges(env) == []  # fastcheck alone lands nothing
    assert bodies(env, number) == []
    assert (await landing_state(env, number))["awaiting_full_build"] == head
    # the reduced build finishing again, or another status, changes nothing
    await env.ci.emit("build.finished", PIPELINE, reduced)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context="docs")
    await env.settle()
    assert merges(env) == []

    full = await finished_build(
        env, pull, FASTCHECK, *[dataclasses.replace(job, state="passed") for job in GPU_SUITES]
    )

    assert merges(env) == [200]
    assert current(env, number)["merged"] is True
    assert bodies(env, number) == []
    assert (await landing_state(env, number))["awaiting_full_build"] is None
    assert full == reduced + 1
    assert created(env) == []  # the pipeline started it: the bot did not
    assert env.sandbox.violations == []


async def test_auto_merge_waits_for_the_full_build_too(ci_env: Harness) -> None:
    """GitHub's auto-merge would merge on the reduced build's green status at once."""
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE, auto_merge=True)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI])
    await env.ci.finish_build(PIPELINE, reduced_build(env, pull))
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)

    await approve(env, pull, MAINTAINER)

    assert graphql_calls(env) == 0
    assert current(env, number)["auto_merge"] is None
    assert current(env, number)["merged"] is False

    await finished_build(env, pull, PASSING)
    assert current(env, number)["merged"] is True


async def test_the_blocked_note_names_the_full_build_it_judged(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await env.ci.finish_build(PIPELINE, reduced_build(env, pull))
    await approve(env, pull, MAINTAINER)
    assert merges(env) == []

    full = await finished_build(env, pull, FASTCHECK, PASSING, GPU_SUITES[0])

    assert current(env, number)["merged"] is True
    [note] = bodies(env, number)
    url = env.ci.build(PIPELINE, full)["web_url"]
    assert f"on [{PIPELINE} #{full}]({url}), created after `ready`, `ci-full` went on" in note
    assert f"- [{PIPELINE} #{full}]({url}): `GPU suite 0`" in note
    assert "GPU suite 1" not in note  # the reduced build's blocked suites are not the verdict


async def test_a_failed_reduced_build_is_neither_retried_nor_a_reason_to_stop(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await env.ci.finish_build(PIPELINE, reduced_build(env, pull, LOST_AGENT, REAL))

    await approve(env, pull, MAINTAINER)

    assert bodies(env, number) == []
    assert not any(r.method == "PUT" for r in env.ci.requests)
    await finished_build(env, pull, PASSING)
    assert current(env, number)["merged"] is True


async def test_builds_after_the_labels_count_even_before_the_approval(ci_env: Harness) -> None:
    """A PR that was `ready` before it was approved: its builds since then are full ones."""
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    for name in ("ready", "ci-full"):
        env.sandbox.label_pull(DOWNSTREAM, number, name, by=MAINTAINER, at=time.time() - 60)
    await env.settle()
    await env.ci.finish_build(PIPELINE, reduced_build(env, pull, REAL, age=30))

    await approve(env, pull, MAINTAINER)  # failed before: acted on now

    [body] = bodies(env, number)
    assert "Leaving this PR to humans" in body
    assert "[Models Llama]" in body


async def test_the_bot_starts_the_full_build_once_per_head_and_lands_on_it(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + START + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    env.ci.plan_builds(PIPELINE, [JobSpec("gpu", "GPU suite", state="running")])
    await env.ci.finish_build(PIPELINE, reduced_build(env, pull))

    await approve(env, pull, MAINTAINER)

    assert created(env) == [201]
    [started] = [b for b in env.ci.world.builds if b.source == "api"]
    assert (started.commit, started.branch) == (head, BRANCH)
    assert started.env == {ENV_MARKER: f"{DOWNSTREAM}#{number}@{head}"}
    assert started.pull_request is not None
    assert started.pull_request["id"] == str(number)
    assert merges(env) == []  # it is running
    state = await landing_state(env, number)
    assert state["started_builds"] == {f"{PIPELINE}@{head}": started.number}

    # a redelivered approval, a status and a tick start nothing more
    review = next(d for d in reversed(env.sandbox.deliveries) if d.event == "pull_request_review")
    await env.sandbox.deliver("pull_request_review", review.payload)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), time.time(), 300.0)
    await env.settle()
    assert created(env) == [201]

    # the bot's build is the verdict: a rebuild of it passing lands the PR
    await finished_build(env, pull, PASSING)
    assert current(env, number)["merged"] is True
    assert created(env) == [201]


async def test_a_started_build_whose_answer_was_lost_is_found_not_made_again(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + START + BUILDKITE)
    number = int(pull["number"])
    env.ci.faults.ghost_next(1, "/builds", method="POST")

    await approve(env, pull, MAINTAINER)

    assert created(env) == [502]  # made, its answer lost; found by its marker
    assert len([b for b in env.ci.world.builds if b.source == "api"]) == 1
    assert current(env, number)["merged"] is True  # the planned build passed at once
    assert bodies(env, number) == []


async def test_a_crash_between_the_create_and_its_record_starts_no_second_build(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + START + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    env.ci.plan_builds(PIPELINE, [JobSpec("gpu", "GPU suite", state="running")])
    await approve(env, pull, MAINTAINER)
    assert created(env) == [201]
    [started] = [b.number for b in env.ci.world.builds if b.source == "api"]

    # as if the bot died after the create, before it wrote the record down
    store = env.running.services.store
    state = await landing_state(env, number)
    await store.put_state(Kind.LANDING, pr_key(DOWNSTREAM, number), {**state, "started_builds": {}})
    # and `ready` was then taken off and put back: the bot's build no longer counts, and
    # only its marker tells the bot it made one for this head
    issue = env.sandbox.repo(DOWNSTREAM).issues[number]
    issue.labels = [label for label in issue.labels if label.name != "ready"]
    env.sandbox.label_pull(DOWNSTREAM, number, "ready", by=MAINTAINER, at=time.time() + 5)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()

    assert created(env) == [201]
    assert (await landing_state(env, number))["started_builds"] == {f"{PIPELINE}@{head}": started}
    assert merges(env) == []


async def test_no_full_build_in_time_is_said_once_on_a_tick(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    reduced = reduced_build(env, pull, age=7200)
    await env.ci.finish_build(PIPELINE, reduced)
    await approve(env, pull, MAINTAINER)
    inbox = env.running.inbox
    await enqueue_tick(inbox, (DOWNSTREAM,), 1000.0, 300.0)
    await env.settle()
    assert bodies(env, number) == []  # not yet half an hour

    # half an hour later (the timeline and the landing record say so), the tick speaks
    issue = env.sandbox.repo(DOWNSTREAM).issues[number]
    issue.events = [dataclasses.replace(e, created_at=e.created_at - 1900) for e in issue.events]
    store = env.running.services.store
    state = await landing_state(env, number)
    later = {**state, "labels_added_at": state["labels_added_at"] - 1900}
    await store.put_state(Kind.LANDING, pr_key(DOWNSTREAM, number), later)
    await enqueue_tick(inbox, (DOWNSTREAM,), 2000.0, 300.0)
    await env.settle()
    await enqueue_tick(inbox, (DOWNSTREAM,), 3000.0, 300.0)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()

    [note] = bodies(env, number)
    assert note.startswith(f"Landing `{head[:7]}` waits for the full CI: 30 minutes after")
    assert f"no build of it was created in `{PIPELINE}`" in note
    assert f"[{PIPELINE} #{reduced}](" in note
    assert landing_text.MARKER_NO_FULL_BUILD.format(head=head) in note
    assert merges(env) == []

    await finished_build(env, pull, PASSING)  # the approval stood
    assert current(env, number)["merged"] is True


async def test_a_label_put_on_long_ago_without_a_full_build_is_said_at_once(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    for name in ("ready", "ci-full"):
        env.sandbox.label_pull(DOWNSTREAM, number, name, by=MAINTAINER, at=time.time() - 3600)
    await env.settle()

    await approve(env, pull, MAINTAINER)
    await approve(env, pull, MAINTAINER)  # a second approval says nothing more

    [note] = bodies(env, number)
    assert "there is none" in note
    assert not any(r.operation_id == "issues/add-labels" for r in env.sandbox.requests)


async def test_a_label_taken_off_leaves_no_build_counting(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)
    issue = env.sandbox.repo(DOWNSTREAM).issues[number]
    issue.labels = [label for label in issue.labels if label.name != "ready"]

    await finished_build(env, pull, REAL)
    await finished_build(env, pull, PASSING)

    assert merges(env) == []
    assert bodies(env, number) == []  # the failure judged nothing either


async def test_without_labels_on_approval_every_build_counts(ci_env: Harness) -> None:
    env = ci_env
    config = CONFIG + "landing: {labels_on_approval: []}\n" + BUILDKITE
    pull = await open_bump(env, config=config)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)
    assert merges(env) == []  # no build at all yet

    await env.ci.finish_build(PIPELINE, reduced_build(env, pull, PASSING))
    await env.settle()

    assert current(env, number)["merged"] is True
    assert not any(
        r.operation_id == "issues/list-events-for-timeline" for r in env.sandbox.requests
    )
