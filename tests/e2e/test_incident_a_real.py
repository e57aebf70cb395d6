"""Incident A replayed on vLLM's real shapes, end to end through the stand-ins.

The repository is vLLM's real `.buildkite` tree of May 2026 (read from the real-data pack at
test time) with `.buildkite/test_areas/torch_abi.yaml` as vLLM wrote it in August 2026 (it
post-dates the pack; ci-routing.md and the seeds describe it): one step, and the `depends_on`
at the **file** level, above `steps:`. The migration PR (#54326's shape) marks two 2-GPU
distributed steps `device: l4` and moves the audit to `cpu-small` with the CPU image build.
The audit then fails on main the way the real script fails: its `Not allowed:` line and
Buildkite's exit lines, no pytest output and no error line of its own.

The bot must open the issue, comment once on the migration PR, and open the revert PR whose
diff is exactly the human fix: the file-level `depends_on` back to `image-build`, the step's
`device: cpu-small` line gone, nothing else (the L4 moves stay).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from bot.main_red import text as red_text
from bot.routing_check.report import CHECK_NAME
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_shapes import DOWNSTREAM, MAIN_RED_CONFIG, PIPELINE
from tests.real_data import needs_pack, trees

pytestmark = needs_pack

AUDIT_KEY = "torch-stable-abi-audit"
AUDIT_FILE = ".buildkite/test_areas/torch_abi.yaml"
DISTRIBUTED = ".buildkite/test_areas/distributed.yaml"
REAL_TREE = "2026-05-15-d735968f6"
TORCH_ABI = """\
group: Torch ABI
depends_on:
  - image-build
steps:
- label: ":nvidia: (L4) Torch Stable ABI Audit"
  key: torch-stable-abi-audit
  timeout_in_minutes: 5
  source_file_dependencies:
  - .buildkite/check-torch-abi.py
  - csrc/
  - cmake/
  - setup.py
  commands:
  - python3 .buildkite/check-torch-abi.py
"""
# The migration, as #54326 wrote it: the file's dependency on the CPU build, the step on the
# small CPU queue (it needs no GPU to compute, but its queue decides its image).
TORCH_ABI_MIGRATED = TORCH_ABI.replace("  - image-build\n", "  - image-build-cpu\n").replace(
    "  timeout_in_minutes: 5\n", "  timeout_in_minutes: 5\n  device: cpu-small\n"
)
L4_STEPS = ("- label: Distributed Comm Ops\n", "- label: Distributed DP Tests (2 GPUs)\n")
# What vLLM's audit prints when it audits the CPU wheel, then Buildkite's own exit lines.
AUDIT_RED = (
    ">>> Auditing vLLM extension modules for PyTorch stable ABI compliance",
    "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: "
    "_C_AVX2.abi3.so, _C_AVX512.abi3.so",
    "🚨 Error: The command exited with status 1",
    "user command error: exit status 1",
)


def real_files() -> dict[str, str]:
    [tree] = [tree for tree in trees() if tree.name == REAL_TREE]
    return {**tree.files(), AUDIT_FILE: TORCH_ABI}


def migrated(files: dict[str, str]) -> dict[str, str]:
    distributed = files[DISTRIBUTED]
    for label in L4_STEPS:
        assert label in distributed
        distributed = distributed.replace(label, f"{label}  device: l4\n")
    return {AUDIT_FILE: TORCH_ABI_MIGRATED, DISTRIBUTED: distributed}


def audit(state: str, *log: str) -> JobSpec:
    return World.job(AUDIT_KEY, state=state, log=list(log) or ["Torch stable ABI check passed."])


def others() -> list[JobSpec]:
    return [World.job("distributed-comm-ops", log=["ok"])]


async def main_build(w: World, jobs: Sequence[JobSpec]) -> int:
    number = await w.build(None, jobs, commit=w.github.head(DOWNSTREAM), branch="main")
    await w.settle()
    return number


def red_issues(env: Harness) -> list[dict[str, Any]]:
    state = env.sandbox.repo(DOWNSTREAM)
    return [
        {"number": i.number, "title": i.title, "body": i.body or ""}
        for i in state.issues.values()
        if i.pull is None and "red on main" in i.title
    ]


async def test_incident_a_on_vllms_real_tree_gives_exactly_the_human_fix(
    ci_env: Harness,
) -> None:
    files = real_files()
    w = World(ci_env)
    w.downstream(w.upstream(), config=MAIN_RED_CONFIG, files=files)
    w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
    w.person("alice", "write")
    await w.start()
    await main_build(w, [audit("passed"), *others()])

    w.github.commit(DOWNSTREAM, {"docs/usage.md": "# usage\n"}, "Document usage (#54300)")
    w.github.commit(DOWNSTREAM, migrated(files), "Route steps to EKS", branch="eks")
    pull = w.github.open_pull(
        DOWNSTREAM, head="eks", title="[CI] Move L4 steps to EKS, 0-GPU steps to CPU", by="alice"
    )
    culprit = w.github.merge_pull(DOWNSTREAM, int(pull["number"]))
    w.github.commit(DOWNSTREAM, {"vllm/engine.py": "# engine\n"}, "Speed up the engine (#54330)")
    await w.github.flush()
    await w.settle()

    first = await main_build(w, [audit("failed", *AUDIT_RED), *others()])
    assert red_issues(ci_env) == []  # red once is not broken yet
    await main_build(w, [audit("failed", *AUDIT_RED), *others()])

    [issue] = red_issues(ci_env)
    assert issue["title"] == f"`{AUDIT_KEY}` red on main since build #{first}"
    assert culprit[:7] in issue["body"]
    assert "small_cpu_queue_premerge" in issue["body"]
    assert "_C_AVX2.abi3.so" in issue["body"]  # the audit's own line is the signature

    comments = w.comments({"number": int(pull["number"])})
    assert len(comments) == 1
    assert f"#{issue['number']}" in comments[0]

    branch = red_text.revert_branch(AUDIT_KEY)
    [revert] = [
        p for p in ci_env.sandbox.pulls(DOWNSTREAM, state="all") if p["head"]["ref"] == branch
    ]
    main = ci_env.sandbox.head(DOWNSTREAM)
    head = revert["head"]["sha"]
    assert ci_env.sandbox.read_file(DOWNSTREAM, head, AUDIT_FILE) == TORCH_ABI
    before = ci_env.sandbox.read_file(DOWNSTREAM, main, AUDIT_FILE)
    assert before == TORCH_ABI_MIGRATED
    diff = [
        line
        for line in difflib.unified_diff(
            before.splitlines(), TORCH_ABI.splitlines(), lineterm="", n=0
        )
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert diff == ["-  - image-build-cpu", "+  - image-build", "-  device: cpu-small"]
    # The revert passes the routing check: the audit back on its route, nothing else moved.
    repo = ci_env.sandbox.repo(DOWNSTREAM)
    [check] = [r for r in repo.check_runs.values() if r.head_sha == head and r.name == CHECK_NAME]
    assert (check.status, check.conclusion) == ("completed", "success")
    # The rest of the migration stays: the L4 moves are not reverted.
    assert ci_env.sandbox.read_file(DOWNSTREAM, head, DISTRIBUTED) == ci_env.sandbox.read_file(
        DOWNSTREAM, main, DISTRIBUTED
    )
