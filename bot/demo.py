"""``followup-bot demo``: the whole bump flow, offline, on loopback.

It builds an upstream (flash-attention) and a downstream (vllm) repository in
the GitHub stand-in, starts the real service against it, merges an upstream
change and prints the bump PR the bot opened. Nothing is faked on the bot's
side: it verifies signatures, queues deliveries, authenticates as an App and
writes through the Git Data API exactly as it would against GitHub.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot import bump_text
from bot.pins import pin_diff
from bot.sandbox.github_server import GitHubSandbox
from bot.sandbox.harness import harness

UPSTREAM = "vllm-project/flash-attention"
DOWNSTREAM = "vllm-project/vllm"
PIN_FILE = "cmake/external_projects/vllm_flash_attn.cmake"
UPSTREAM_INSTALLATION = 7001
DOWNSTREAM_INSTALLATION = 7002

FAILED_NO_PR = "demo failed: the bot opened no bump PR (see the log above)"
FAILED_WRONG_PIN = "demo failed: the bump branch pins {found!r}, expected {expected!r}"

CONFIG = f"""\
handle: bot
pins:
  - name: flash-attention
    upstream: {UPSTREAM}
    branch: main
    file: {PIN_FILE}
    dependency: vllm-flash-attn
    owns: ["vllm_flash_attn/*"]
"""

PIN_TEMPLATE = """\
include(FetchContent)

# To build against a local checkout, set VLLM_FLASH_ATTN_SRC_DIR.
if(DEFINED ENV{{VLLM_FLASH_ATTN_SRC_DIR}})
  set(VLLM_FLASH_ATTN_SRC_DIR $ENV{{VLLM_FLASH_ATTN_SRC_DIR}})
endif()

if(VLLM_FLASH_ATTN_SRC_DIR)
  FetchContent_Declare(
          vllm-flash-attn SOURCE_DIR
          ${{VLLM_FLASH_ATTN_SRC_DIR}}
          BINARY_DIR ${{CMAKE_BINARY_DIR}}/vllm-flash-attn
  )
else()
  FetchContent_Declare(
          vllm-flash-attn
          GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git
          GIT_TAG {sha}
          GIT_PROGRESS TRUE
          # Don't share the vllm-flash-attn build between build types
          BINARY_DIR ${{CMAKE_BINARY_DIR}}/vllm-flash-attn
  )
endif()

FetchContent_MakeAvailable(vllm-flash-attn)
"""

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


async def demo_flow(workdir: Path, out: TextIO) -> DemoResult:
    """Run the scenario in ``workdir``; returns the bump PR as the bot left it."""
    async with harness(workdir, repositories=(DOWNSTREAM,), start=False) as env:
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
            files={PIN_FILE: PIN_TEMPLATE.format(sha=pinned), ".github/followup-bot.yml": CONFIG},
            installation_id=DOWNSTREAM_INSTALLATION,
        )
        print(f"upstream {UPSTREAM} at {pinned[:7]}; {DOWNSTREAM} pins it there", file=out)
        await env.start()
        print(
            f"bot serving {env.running.webhook_url}; GitHub stand-in at {sandbox.base_url}",
            file=out,
        )
        for path, content, message in UPSTREAM_MERGES:
            sha = await sandbox.push_commit(UPSTREAM, {path: content}, message)
            print(f"upstream merged {sha[:7]} {message}", file=out)
        await env.settle()
        return _result(sandbox)


def _result(sandbox: GitHubSandbox) -> DemoResult:
    open_pulls = [pr for pr in sandbox.pulls(DOWNSTREAM, state="open")]
    if len(open_pulls) != 1:
        raise DemoFailed(FAILED_NO_PR)
    pull = open_pulls[0]
    branch = bump_text.bump_branch("flash-attention")
    before = sandbox.read_file(DOWNSTREAM, "main", PIN_FILE) or ""
    after = sandbox.read_file(DOWNSTREAM, branch, PIN_FILE) or ""
    expected = sandbox.head(UPSTREAM)
    if f"GIT_TAG {expected}" not in after:
        raise DemoFailed(FAILED_WRONG_PIN.format(found=after, expected=expected))
    return DemoResult(str(pull["title"]), str(pull["body"]), pin_diff(before, after, PIN_FILE))


class DemoFailed(Exception):
    pass


def run_demo(*, keep: Path | None, out: TextIO, err: TextIO) -> int:
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
    return 0
