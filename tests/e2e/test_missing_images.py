"""Missing images proved against a REAL registry (the CNCF distribution registry, token
auth), end to end through the GitHub and Buildkite stand-ins.

Incident B replayed: a torch-nightly build whose CPU build pushed only its stable tag.
The bot asks the registry for every tag the build's steps pull and finds 200, 200, 404,
404: the nightly CUDA image and the CPU build's stable tag exist, the nightly CPU and
arm64 images do not — and says which step should have built each. On a PR, a job that
could not pull its image is "image missing" for `retry-flaky`: never retried, explained
with the registry's table.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.images.model import ImageCheck
from bot.images.text import image_table
from bot.store.kinds import Kind
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness, harness
from sandbox.oci_registry import RegistryServer
from sandbox.scenario import World
from sandbox.vllm_ci_tree import vllm_ci_files
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.conftest import registry_world

MAIN_REPOSITORY = "q9t5s3a7/vllm-ci-postmerge-repo"
PREMERGE_REPOSITORY = "q9t5s3a7/vllm-ci-test-repo"
PULL_FAILED = (
    "$ docker pull public.ecr.aws/{repository}:{tag}",
    "Error response from daemon: manifest for public.ecr.aws/{repository}:{tag} not found: "
    "manifest unknown: Requested image not found",
)


@pytest.fixture
async def world(tmp_path: Path, registry: RegistryServer) -> AsyncIterator[World]:
    async with registry_world(tmp_path, registry, "landing:\n  labels_on_approval: [ready]\n") as w:
        yield w


def pull_failed(repository: str, tag: str) -> list[str]:
    return [line.format(repository=repository, tag=tag) for line in PULL_FAILED]


def builds_ran() -> list[JobSpec]:
    return [
        World.job("image-build"),
        World.job("image-build-cpu", log=["Image found", "skipping the build"]),
        World.job("arm64-image-build"),
    ]


async def stored_check(env: Harness) -> ImageCheck:
    doc = await env.running.services.store.get_state(Kind.IMAGE_CHECK, DOWNSTREAM)
    assert doc is not None
    return ImageCheck.load(doc)


async def test_incident_b_the_registry_table_200_200_404_404(
    world: World, registry: RegistryServer
) -> None:
    commit = world.github.head(DOWNSTREAM)
    await registry.push_image(MAIN_REPOSITORY, f"{commit}-torch-nightly")
    await registry.push_image(MAIN_REPOSITORY, f"{commit}-cpu")  # the stable tag, wrongly
    jobs = [
        *builds_ran(),
        World.job("misc-1", log=["ok"]),
        World.job(
            "cpu-small-1",
            state="failed",
            log=pull_failed(MAIN_REPOSITORY, f"{commit}-torch-nightly-cpu"),
        ),
        World.job(
            "dgx-spark-smoke",
            state="failed",
            log=pull_failed(MAIN_REPOSITORY, f"{commit}-torch-nightly-arm64"),
        ),
    ]
    build = world.ci.create_build(
        PIPELINE,
        commit=commit,
        branch="main",
        jobs=jobs,
        env={"TORCH_NIGHTLY": "1"},
        source="schedule",
    )
    await world.ci.finish_build(PIPELINE, int(build["number"]))
    await world.settle()

    check = await stored_check(world.env)
    assert check.nightly
    assert check.problem is None
    assert [row.status for row in check.rows] == ["200", "200", "404", "404"]
    by_tag = {row.tag: row for row in check.rows}
    assert {tag: row.status for tag, row in by_tag.items()} == {
        f"{commit}-torch-nightly": "200",
        f"{commit}-cpu": "200",
        f"{commit}-torch-nightly-cpu": "404",
        f"{commit}-torch-nightly-arm64": "404",
    }
    assert by_tag[f"{commit}-torch-nightly-cpu"].producer == "image-build-cpu"
    assert by_tag[f"{commit}-torch-nightly-cpu"].consumers == ("cpu-small-1",)
    assert by_tag[f"{commit}-torch-nightly-arm64"].producer == "arm64-image-build"
    assert by_tag[f"{commit}-cpu"].counterpart_of == f"{commit}-torch-nightly-cpu"
    assert by_tag[f"{commit}-torch-nightly"].consumers == ("misc-1",)
    # Asked once for the build, though two jobs and the build's end each pointed at it:
    # the token server issued one token per repository the bot asked about.
    asked = registry.token_requests
    await world.ci.finish_build(PIPELINE, int(build["number"]))  # redelivered events
    await world.settle()
    assert registry.token_requests == asked


async def test_retry_flaky_calls_a_missing_image_image_missing_with_the_table(
    world: World, registry: RegistryServer
) -> None:
    w = world
    w.person("alice", "write")
    w.github.commit(DOWNSTREAM, {"vllm/x.py": "# x\n"}, "Change x", branch="feature")
    pull = w.github.open_pull(DOWNSTREAM, head="feature", title="Change x", by="alice")
    head = str(pull["head"]["sha"])
    await registry.push_image(PREMERGE_REPOSITORY, head)  # the CUDA image, not the CPU one
    jobs = [
        World.job("image-build"),
        World.job("misc-1", log=["ok"]),
        World.job(
            "cpu-small-1", state="failed", log=pull_failed(PREMERGE_REPOSITORY, f"{head}-cpu")
        ),
    ]
    build = w.ci.create_build(
        PIPELINE,
        commit=head,
        branch="feature",
        jobs=jobs,
        pull_request={"id": str(pull["number"])},
    )
    await w.ci.finish_build(PIPELINE, int(build["number"]))
    await w.settle()
    await w.comment(pull, "@bot retry-flaky", by="alice")
    await w.settle()

    [sticky] = [c for c in w.comments(pull) if "cpu-small-1" in c]
    assert "image-missing" in sticky
    assert "the image it pulls is not in the registry" in sticky
    assert f"| `{head}-cpu` | 404 | `cpu-small-1` | `image-build-cpu` |" in sticky
    assert f"| `{head}` | 200 |" in sticky
    assert not [job for job in w.ci.world.jobs.values() if job.retried]  # nothing retried


async def nightly_check(
    tmp_path: Path, registry_url: str, *, username: str | None = None, password: str | None = None
) -> ImageCheck:
    """A nightly build's images checked against ``registry_url`` as ``username``."""
    async with harness(
        tmp_path,
        repositories=(DOWNSTREAM,),
        start=False,
        buildkite=True,
        registry_username=username,
        registry_password=password,
    ) as env:
        w = World(env)
        config = CONFIG + (
            f"buildkite:\n  organization: vllm\n  pipelines: [{PIPELINE}]\n"
            f"images:\n  registry_url: {registry_url}\n"
        )
        w.downstream(w.upstream(), config=config, files=vllm_ci_files())
        w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
        await w.start()
        commit = w.github.head(DOWNSTREAM)
        jobs = [*builds_ran(), World.job("misc-1", log=["ok"])]
        build = w.ci.create_build(
            PIPELINE, commit=commit, branch="main", jobs=jobs, env={"TORCH_NIGHTLY": "1"}
        )
        await w.ci.finish_build(PIPELINE, int(build["number"]))
        await w.settle()
        check = await stored_check(env)
        # Not answered: not kept for the build, so the next event for it asks again.
        kept = await env.running.services.store.get_state(
            Kind.IMAGE_CHECK_BUILD, str(build["web_url"])
        )
        assert kept is None
        return check


async def test_a_registry_that_is_down_gives_unknown_rows_not_missing_ones(
    tmp_path: Path,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        check = await nightly_check(tmp_path, f"http://127.0.0.1:{port}")
    [row] = check.rows
    assert row.exists is None
    assert row.status.startswith("unreachable: ")
    assert "did not say whether 1 image exists" in image_table(check)


async def test_wrong_credentials_give_401_rows(tmp_path: Path, registry: RegistryServer) -> None:
    check = await nightly_check(
        tmp_path / "world",
        registry.url,
        username=registry.username,
        password="wrong",
    )
    [row] = check.rows
    assert row.exists is None
    assert row.status.startswith("401 ")


async def test_landing_stops_on_a_missing_image_with_the_table(
    world: World, registry: RegistryServer
) -> None:
    w = world
    maintainer = w.person("maintainer", "maintain")
    await w.merge_upstream("csrc/a.cu", "// a\n", "Upstream change (#171)")
    await w.settle()
    [pull] = w.bump_pulls()
    await w.approve(pull, by=maintainer)
    await w.settle()
    head = str(w.pull(int(pull["number"]))["head"]["sha"])
    await registry.push_image(PREMERGE_REPOSITORY, head)
    jobs = [
        World.job("image-build"),
        World.job("misc-1", log=["ok"]),
        World.job(
            "cpu-small-1", state="failed", log=pull_failed(PREMERGE_REPOSITORY, f"{head}-cpu")
        ),
    ]
    await w.build(pull, jobs)
    await w.settle()

    [stopped] = [c for c in w.comments(pull) if c.startswith("Landing stopped")]
    assert "image-missing" in stopped
    assert f"| `{head}-cpu` | 404 | `cpu-small-1` | `image-build-cpu` |" in stopped
    assert not [job for job in w.ci.world.jobs.values() if job.retried]  # nothing retried
    assert w.pull(int(pull["number"]))["state"] == "open"
