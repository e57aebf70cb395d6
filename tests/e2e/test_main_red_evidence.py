"""Red on main, blamed on a source dependency, end to end through the stand-ins.

vLLM's tree with a Mamba job file written as vLLM writes them: a step without ``key:``
(Buildkite knows it by the generator's derived key) depending on directories, and a step
excluding one file under a directory it depends on. A step red twice the same way after
passing: the commit of the range that touched a file it depends on is named, its PR gets
the one culprit comment; a commit that touched only an excluded file is no evidence.
Nothing re-routed the step, so no revert PR is proposed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.main_red import text as red_text
from bot.main_red.culprit import WHY_ONE, Evidence
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import before_incident_a
from sandbox.vllm_shapes import DOWNSTREAM, MAIN_RED_CONFIG, PIPELINE
from tests.main_red.mamba_tree import (
    LAYERS_KEY,
    MAMBA_FILE,
    MAMBA_JOBS,
    SSD_KERNEL,
    SSD_KEY,
    SSD_README,
)

CONV_FAILURE = (
    "tests/kernels/mamba/test_causal_conv1d.py ..F",
    "FAILED tests/kernels/mamba/test_causal_conv1d.py::test_causal_conv1d_update[float16]"
    " - RuntimeError: CUDA error: an illegal memory access was encountered",
)
SSD_FAILURE = (
    "FAILED tests/kernels/mamba/test_ssd.py::test_chunked_scan - AssertionError: "
    "Tensor-likes are not close!",
)
CONV_KERNEL = "csrc/mamba/causal_conv1d.cu"
LIST_COMMITS = "repos/list-commits"


async def mamba_world(env: Harness) -> World:
    """vLLM's tree with the Mamba job file, the pipeline, an author; the bot started."""
    w = World(env)
    files = {**before_incident_a(), MAMBA_FILE: MAMBA_JOBS, CONV_KERNEL: "// conv1d\n"}
    w.downstream(w.upstream(), config=MAIN_RED_CONFIG, files=files)
    w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
    w.person("alice", "write")
    await w.start()
    return w


def job(key: str, state: str, *log: str) -> JobSpec:
    return World.job(key, state=state, log=list(log) or ["ok"])


async def main_build(w: World, jobs: Sequence[JobSpec]) -> int:
    number = await w.build(None, jobs, commit=w.github.head(DOWNSTREAM), branch="main")
    await w.settle()
    return number


async def merged(w: World, files: dict[str, str], title: str) -> tuple[int, str]:
    """A PR of alice's squash-merged into main; its number and commit."""
    branch = title.lower().replace(" ", "-")
    w.github.commit(DOWNSTREAM, files, title, branch=branch)
    pull = w.github.open_pull(DOWNSTREAM, head=branch, title=title, by="alice")
    sha = w.github.merge_pull(DOWNSTREAM, int(pull["number"]))
    await w.github.flush()
    return int(pull["number"]), sha


async def red_twice(w: World, key: str, failure: Sequence[str]) -> int:
    """Two main builds failing ``key`` the same way; returns the first."""
    first = await main_build(w, [job(key, "failed", *failure), job("misc-1", "passed")])
    await main_build(w, [job(key, "failed", *failure), job("misc-1", "passed")])
    return first


def the_issue(env: Harness) -> dict[str, Any]:
    state = env.sandbox.repo(DOWNSTREAM)
    [issue] = [i for i in state.issues.values() if i.pull is None and "red on main" in i.title]
    return {"number": issue.number, "title": issue.title, "body": issue.body or ""}


def candidate_row(body: str, sha: str) -> str:
    [row] = [line for line in body.splitlines() if line.startswith(f"- {sha[:7]} ")]
    return row


def paths_listed(env: Harness) -> list[str]:
    """The paths the bot asked GitHub for the commits of."""
    return [
        str(r.query.get("path"))
        for r in env.sandbox.requests
        if r.operation_id == LIST_COMMITS and r.query.get("path")
    ]


def revert_pulls(env: Harness) -> list[dict[str, Any]]:
    branch = red_text.revert_branch
    return [
        pr
        for pr in env.sandbox.pulls(DOWNSTREAM, state="all")
        if pr["head"]["ref"] in (branch(LAYERS_KEY), branch(SSD_KEY))
    ]


async def test_a_kernel_break_under_a_directory_is_blamed_on_a_keyless_step(
    ci_env: Harness,
) -> None:
    w = await mamba_world(ci_env)
    await main_build(w, [job(LAYERS_KEY, "passed"), job("misc-1", "passed")])
    docs = w.github.commit(DOWNSTREAM, {"docs/mamba.md": "# Mamba\n"}, "Document Mamba (#31001)")
    pull, culprit = await merged(w, {CONV_KERNEL: "// conv1d, faster\n"}, "Speed up conv1d")
    await w.settle()
    first = await red_twice(w, LAYERS_KEY, CONV_FAILURE)

    issue = the_issue(ci_env)
    assert issue["title"] == f"`{LAYERS_KEY}` red on main since build #{first}"
    body = issue["body"]
    why = WHY_ONE.format(sha=culprit[:12], evidence=Evidence.SOURCE.value)
    assert f"medium ({why})" in body
    assert "test_causal_conv1d_update" in body  # the failure signature
    assert candidate_row(body, culprit).endswith(f": {Evidence.SOURCE.value}")
    assert candidate_row(body, docs).endswith(f": {red_text.NO_EVIDENCE}")
    # The directory dependency "csrc/mamba/" is asked for as the directory.
    assert "csrc/mamba" in paths_listed(ci_env)
    assert not [path for path in paths_listed(ci_env) if path.endswith("/")]

    [comment] = w.comments({"number": pull})
    assert f"#{issue['number']}" in comment
    assert why in comment
    assert revert_pulls(ci_env) == []  # the route did not change: nothing to revert


async def test_a_commit_touching_only_an_excluded_file_is_no_evidence(ci_env: Harness) -> None:
    w = await mamba_world(ci_env)
    await main_build(w, [job(SSD_KEY, "passed"), job("misc-1", "passed")])
    readme = w.github.commit(DOWNSTREAM, {SSD_README: "# SSD ops\n"}, "Explain SSD (#31002)")
    pull, culprit = await merged(w, {SSD_KERNEL: "# chunked scan\n"}, "Chunk the SSD scan")
    await w.settle()
    await red_twice(w, SSD_KEY, SSD_FAILURE)

    body = the_issue(ci_env)["body"]
    why = WHY_ONE.format(sha=culprit[:12], evidence=Evidence.SOURCE.value)
    assert f"medium ({why})" in body
    assert candidate_row(body, readme).endswith(f": {red_text.NO_EVIDENCE}")
    # Its directory would also list the README's commit: the kernel is asked for by itself.
    assert SSD_KERNEL in paths_listed(ci_env)
    assert SSD_KERNEL.rsplit("/", 1)[0] not in paths_listed(ci_env)

    [comment] = w.comments({"number": pull})
    assert why in comment
    assert revert_pulls(ci_env) == []
