"""Main's lanes, end to end through the GitHub and Buildkite stand-ins and a REAL registry.

vLLM's torch-nightly builds of main (``TORCH_NIGHTLY=1``) run the same commits as the
regular builds with other images. Incident B on that lane: the CPU image build pushed
``<commit>-cpu`` instead of ``<commit>-torch-nightly-cpu``, so every CPU step of every
nightly build failed pulling its image. Judged apart from the regular builds, the lane
gets one issue with the registry's table — not one per CPU step, and no claim that main's
history was rewritten because a regular build of the same commit passed — and the
regular lane is left alone. A step broken inside the lane is routed with the lane's own
inputs, and a green and a red build of one commit name no commit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.main_red import images_text
from bot.main_red import text as red_text
from bot.main_red.lane_images import IMAGES_STEP
from bot.main_red.lanes import Lane
from bot.store.kinds import Kind, signal_key
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.oci_registry import RegistryServer
from sandbox.scenario import World
from sandbox.vllm_shapes import DOWNSTREAM, PIPELINE
from tests.e2e.conftest import registry_world

from .test_main_red import follow_up_writes
from .test_missing_images import MAIN_REPOSITORY, pull_failed

NIGHTLY = {"TORCH_NIGHTLY": "1"}
LANE = Lane("torch-nightly", (("TORCH_NIGHTLY", "1"),))
CPU_STEPS = ("cpu-small-1", "cpu-small-2")


@pytest.fixture
async def world(tmp_path: Path, registry: RegistryServer) -> AsyncIterator[World]:
    async with registry_world(
        tmp_path, registry, "routing:\n  ci_config: .buildkite/ci_config.yaml\nmain_red: {}\n"
    ) as w:
        yield w


def jobs(commit: str, *, cpu: str) -> list[JobSpec]:
    """A build's image builds, a CUDA step, and the CPU steps: ``ok``, ``pull`` (the
    nightly CPU image is missing) or ``fail`` (a real test failure)."""
    logs = {
        "ok": ["ok"],
        "pull": pull_failed(MAIN_REPOSITORY, f"{commit}-torch-nightly-cpu"),
        "fail": ["FAILED tests/cpu/test_ops.py::test_gelu - AssertionError"],
    }
    state = "passed" if cpu == "ok" else "failed"
    return [
        World.job("image-build"),
        World.job("image-build-cpu", log=["Image found", "skipping the build"]),
        World.job("misc-1", log=["ok"]),
        *(World.job(key, state=state, log=logs[cpu]) for key in CPU_STEPS),
    ]


async def main_build(w: World, builds: Sequence[JobSpec], *, env: dict[str, str]) -> int:
    commit = w.github.head(DOWNSTREAM)
    build = w.ci.create_build(PIPELINE, commit=commit, branch="main", jobs=builds, env=env)
    await w.ci.finish_build(PIPELINE, int(build["number"]))
    await w.settle()
    return int(build["number"])


async def redeliver(w: World, *numbers: int) -> None:
    for number in numbers:
        await w.ci.finish_build(PIPELINE, number)
    await w.settle()


def issues(env: Harness) -> list[dict[str, Any]]:
    state = env.sandbox.repo(DOWNSTREAM)
    return [
        {"number": i.number, "title": i.title, "body": i.body or "", "state": i.state}
        for i in state.issues.values()
        if i.pull is None and "dashboard" not in i.title.lower()
    ]


async def stored(env: Harness, step: str, lane: str = "") -> dict[str, Any] | None:
    key = signal_key(DOWNSTREAM, PIPELINE, step, lane)
    return await env.running.services.store.get_state(Kind.MAIN_SIGNAL, key)


async def test_two_red_nightly_builds_give_one_lane_issue_with_the_registry_table(
    world: World, registry: RegistryServer
) -> None:
    w = world
    commit = w.github.head(DOWNSTREAM)
    await registry.push_image(MAIN_REPOSITORY, commit)
    await registry.push_image(MAIN_REPOSITORY, f"{commit}-cpu")
    await registry.push_image(MAIN_REPOSITORY, f"{commit}-torch-nightly")
    await main_build(w, jobs(commit, cpu="ok"), env={})  # the regular lane: green
    first = await main_build(w, jobs(commit, cpu="pull"), env=NIGHTLY)
    second = await main_build(w, jobs(commit, cpu="pull"), env=NIGHTLY)

    [issue] = issues(w.env)
    assert issue["title"] == f"Images missing on main (torch-nightly) since build #{first}"
    body = issue["body"]
    assert red_text.lane_line(LANE) in body
    row = f"| `{commit}-torch-nightly-cpu` | 404 | `cpu-small-1`, `cpu-small-2` |"
    assert f"{row} `image-build-cpu` |" in body
    assert f"| `{commit}-cpu` | 200 |" in body  # the stable tag the CPU build pushed
    assert "rewritten" not in body
    assert body.endswith(images_text.images_marker(PIPELINE, first, LANE))
    # No issue per step, and the regular lane is untouched.
    for step in CPU_STEPS:
        assert await stored(w.env, step) is None
        assert await stored(w.env, step, LANE.tag) is None
    assert await stored(w.env, IMAGES_STEP) is None
    doc = await stored(w.env, IMAGES_STEP, LANE.tag)
    assert doc is not None
    assert (doc["state"], doc["since"], doc["steps"]) == ("broken", first, list(CPU_STEPS))

    # The same deliveries again: no second write.
    writes = len(follow_up_writes(w.env))
    await redeliver(w, first, second)
    assert len(follow_up_writes(w.env)) == writes
    assert len(issues(w.env)) == 1

    # The CPU build pushes the right tag: the next nightly build is green, the issue closed
    # once, with a word; its redelivery writes nothing.
    green = await main_build(w, jobs(commit, cpu="ok"), env=NIGHTLY)
    [closed] = issues(w.env)
    assert closed["state"] == "closed"
    [said] = w.comments({"number": closed["number"]})
    assert said.startswith(
        images_text.COMMENT_IMAGES_GREEN.format(
            on_main="on main (torch-nightly)", build=f"#{green}", commit7=commit[:7]
        )
    )
    writes = len(follow_up_writes(w.env))
    await redeliver(w, green)
    assert len(follow_up_writes(w.env)) == writes


async def test_a_step_broken_in_the_nightly_lane_on_one_commit_names_no_commit(
    world: World,
) -> None:
    """Nightly green, then nightly red twice on the same commit (the torch nightly moved):
    one issue for the lane's step, routed as the lane pulls, with no commit to blame and
    no rewritten history; a regular green build of the commit changes nothing."""
    w = world
    commit = w.github.head(DOWNSTREAM)
    await main_build(w, jobs(commit, cpu="ok"), env=NIGHTLY)
    first = await main_build(w, jobs(commit, cpu="fail"), env=NIGHTLY)
    await main_build(w, jobs(commit, cpu="ok"), env={})  # regular: green, another lane
    await main_build(w, jobs(commit, cpu="fail"), env=NIGHTLY)

    found = {issue["title"]: issue for issue in issues(w.env)}
    assert sorted(found) == [
        f"`{step}` red on main (torch-nightly) since build #{first}" for step in CPU_STEPS
    ]
    body = found[f"`cpu-small-1` red on main (torch-nightly) since build #{first}"]["body"]
    assert "| small_cpu_queue_premerge · docker · -torch-nightly-cpu |" in body
    assert "· -cpu |" not in body  # routed as the lane pulls, not as the regular builds
    assert red_text.WHY_SAME_COMMIT in body
    assert red_text.FIX_SAME_COMMIT in body
    assert "rewritten" not in body
    assert body.endswith(red_text.issue_marker(PIPELINE, "cpu-small-1", first, LANE))
    assert await stored(w.env, "cpu-small-1") is None  # the regular lane: never red

    writes = len(follow_up_writes(w.env))
    await main_build(w, jobs(commit, cpu="fail"), env=NIGHTLY)  # still red: nothing new
    assert len(follow_up_writes(w.env)) == writes


async def ask_why_red(w: World, number: int, step: str) -> str:
    before = len(w.comments({"number": number}))
    await w.comment({"number": number}, f"@bot why-red {step}", by="alice")
    await w.settle()
    [reply] = [c for c in w.comments({"number": number})[before:] if c.startswith("@alice")]
    return reply


async def test_a_nightly_step_broken_by_a_commit_is_ranked_with_the_lanes_routes(
    world: World,
) -> None:
    w = world
    w.person("alice", "write")
    await main_build(w, jobs(w.github.head(DOWNSTREAM), cpu="ok"), env=NIGHTLY)
    culprit = w.github.commit(DOWNSTREAM, {"vllm/cpu_ops.py": "# gelu\n"}, "Rewrite gelu")
    await w.github.flush()
    first = await main_build(w, jobs(culprit, cpu="fail"), env=NIGHTLY)
    await main_build(w, jobs(culprit, cpu="fail"), env=NIGHTLY)

    found = {issue["title"]: issue for issue in issues(w.env)}
    issue = found[f"`cpu-small-1` red on main (torch-nightly) since build #{first}"]
    assert f"{culprit[:7]} Rewrite gelu" in issue["body"]
    assert "is the only commit between last green and first red" in issue["body"]
    assert "| small_cpu_queue_premerge · docker · -torch-nightly-cpu |" in issue["body"]
    assert "· -cpu |" not in issue["body"]
    assert "rewritten" not in issue["body"]

    reply = await ask_why_red(w, issue["number"], "cpu-small-1")
    assert reply.startswith("@alice `cpu-small-1` on main (torch-nightly): broken (")
    assert f"{culprit[:7]} Rewrite gelu" in reply
    assert "-torch-nightly-cpu" in reply


async def test_why_red_answers_per_lane_and_says_when_there_is_nothing_to_rank(
    world: World,
) -> None:
    """The regular lane green and never red; the nightly lane red in every build read."""
    w = world
    w.person("alice", "write")
    commit = w.github.head(DOWNSTREAM)
    green = await main_build(w, jobs(commit, cpu="ok"), env={})
    await main_build(w, jobs(commit, cpu="fail"), env=NIGHTLY)
    w.github.commit(DOWNSTREAM, {"vllm/x.py": "# x\n"}, "Change x", branch="feature")
    pull = w.github.open_pull(DOWNSTREAM, head="feature", title="Change x", by="alice")

    reply = await ask_why_red(w, int(pull["number"]), "cpu-small-1")
    sections = reply.removeprefix("@alice ").split("\n\n")
    assert sections[0].startswith(
        "`cpu-small-1` on main (torch-nightly): unknown (failed in every main build read"
    )
    assert sections[1].startswith(red_text.SIGNAL_HEAD)
    assert sections[2] == red_text.WHY_RED_NO_RANKING
    assert sections[3] == red_text.WHY_RED_GREEN.format(
        step="cpu-small-1", on_main="on main", build=f"#{green}", commit7=commit[:7]
    )
