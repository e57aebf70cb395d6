"""``followup-bot demo``: bump, allowlist follow-up and retry-flaky, offline, on loopback.

Act 1: it builds an upstream (flash-attention) and a downstream (vllm)
repository in the GitHub stand-in, starts the real service against it, and
merges upstream changes, the last one a stable-ABI migration; the bot opens
the bump PR. Act 2: the Buildkite stand-in runs the bump PR's torch ABI audit,
which reports the FA3 allowlist entry as stale; the bot adds the pruning
commit to the bump PR and says why. Act 3: the next build loses a GPU agent
and has a real test failure; a maintainer comments `@bot retry-flaky`, and the
bot retries only the lost job and explains both. Nothing is faked on the bot's
side: it verifies signatures, queues deliveries, authenticates as an App and
writes through the Git Data API exactly as it would against GitHub.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from bot.abi.log import PASSED
from bot.edit.cmake_pin import pin_diff
from bot.pins import text as bump_text
from bot.retry.text import MARKER_STICKY
from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec
from sandbox.github_server import GitHubSandbox
from sandbox.harness import harness
from sandbox.vllm_shapes import (
    ABI_CHECK_FILE,
    ALLOWLIST,
    ALLOWLIST_CONFIG,
    AUDIT_STEP,
    CONFIG,
    DOWNSTREAM,
    DOWNSTREAM_INSTALLATION,
    FA3_ENTRY,
    LANDING_CONFIG,
    PIN_FILE,
    PIN_TEMPLATE,
    PIPELINE,
    STATUS_CONTEXT,
    UPSTREAM,
    UPSTREAM_INSTALLATION,
    abi_check,
    buildkite_log,
    stale_line,
)

FAILED_NO_PR = "demo failed: the bot opened no bump PR (see the log above)"
FAILED_NOT_LANDED = "demo failed: the approved bump PR was not merged (see the log above)"
FAILED_NO_RETRY = "demo failed: the bot did not answer @bot retry-flaky (see the log above)"
MAINTAINER = "maintainer"
RETRY_COMMAND = '@bot retry-flaky --reason "H100 agent went away"'
FAILED_NO_PRUNE = "demo failed: the bump PR still allowlists {entry!r} (see the log above)"
FAILED_WRONG_PIN = "demo failed: the bump branch pins {found!r}, expected {expected!r}"
_BRANCH = "followup-bot/bump/flash-attention"

UPSTREAM_HISTORY = (
    ("hopper/flash_api.cpp", "// FA3 entry points\n", "Add FA3 hopper entry points (#160)"),
    ("setup.py", "# build\n", "Build wheels for CUDA 12.9 (#162)"),
)
UPSTREAM_MERGES = (
    ("csrc/flash_attn/flash_api.cpp", "// varlen fix\n", "Fix varlen softcap (#163)"),
    (
        "hopper/flash_api.cpp",
        "// stable ABI\n",
        "Re-migrate FA3 hopper API to the PyTorch stable ABI (#165)",
    ),
)


@dataclass(frozen=True)
class DemoResult:
    title: str
    body: str
    diff: str
    comment: str
    retry_comment: str = ""
    landed: bool = False


async def demo_flow(workdir: Path, out: TextIO) -> DemoResult:
    """Run the scenario in ``workdir``; returns the bump PR as the bot left it."""
    async with harness(workdir, repositories=(DOWNSTREAM,), start=False, buildkite=True) as env:
        sandbox = env.sandbox
        sandbox.create_repo(
            UPSTREAM,
            files={"README.md": "# flash-attention\n"},
            installation_id=UPSTREAM_INSTALLATION,
        )
        for path, content, message in UPSTREAM_HISTORY:
            sandbox.commit(UPSTREAM, {path: content}, message)
        pinned = sandbox.head(UPSTREAM)
        sandbox.create_repo(
            DOWNSTREAM,
            files={
                PIN_FILE: PIN_TEMPLATE.format(sha=pinned),
                ABI_CHECK_FILE: abi_check(*ALLOWLIST),
                ".github/followup-bot.yml": CONFIG + ALLOWLIST_CONFIG + LANDING_CONFIG,
            },
            installation_id=DOWNSTREAM_INSTALLATION,
            allow_auto_merge=True,
        )
        sandbox.require_checks(DOWNSTREAM, "main", [STATUS_CONTEXT])
        env.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
        print(f"upstream {UPSTREAM} at {pinned[:7]}; {DOWNSTREAM} pins it there", file=out)
        await env.start()
        print(
            f"bot serving {env.running.webhook_url}; GitHub stand-in at {sandbox.base_url}, "
            f"Buildkite stand-in at {env.ci.base_url}",
            file=out,
        )
        print("\n--- act 1: upstream merges", file=out)
        for path, content, message in UPSTREAM_MERGES:
            sha = await sandbox.push_commit(UPSTREAM, {path: content}, message)
            print(f"upstream merged {sha[:7]} {message}", file=out)
        await env.settle()
        pull = _bump_pull(sandbox)
        print(f"bot opened #{pull['number']}: {pull['title']}", file=out)

        print("\n--- act 2: CI audits the bump PR", file=out)
        await _run_audit(env.ci, sandbox, pull, out)
        await env.settle()
        result = _result(sandbox, pull)

        print("\n--- act 3: CI on the pruned head; a maintainer asks for a retry", file=out)
        await _run_gpu_tests(env.ci, sandbox, pull, out)
        sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
        sandbox.comment_as(DOWNSTREAM, int(pull["number"]), MAINTAINER, RETRY_COMMAND)
        print(f"@{MAINTAINER}: {RETRY_COMMAND}", file=out)
        await env.settle()
        result = replace(result, retry_comment=_sticky(sandbox, int(pull["number"])))

        print(
            "\n--- act 4: a maintainer approves; the full CI is green; the bot lands it", file=out
        )
        sandbox.submit_review(DOWNSTREAM, int(pull["number"]), MAINTAINER, "APPROVED")
        print(f"@{MAINTAINER} approved #{pull['number']}; the bot adds `ready`", file=out)
        await env.settle()
        await _full_ci(env.ci, sandbox, pull, out)
        await env.settle()
        sandbox.set_status(DOWNSTREAM, sandbox.head(DOWNSTREAM, _BRANCH), "success")
        print("GitHub: status buildkite/ci is success on the bump PR's head", file=out)
        await env.settle()
        landed = next(p for p in sandbox.pulls(DOWNSTREAM) if p["number"] == pull["number"])
        if not landed.get("merged_at"):
            raise DemoFailed(FAILED_NOT_LANDED)
        merged = sandbox.read_file(DOWNSTREAM, "main", PIN_FILE) or ""
        print(f"#{pull['number']} merged; main now pins {sandbox.head(UPSTREAM)[:7]}", file=out)
        return replace(result, landed="GIT_TAG " + sandbox.head(UPSTREAM) in merged)


def _bump_pull(sandbox: GitHubSandbox) -> dict[str, Any]:
    open_pulls = sandbox.pulls(DOWNSTREAM, state="open")
    if len(open_pulls) != 1:
        raise DemoFailed(FAILED_NO_PR)
    return open_pulls[0]


async def _run_audit(
    ci: BuildkiteSandbox, sandbox: GitHubSandbox, pull: dict[str, Any], out: TextIO
) -> None:
    """What vLLM's CI does on the bump PR: its torch ABI audit finds FA3 stable now."""
    branch = bump_text.bump_branch("flash-attention")
    audit = JobSpec(
        step_key=AUDIT_STEP,
        name=":nvidia: (L4) Torch Stable ABI Audit",
        state="failed",
        exit_status=1,
        log=buildkite_log(stale_line(FA3_ENTRY)),
    )
    build = ci.create_build(
        PIPELINE,
        commit=sandbox.head(DOWNSTREAM, branch),
        branch=branch,
        jobs=[JobSpec(step_key="image-build", name=":docker: Build image"), audit],
        message=str(pull["title"]),
        pull_request={"id": str(pull["number"]), "base": "main", "repository": DOWNSTREAM},
    )
    print(f"Buildkite build #{build['number']} of the bump PR: the audit job printed", file=out)
    print(f"  {stale_line(FA3_ENTRY)}", file=out)
    await ci.finish_build(PIPELINE, int(build["number"]))


async def _full_ci(
    ci: BuildkiteSandbox, sandbox: GitHubSandbox, pull: dict[str, Any], out: TextIO
) -> None:
    """The full CI's clean build of the head, which `ready` started: landing judges the
    head on it (the earlier builds ran the reduced pipeline)."""
    build = ci.create_build(
        PIPELINE,
        commit=sandbox.head(DOWNSTREAM, _BRANCH),
        branch=_BRANCH,
        jobs=[
            JobSpec(step_key=AUDIT_STEP, name="Torch Stable ABI Audit", log=buildkite_log(PASSED))
        ],
        pull_request={"id": str(pull["number"]), "base": "main", "repository": DOWNSTREAM},
    )
    await ci.finish_build(PIPELINE, int(build["number"]))
    print(f"Buildkite build #{build['number']} (the full CI, after `ready`): passed", file=out)


async def _run_gpu_tests(
    ci: BuildkiteSandbox, sandbox: GitHubSandbox, pull: dict[str, Any], out: TextIO
) -> None:
    """The next build: the audit passes; one GPU job loses its agent, one fails for real."""
    branch = bump_text.bump_branch("flash-attention")
    jobs = [
        JobSpec(step_key=AUDIT_STEP, name="Torch Stable ABI Audit", log=buildkite_log(PASSED)),
        JobSpec(step_key="gpu-attention", name="Attention (H100)", state="failed", exit_status=-1),
        JobSpec(
            step_key="models",
            name="Models (L4)",
            state="failed",
            exit_status=1,
            log=buildkite_log(
                "FAILED tests/models/test_llama.py::test_generate - AssertionError: tokens differ"
            ),
        ),
    ]
    ci.set_retry_outcome("gpu-attention", state="passed")
    build = ci.create_build(
        PIPELINE,
        commit=sandbox.head(DOWNSTREAM, branch),
        branch=branch,
        jobs=jobs,
        pull_request={"id": str(pull["number"]), "base": "main", "repository": DOWNSTREAM},
    )
    print(f"Buildkite build #{build['number']}: 2 jobs failed", file=out)
    await ci.finish_build(PIPELINE, int(build["number"]))


def _sticky(sandbox: GitHubSandbox, number: int) -> str:
    found = [c for c in sandbox.comments(DOWNSTREAM, number) if MARKER_STICKY in c["body"]]
    if not found:
        raise DemoFailed(FAILED_NO_RETRY)
    return str(found[-1]["body"])


def _result(sandbox: GitHubSandbox, pull: dict[str, Any]) -> DemoResult:
    branch = bump_text.bump_branch("flash-attention")
    diffs = []
    for path in (PIN_FILE, ABI_CHECK_FILE):
        before = sandbox.read_file(DOWNSTREAM, "main", path) or ""
        after = sandbox.read_file(DOWNSTREAM, branch, path) or ""
        diffs.append(pin_diff(before, after, path))
    pinned = sandbox.read_file(DOWNSTREAM, branch, PIN_FILE) or ""
    expected = sandbox.head(UPSTREAM)
    if f"GIT_TAG {expected}" not in pinned:
        raise DemoFailed(FAILED_WRONG_PIN.format(found=pinned, expected=expected))
    if FA3_ENTRY in (sandbox.read_file(DOWNSTREAM, branch, ABI_CHECK_FILE) or ""):
        raise DemoFailed(FAILED_NO_PRUNE.format(entry=FA3_ENTRY))
    comments = sandbox.comments(DOWNSTREAM, int(pull["number"]))
    current = next(p for p in sandbox.pulls(DOWNSTREAM) if p["number"] == pull["number"])
    return DemoResult(
        str(current["title"]),
        str(current["body"]),
        "".join(diffs),
        str(comments[-1]["body"]) if comments else "",
    )


class DemoFailed(Exception):
    pass


KEEP_NOT_NEW = (
    "--keep {path}: {what}; give a new or empty directory (the demo creates its "
    "repositories and database there)"
)
KEEP_IS_A_FILE = "it is a file"
KEEP_NOT_EMPTY = "it is not empty"
EXIT_USAGE = 2


def _keep_problem(keep: Path) -> str | None:
    if keep.exists() and not keep.is_dir():
        return KEEP_NOT_NEW.format(path=keep, what=KEEP_IS_A_FILE)
    if keep.is_dir() and any(keep.iterdir()):
        return KEEP_NOT_NEW.format(path=keep, what=KEEP_NOT_EMPTY)
    return None


def run_demo(*, keep: Path | None, out: TextIO, err: TextIO) -> int:
    problem = _keep_problem(keep) if keep is not None else None
    if problem is not None:
        print(problem, file=err)
        return EXIT_USAGE
    try:
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            result = asyncio.run(demo_flow(keep, out))
        else:
            with tempfile.TemporaryDirectory(prefix="followup-bot-demo-") as tmp:
                result = asyncio.run(demo_flow(Path(tmp), out))
    except (DemoFailed, TimeoutError) as exc:
        print(str(exc) or "demo failed: timed out waiting for the bot", file=err)
        return 1
    print(f"\n=== {result.title}\n\n{result.body}\n\n=== diff\n{result.diff}", file=out)
    print(f"=== the bot's comment on the PR\n\n{result.comment}\n", file=out)
    print(f"=== the bot's retry-flaky comment\n\n{result.retry_comment}\n", file=out)
    if result.landed:
        print("=== landed: the bump is merged and main pins the new commit", file=out)
    return 0
