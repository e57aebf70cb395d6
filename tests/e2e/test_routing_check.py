"""The "CI routing" check run on PRs, end to end through the GitHub stand-in.

Incident A: a migration marked the torch ABI audit ``device: cpu-small`` with
``depends_on: image-build-cpu``; for docker steps the queue decides the image, so the
audit pulled the CPU image. The check fails the PR with an annotation on the ``device``
line; a PR that changes no routing gets no check run; each head gets one. Which PRs are
looked at comes from the config's ``job_dirs``: a PR editing only a hardware test file is
checked, one editing only the docs is not (and reads no tree to say so).
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.routing.required import MSG_OFF_CUDA_IMAGE
from bot.routing_check.report import CHECK_NAME
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import AUDIT_FILE, AUDIT_KEY, CI_CONFIG_PATH, vllm_ci_files
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM

AUTHOR = "migrator"
ROUTING = "routing:\n  required_keys: [torch-stable-abi-audit]\n"


HARDWARE_FILE = ".buildkite/hardware_tests/cpu.yaml"
# A hardware job file as vLLM writes them: host agents, no plugin, no image to wait for.
HARDWARE_TESTS = """\
group: Hardware - CPU
depends_on: []
steps:
  - label: CPU kernels (x86)
    key: cpu-kernels-x86
    depends_on: []
    device: intel_cpu
    no_plugin: true
    commands:
      - bash .buildkite/scripts/hardware_ci/run-cpu-test.sh
"""


def with_hardware_tests() -> dict[str, str]:
    """The tree with a third job directory, as vLLM's config names it since 2026-01."""
    files = vllm_ci_files()
    config = files[CI_CONFIG_PATH].replace(
        "  - .buildkite/test_areas\n",
        "  - .buildkite/test_areas\n  - .buildkite/hardware_tests\n",
    )
    assert config != files[CI_CONFIG_PATH]
    return {**files, CI_CONFIG_PATH: config, HARDWARE_FILE: HARDWARE_TESTS}


def seed(env: Harness, files: dict[str, str] | None = None) -> str:
    world = World(env)
    pinned = world.upstream()
    return world.downstream(pinned, config=CONFIG + ROUTING, files=files or vllm_ci_files())


def open_pull(
    env: Harness,
    files: dict[str, str],
    branch: str = "ci/migrate",
    base: dict[str, str] | None = None,
) -> dict[str, Any]:
    seeded = base or vllm_ci_files()
    changed = {path: text for path, text in files.items() if text != seeded.get(path)}
    env.sandbox.commit(DOWNSTREAM, changed or {"README.md": "# docs\n"}, "Migrate", branch=branch)
    return env.sandbox.open_pull(DOWNSTREAM, head=branch, title="Migrate", by=AUTHOR)


def runs(env: Harness, sha: str) -> list[Any]:
    repo = env.sandbox.repo(DOWNSTREAM)
    return [
        run for run in repo.check_runs.values() if run.head_sha == sha and run.name == CHECK_NAME
    ]


def device_line(text: str) -> int:
    lines = text.splitlines()
    audit = next(n for n, line in enumerate(lines) if AUDIT_KEY in line)
    return next(n for n in range(audit, len(lines)) if "device: cpu-small" in lines[n]) + 1


async def test_incident_a_fails_with_an_annotation_on_the_device_line(env: Harness) -> None:
    seed(env)
    await env.start()
    broken = vllm_ci_files(incident_a=True)
    pull = open_pull(env, broken)
    await env.settle()

    [run] = runs(env, pull["head"]["sha"])
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert f"`{AUDIT_KEY}`" in (run.summary or "")
    assert "small_cpu_queue_premerge" in (run.summary or "")
    lines = {(a.path, a.start_line, a.level, a.title) for a in run.annotations}
    assert (AUDIT_FILE, device_line(broken[AUDIT_FILE]), "failure", "cuda-required") in lines
    messages = [a.message for a in run.annotations]
    assert (
        MSG_OFF_CUDA_IMAGE.format(
            key=AUDIT_KEY, image="the '-cpu' image", queue="small_cpu_queue_premerge"
        )
        in messages
    )
    assert env.sandbox.violations == []


async def test_a_pr_that_changes_no_routing_gets_no_check_run(env: Harness) -> None:
    seed(env)
    await env.start()
    pull = open_pull(env, {"README.md": "# docs\n"}, branch="docs")
    await env.settle()
    assert runs(env, pull["head"]["sha"]) == []


async def test_a_pr_editing_only_a_hardware_test_file_is_checked(env: Harness) -> None:
    seed(env, with_hardware_tests())
    await env.start()
    moved = HARDWARE_TESTS.replace("device: intel_cpu", "device: arm_cpu")
    edited = {**with_hardware_tests(), HARDWARE_FILE: moved}
    pull = open_pull(env, edited, branch="ci/arm", base=with_hardware_tests())
    await env.settle()

    [run] = runs(env, pull["head"]["sha"])
    assert (run.status, run.conclusion) == ("completed", "success")
    assert "`cpu-kernels-x86`" in (run.summary or "")
    assert "intel-cpu → **arm-cpu**" in (run.summary or "")


def routing_reads(env: Harness) -> list[str]:
    """The check's reads of the generator's files: the config by path, the rest by tree."""
    return [
        str(r.operation_id)
        for r in env.sandbox.requests
        if r.operation_id == "git/get-tree" or r.path.endswith("/contents/" + CI_CONFIG_PATH)
    ]


async def test_a_docs_pr_reads_the_two_configs_and_nothing_else(env: Harness) -> None:
    seed(env, with_hardware_tests())
    await env.start()
    env.sandbox.reset_log()
    pull = open_pull(env, {"docs/usage.md": "# usage\n"}, branch="docs")
    await env.settle()

    assert runs(env, pull["head"]["sha"]) == []
    assert routing_reads(env) == ["repos/get-content"] * 2  # the base's and the head's

    env.sandbox.reset_log()
    open_pull(env, {"docs/faq.md": "# faq\n"}, branch="faq")
    await env.settle()
    assert routing_reads(env) == ["repos/get-content"]  # main's config is known already


async def test_a_pr_adding_a_job_directory_is_checked_from_its_file_list(env: Harness) -> None:
    seed(env)
    await env.start()
    env.sandbox.reset_log()
    pull = open_pull(env, with_hardware_tests(), branch="ci/hardware")
    await env.settle()

    [run] = runs(env, pull["head"]["sha"])
    assert "`cpu-kernels-x86`" in (run.summary or "")  # a new step: a change
    # It touches the config: nothing is read to decide, only the two trees to route.
    assert routing_reads(env) == ["git/get-tree"] * 2


async def test_one_run_per_head_however_often_the_event_comes(env: Harness) -> None:
    seed(env)
    await env.start()
    pull = open_pull(env, vllm_ci_files(incident_a=True))
    await env.settle()
    opened = next(
        d
        for d in env.sandbox.deliveries
        if d.event == "pull_request" and d.payload.get("action") == "opened"
    )
    await env.sandbox.deliver("pull_request", opened.payload)  # a new delivery id, same head
    await env.settle()
    [run] = runs(env, pull["head"]["sha"])
    assert len(run.annotations) == len({(a.path, a.message) for a in run.annotations})

    fixed = vllm_ci_files()
    env.sandbox.commit(
        DOWNSTREAM, {AUDIT_FILE: fixed[AUDIT_FILE]}, "Keep the audit on CUDA", branch="ci/migrate"
    )
    await env.settle()
    head = env.sandbox.head(DOWNSTREAM, "ci/migrate")
    assert runs(env, head) == []  # back to main's routing: nothing to say


def typos(count: int) -> str:
    """A job file whose every step has a typo the generator silently drops."""
    steps = "".join(
        f"  - label: Typo {n}\n    key: typo-{n}\n    num_device: 4\n    commands: [pytest]\n"
        for n in range(count)
    )
    return "group: Typos\ndepends_on: [image-build]\nsteps:\n" + steps


@pytest.mark.parametrize("lost", ["ghost", "failed"])
async def test_more_than_fifty_annotations_go_in_chunks_and_a_ghost_update_is_finished(
    env: Harness, lost: str
) -> None:
    seed(env)
    await env.start()
    files = {**vllm_ci_files(), ".buildkite/test_areas/typos.yaml": typos(60)}
    if lost == "ghost":
        env.sandbox.faults.ghost_next(1, "checks/update")  # applied, answered 502
    else:
        env.sandbox.faults.fail_next(1, 502, "checks/update")  # not applied: redone
    pull = open_pull(env, files)
    await env.settle()

    [run] = runs(env, pull["head"]["sha"])
    assert len(run.annotations) == 60  # 50 on create, 10 in one update, none twice
    assert {a.title for a in run.annotations} == {"unknown-field"}
    assert env.sandbox.faults.injected
    assert run.conclusion == "failure"


async def test_table_overrides_the_model_cannot_take_fail_the_check_saying_why(
    env: Harness,
) -> None:
    world = World(env)
    pinned = world.upstream()
    bad = ROUTING + "  tables:\n    device_queue: {h300: q}\n"
    world.downstream(pinned, config=CONFIG + bad, files=vllm_ci_files())
    await env.start()
    pull = open_pull(env, vllm_ci_files(incident_a=True))
    await env.settle()

    [run] = runs(env, pull["head"]["sha"])
    assert run.conclusion == "failure"
    [note] = run.annotations
    assert note.path == ".github/followup-bot.yml"
    assert note.message.startswith("routing.tables in the config: ")
    assert "device_queue" in note.message
