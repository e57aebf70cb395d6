"""Pins that follow release tags, and files kept in sync, end to end through the stand-in.

cutlass is pinned by release tag in CMakeLists.txt (``set(CUTLASS_REVISION "v4.4.2")``,
fetched shallow); DeepGEMM by commit in its CMake file and again in
``tools/install_deepgemm.sh``, which its CMake file says must be kept in sync.
"""

from __future__ import annotations

from typing import Any

from bot.pins import text as bump_text
from bot.pins.commands import REPLY_UNKNOWN_TAG
from bot.pins.companions import REASON_OUT_OF_SYNC
from bot.pins.release_notes import NOTED
from bot.pins.state import Outcome, PinState
from bot.pins.tags import REASON_DOWNGRADE, REASON_PINNED_TAG_GONE, REASON_TAG_MOVED
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind, pin_key
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_shapes import DOWNSTREAM
from sandbox.vllm_tree import DEEPGEMM_SCRIPT as INSTALL_SCRIPT
from sandbox.vllm_tree import EXTERNAL, vllm_tree_files
from tests.e2e.test_bump_flow import writes

CUTLASS = "NVIDIA/cutlass"
DEEPGEMM = "deepseek-ai/DeepGEMM"
CUTLASS_INSTALLATION = 31
DEEPGEMM_INSTALLATION = 32
DOWNSTREAM_INSTALLATION = 22
MAINTAINER = "maintainer"

DEEPGEMM_CMAKE_FILE = f"{EXTERNAL}/deepgemm.cmake"


def cmakelists(tag: str) -> str:
    return vllm_tree_files(cutlass=tag)["CMakeLists.txt"]


def deepgemm_cmake(sha: str) -> str:
    return vllm_tree_files(deepgemm=sha)[DEEPGEMM_CMAKE_FILE]


def install_script(sha: str) -> str:
    """The install script as a Windows editor saved it: the bot keeps its CRLF."""
    return vllm_tree_files(deepgemm=sha)[INSTALL_SCRIPT].replace("\n", "\r\n")


CONFIG = f"""\
pins:
  - name: cutlass
    upstream: {CUTLASS}
    track: tags
    file: CMakeLists.txt
    dependency: cutlass
  - name: deepgemm
    upstream: {DEEPGEMM}
    file: {DEEPGEMM_CMAKE_FILE}
    dependency: deepgemm
    also:
      - file: {INSTALL_SCRIPT}
        variable: DEEPGEMM_GIT_REF
"""

CUTLASS_BRANCH = bump_text.bump_branch("cutlass")
DEEPGEMM_BRANCH = bump_text.bump_branch("deepgemm")


def seed(env: Harness, *, script_sha: str | None = None) -> dict[str, str]:
    """cutlass tagged v4.4.2 (and older), DeepGEMM with history; the downstream (files of
    ``sandbox.vllm_tree``) pinning
    cutlass v4.4.2 and DeepGEMM's head in both of its files."""
    world = World(env)
    gh = env.sandbox
    world.upstream(CUTLASS, installation_id=CUTLASS_INSTALLATION)
    for n, tag in enumerate(["v4.3.0", "v4.4.0", "v4.4.2"]):
        sha = gh.commit(CUTLASS, {"include/cutlass/version.h": f"// {tag}\n"}, f"Release {n}")
        gh.create_tag(CUTLASS, tag, sha, annotated=n % 2 == 0, message=f"CUTLASS {tag}")
    deepgemm = world.upstream(DEEPGEMM, installation_id=DEEPGEMM_INSTALLATION)
    world.downstream(
        deepgemm,
        config=CONFIG,
        pin_file=DEEPGEMM_CMAKE_FILE,
        pin_template=deepgemm_cmake(deepgemm).replace("{", "{{").replace("}", "}}"),
        files={
            "CMakeLists.txt": cmakelists("v4.4.2"),
            INSTALL_SCRIPT: install_script(script_sha or deepgemm),
        },
        installation_id=DOWNSTREAM_INSTALLATION,
    )
    return {"deepgemm": deepgemm}


def pulls(env: Harness, branch: str) -> list[dict[str, Any]]:
    return [pr for pr in env.sandbox.pulls(DOWNSTREAM, state="all") if pr["head"]["ref"] == branch]


async def release(env: Harness, tag: str, *, subject: str = "Add sm120 kernels (#2210)") -> str:
    sha = await env.sandbox.push_commit(CUTLASS, {"include/cutlass/gemm.h": f"// {tag}\n"}, subject)
    env.sandbox.create_tag(CUTLASS, tag, sha)
    env.sandbox.create_release(CUTLASS, tag, name=f"CUTLASS {tag}", body="Release notes")
    return sha


async def failure(env: Harness, pin: str) -> str | None:
    state = await env.running.services.store.get_state(Kind.BUMP, pin_key(DOWNSTREAM, pin))
    assert state is not None
    assert state["last_result"] == Outcome.FAILED.value
    return str(state["last_failure"])


async def test_a_cutlass_release_opens_a_tag_bump_changing_one_line(env: Harness) -> None:
    seed(env)
    await env.start()
    await release(env, "v4.5.0")
    await env.settle()

    [pull] = pulls(env, CUTLASS_BRANCH)
    assert pull["title"] == "Bump cutlass from v4.4.2 to v4.5.0"
    body = pull["body"]
    assert "([release notes](" in body
    assert "/NVIDIA/cutlass/releases/tag/v4.5.0), [compare](" in body
    assert "the newest `v*` tag of `NVIDIA/cutlass`" in body
    assert "Add sm120 kernels" in body
    assert "/NVIDIA/cutlass/pull/2210)" in body
    after = env.sandbox.read_file(DOWNSTREAM, CUTLASS_BRANCH, "CMakeLists.txt")
    assert after == cmakelists("v4.5.0")  # set(CUTLASS_REVISION ...) only
    assert pulls(env, DEEPGEMM_BRANCH) == []  # a cutlass tag moves no other pin
    assert env.sandbox.violations == []


async def test_pre_releases_and_other_tags_are_not_followed(env: Harness) -> None:
    seed(env)
    await env.start()
    for tag in ["v4.5.0-rc1", "v4.5.0.dev1", "v4.5", "v4.5.0.1", "release-2026-01"]:
        sha = await env.sandbox.push_commit(CUTLASS, {"a.h": f"// {tag}\n"}, tag)
        env.sandbox.create_tag(CUTLASS, tag, sha)
    await env.settle()

    assert pulls(env, CUTLASS_BRANCH) == []
    await release(env, "v4.10.0")  # 10 > 5: versions, not text
    await env.settle()
    [pull] = pulls(env, CUTLASS_BRANCH)
    assert pull["title"] == "Bump cutlass from v4.4.2 to v4.10.0"


async def test_a_moved_tag_is_refused_with_the_reason_and_nothing_written(env: Harness) -> None:
    seed(env)
    await env.start()
    await release(env, "v4.5.0")
    await env.settle()
    [pull] = pulls(env, CUTLASS_BRANCH)
    old = env.sandbox.store.resolve_commit(CUTLASS, "v4.5.0")
    branch_head = env.sandbox.head(DOWNSTREAM, CUTLASS_BRANCH)

    moved = await env.sandbox.push_commit(CUTLASS, {"fix.h": "// retag\n"}, "Fix the release")
    env.sandbox.move_tag(CUTLASS, "v4.5.0", moved)
    await env.settle()  # a moved tag sends only a push: the reconcile tick notices
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await env.settle()

    assert await failure(env, "cutlass") == REASON_TAG_MOVED.format(
        tag="v4.5.0", upstream=CUTLASS, old7=str(old)[:7], new7=moved[:7]
    )
    assert env.sandbox.head(DOWNSTREAM, CUTLASS_BRANCH) == branch_head
    assert pulls(env, CUTLASS_BRANCH)[0]["number"] == pull["number"]


async def test_a_deleted_pinned_tag_is_refused_and_nothing_written(env: Harness) -> None:
    seed(env)
    env.sandbox.delete_tag(CUTLASS, "v4.4.2")
    await env.start()
    await release(env, "v4.5.0")
    await env.settle()

    assert await failure(env, "cutlass") == REASON_PINNED_TAG_GONE.format(
        value="v4.4.2", upstream=CUTLASS
    )
    assert pulls(env, CUTLASS_BRANCH) == []


async def test_bump_to_a_chosen_tag_and_a_downgrade_refused(env: Harness) -> None:
    seed(env)
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    await env.start()
    await release(env, "v4.5.0")
    await release(env, "v4.6.0")
    await env.settle()
    [pull] = pulls(env, CUTLASS_BRANCH)
    number = int(pull["number"])

    env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot bump cutlass --to v4.5.0")
    await env.settle()
    assert current_title(env) == "Bump cutlass from v4.4.2 to v4.5.0"

    env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot bump cutlass --to v4.4.0")
    await env.settle()
    assert await failure(env, "cutlass") == REASON_DOWNGRADE.format(
        newest="v4.4.0", pattern="v*", upstream=CUTLASS, value="v4.4.2"
    )
    assert current_title(env) == "Bump cutlass from v4.4.2 to v4.5.0"  # nothing written

    env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot bump cutlass --to v9.9.9")
    await env.settle()
    replies = [c["body"] for c in env.sandbox.comments(DOWNSTREAM, number)]
    assert any(REPLY_UNKNOWN_TAG.format(tag="v9.9.9", upstream=CUTLASS) in r for r in replies)


def current_title(env: Harness) -> str:
    [pull] = pulls(env, CUTLASS_BRANCH)
    return str(pull["title"])


async def test_a_deepgemm_push_bumps_both_files_in_one_commit(env: Harness) -> None:
    seed(env)
    await env.start()
    new = await env.sandbox.push_commit(DEEPGEMM, {"csrc/jit.cuh": "// v2\n"}, "JIT (#301)")
    await env.settle()

    [pull] = pulls(env, DEEPGEMM_BRANCH)
    assert f"`{INSTALL_SCRIPT}`" in pull["body"]
    head = env.sandbox.head(DOWNSTREAM, DEEPGEMM_BRANCH)
    commit = env.sandbox.store.read_commit(DOWNSTREAM, head)
    assert commit.parents == (env.sandbox.head(DOWNSTREAM),)  # one commit on main
    cmake = env.sandbox.read_file(DOWNSTREAM, DEEPGEMM_BRANCH, DEEPGEMM_CMAKE_FILE)
    assert cmake == deepgemm_cmake(new)
    script = env.sandbox.read_file(DOWNSTREAM, DEEPGEMM_BRANCH, INSTALL_SCRIPT)
    assert script == install_script(new)  # CRLF and quotes kept
    assert env.sandbox.violations == []


async def test_an_out_of_sync_companion_is_refused_naming_the_file(env: Harness) -> None:
    stale = "0" * 40
    pinned = seed(env, script_sha=stale)["deepgemm"]
    await env.start()
    await env.sandbox.push_commit(DEEPGEMM, {"csrc/jit.cuh": "// v2\n"}, "JIT (#301)")
    await env.settle()

    assert pulls(env, DEEPGEMM_BRANCH) == []
    # the line of the script's default, wherever the shape of the script puts it
    line = next(n for n, text in enumerate(install_script(stale).splitlines(), 1) if stale in text)
    assert await failure(env, "deepgemm") == REASON_OUT_OF_SYNC.format(
        file=INSTALL_SCRIPT, value=stale, line=line, pinned=pinned
    )

    await env.sandbox.push_commit(
        DOWNSTREAM, {INSTALL_SCRIPT: install_script(pinned)}, "Sync the script"
    )
    await env.settle()
    [pull] = pulls(env, DEEPGEMM_BRANCH)  # in sync again: the bump goes ahead
    assert pull["state"] == "open"
    store = env.running.services.store
    state = PinState.load(await store.get_state(Kind.BUMP, pin_key(DOWNSTREAM, "deepgemm")))
    assert state.extra["companions"][0]["problem"] is None


async def test_a_tag_without_a_release_is_followed_from_its_create_webhook(env: Harness) -> None:
    seed(env)
    await env.start()
    sha = await env.sandbox.push_commit(CUTLASS, {"a.h": "// 4.5\n"}, "Prepare 4.5 (#2300)")
    await env.settle()
    assert pulls(env, CUTLASS_BRANCH) == []  # a push to a branch moves no tag pin

    env.sandbox.create_tag(CUTLASS, "v4.5.0", sha, annotated=True, message="4.5.0")
    await env.settle()
    [pull] = pulls(env, CUTLASS_BRANCH)
    assert pull["title"] == "Bump cutlass from v4.4.2 to v4.5.0"
    assert "release notes" not in pull["body"]  # upstream published none
    assert "Prepare 4.5" in pull["body"]


async def test_a_release_tagged_on_a_release_branch_and_a_tag_on_a_tree(env: Harness) -> None:
    seed(env)
    await env.start()
    gh = env.sandbox
    base = gh.head(CUTLASS)
    gh.set_ref(CUTLASS, "release/4.5", base)
    fix = gh.commit(
        CUTLASS, {"fix.h": "// 4.5 fix\n"}, "Backport a fix (#2400)", branch="release/4.5"
    )
    tree = gh.store.read_commit(CUTLASS, base).tree
    gh.create_tag(CUTLASS, "v9.0.0", tree)  # not a commit: GitHub lists no such tag
    gh.create_tag(CUTLASS, "v4.5.0", fix, annotated=True, message="4.5.0 from its branch")
    await env.settle()

    [pull] = pulls(env, CUTLASS_BRANCH)
    assert pull["title"] == "Bump cutlass from v4.4.2 to v4.5.0"
    assert "Backport a fix" in pull["body"]
    assert gh.read_file(DOWNSTREAM, CUTLASS_BRANCH, "CMakeLists.txt") == cmakelists("v4.5.0")


async def test_a_release_published_after_the_bump_pr_links_its_notes_once(env: Harness) -> None:
    seed(env)
    await env.start()
    sha = await env.sandbox.push_commit(CUTLASS, {"a.h": "// 4.5\n"}, "Prepare 4.5 (#2300)")
    env.sandbox.create_tag(CUTLASS, "v4.5.0", sha)  # the tag first, its release later
    await env.settle()
    [pull] = pulls(env, CUTLASS_BRANCH)
    assert bump_text.RELEASE_NOTES_LINK not in pull["body"]
    number, head = int(pull["number"]), env.sandbox.head(DOWNSTREAM, CUTLASS_BRANCH)
    env.sandbox.reset_log()

    env.sandbox.create_release(CUTLASS, "v4.5.0", name="CUTLASS 4.5.0", body="Notes")
    await env.settle()

    [after] = pulls(env, CUTLASS_BRANCH)
    url = env.sandbox.releases(CUTLASS)[0]["html_url"]
    assert f"([release notes]({url}), [compare](" in after["body"]
    assert after["body"] == bump_text.with_release_notes(pull["body"], url)  # nothing else
    assert writes(env) == [f"PATCH /repos/{DOWNSTREAM}/pulls/{number}"]  # one edit, no push
    assert env.sandbox.head(DOWNSTREAM, CUTLASS_BRANCH) == head
    key = pin_key(DOWNSTREAM, "cutlass")
    state = await env.running.services.store.get_state(Kind.BUMP, key)
    assert state is not None
    assert state["last_result"] == Outcome.UPDATED.value

    # The release webhook again (a new id) and a reconcile tick: nothing more is asked.
    published = next(
        d
        for d in reversed(env.sandbox.deliveries)
        if d.event == "release" and d.payload["action"] == "published"
    )
    env.sandbox.reset_log()
    await env.sandbox.deliver("release", published.payload)
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await env.settle()
    assert changes(env) == []
    assert [r for r in env.sandbox.requests if r.operation_id == "repos/get-release-by-tag"] == []

    # A rerun that lost the record (a crash after the edit) reads the body: no second edit.
    store = env.running.services.store
    lost = await store.get_state(Kind.BUMP, key)
    assert lost is not None
    assert lost[NOTED] == "v4.5.0"
    await store.put_state(Kind.BUMP, key, {k: v for k, v in lost.items() if k != NOTED})
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 2.0, 300.0)
    await env.settle()
    assert changes(env) == []
    [still] = pulls(env, CUTLASS_BRANCH)
    assert still["body"] == after["body"]
    assert env.sandbox.violations == []


def changes(env: Harness) -> list[str]:
    """The writes, but the tick's query of the bump branches' PRs (a POST that reads)."""
    return [write for write in writes(env) if write != "POST /graphql"]
