"""Every literal of a pin, end to end through the stand-in, on vLLM's real shapes.

- cutlass in vLLM's early-2025 ``CMakeLists.txt``: the tag is written twice, as
  ``GIT_TAG v3.8.0`` and in ``set(CUTLASS_REVISION "v3.8.0" CACHE STRING ...)``, kept
  in sync by comments. A release bumps both in one commit.
- DeepGEMM with the documented companion ``{file: tools/install_deepgemm.sh,
  variable: DEEPGEMM_GIT_REF}`` on the real script, which assigns the variable twice:
  the default, and ``DEEPGEMM_GIT_REF="$2"`` in its ``--ref)`` option branch. A push
  bumps the default and leaves the option branch alone.

The downstream's files are ``tests.pin_literal_shapes``: our own words, vLLM's shapes.
"""

from __future__ import annotations

from typing import Any

from bot.pins import text as bump_text
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_shapes import DOWNSTREAM
from tests.pin_literal_shapes import (
    CUTLASS_FILE,
    DEEPGEMM_CMAKE_FILE,
    DEEPGEMM_SCRIPT_FILE,
    cutlass_cmakelists,
    deepgemm_cmake,
    install_deepgemm,
)

CUTLASS = "NVIDIA/cutlass"
DEEPGEMM = "deepseek-ai/DeepGEMM"
CUTLASS_INSTALLATION = 41
DEEPGEMM_INSTALLATION = 42
DOWNSTREAM_INSTALLATION = 22

# The docs' example, word for word.
CONFIG = f"""\
pins:
  - name: cutlass
    upstream: {CUTLASS}
    track: tags
    file: {CUTLASS_FILE}
    dependency: cutlass
  - name: deepgemm
    upstream: {DEEPGEMM}
    file: {DEEPGEMM_CMAKE_FILE}
    dependency: deepgemm
    also:
      - file: {DEEPGEMM_SCRIPT_FILE}
        variable: DEEPGEMM_GIT_REF
"""

CUTLASS_BRANCH = bump_text.bump_branch("cutlass")
DEEPGEMM_BRANCH = bump_text.bump_branch("deepgemm")
OPTION_BRANCH = '            DEEPGEMM_GIT_REF="$2"\n'


def seed(env: Harness) -> str:
    """cutlass tagged up to v3.8.0, DeepGEMM with history; the downstream pins cutlass
    v3.8.0 (twice) and DeepGEMM's head (in its CMake file and its install script).
    Returns the pinned DeepGEMM sha."""
    world = World(env)
    gh = env.sandbox
    world.upstream(CUTLASS, installation_id=CUTLASS_INSTALLATION)
    for n, tag in enumerate(["v3.6.0", "v3.7.0", "v3.8.0"]):
        sha = gh.commit(CUTLASS, {"include/cutlass/version.h": f"// {tag}\n"}, f"Release {n}")
        gh.create_tag(CUTLASS, tag, sha)
    pinned = world.upstream(DEEPGEMM, installation_id=DEEPGEMM_INSTALLATION)
    world.downstream(
        pinned,
        config=CONFIG,
        pin_file=DEEPGEMM_CMAKE_FILE,
        pin_template=deepgemm_cmake(pinned).replace("{", "{{").replace("}", "}}"),
        files={
            CUTLASS_FILE: cutlass_cmakelists("v3.8.0"),
            DEEPGEMM_SCRIPT_FILE: install_deepgemm(pinned),
        },
        installation_id=DOWNSTREAM_INSTALLATION,
    )
    return pinned


def pulls(env: Harness, branch: str) -> list[dict[str, Any]]:
    return [pr for pr in env.sandbox.pulls(DOWNSTREAM, state="all") if pr["head"]["ref"] == branch]


def changed_lines(old: str, new: str) -> list[tuple[str, str]]:
    pairs = zip(old.splitlines(), new.splitlines(), strict=True)
    return [(a, b) for a, b in pairs if a != b]


async def test_a_cutlass_release_bumps_both_literals_of_the_tag(env: Harness) -> None:
    seed(env)
    await env.start()
    sha = await env.sandbox.push_commit(CUTLASS, {"include/cutlass/gemm.h": "// 3.9\n"}, "3.9")
    env.sandbox.create_tag(CUTLASS, "v3.9.0", sha)
    env.sandbox.create_release(CUTLASS, "v3.9.0", name="CUTLASS 3.9.0", body="Notes")
    await env.settle()

    [pull] = pulls(env, CUTLASS_BRANCH)
    assert pull["title"] == "Bump cutlass from v3.8.0 to v3.9.0"
    after = env.sandbox.read_file(DOWNSTREAM, CUTLASS_BRANCH, CUTLASS_FILE)
    assert after == cutlass_cmakelists("v3.9.0")
    assert changed_lines(cutlass_cmakelists("v3.8.0"), after) == [
        (
            '  set(CUTLASS_REVISION "v3.8.0" CACHE STRING "The CUTLASS revision to build with")',
            '  set(CUTLASS_REVISION "v3.9.0" CACHE STRING "The CUTLASS revision to build with")',
        ),
        ("        GIT_TAG v3.8.0", "        GIT_TAG v3.9.0"),
    ]
    head = env.sandbox.head(DOWNSTREAM, CUTLASS_BRANCH)
    assert env.sandbox.store.read_commit(DOWNSTREAM, head).parents == (
        env.sandbox.head(DOWNSTREAM),
    )  # both lines in one commit on main
    assert pulls(env, DEEPGEMM_BRANCH) == []
    assert env.sandbox.violations == []


async def test_a_deepgemm_push_bumps_the_real_scripts_default_not_its_option(
    env: Harness,
) -> None:
    pinned = seed(env)
    await env.start()
    new = await env.sandbox.push_commit(DEEPGEMM, {"csrc/jit.cuh": "// v2\n"}, "JIT (#301)")
    await env.settle()

    [pull] = pulls(env, DEEPGEMM_BRANCH)
    assert pull["state"] == "open"
    assert f"`{DEEPGEMM_SCRIPT_FILE}`" in pull["body"]
    cmake = env.sandbox.read_file(DOWNSTREAM, DEEPGEMM_BRANCH, DEEPGEMM_CMAKE_FILE)
    assert cmake == deepgemm_cmake(new)
    script = env.sandbox.read_file(DOWNSTREAM, DEEPGEMM_BRANCH, DEEPGEMM_SCRIPT_FILE)
    assert script == install_deepgemm(new)
    assert changed_lines(install_deepgemm(pinned), script) == [
        (f'DEEPGEMM_GIT_REF="{pinned}"', f'DEEPGEMM_GIT_REF="{new}"')
    ]
    assert OPTION_BRANCH in script  # the --ref) branch is left alone
    head = env.sandbox.head(DOWNSTREAM, DEEPGEMM_BRANCH)
    commit = env.sandbox.store.read_commit(DOWNSTREAM, head)
    assert commit.parents == (env.sandbox.head(DOWNSTREAM),)  # one commit, both files
    assert pulls(env, CUTLASS_BRANCH) == []
    assert env.sandbox.violations == []
