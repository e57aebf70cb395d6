"""`@bot bump`, `recreate`, `pause`, `resume` end to end, with allowed and refused users."""

from __future__ import annotations

import pytest

from bot.github import neutralise
from bot.pins import text as bump_text
from bot.pins.state import Outcome
from bot.store.kinds import Kind
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream, writes

BRANCH = bump_text.bump_branch("flash-attention")
MAINTAINER, READER = "maintainer", "reader"


def bot_replies(env: Harness, number: int) -> list[str]:
    return [
        str(c["body"])
        for c in env.sandbox.comments(DOWNSTREAM, number)
        if c["user"]["type"] == "Bot"
    ]


async def setup(env: Harness) -> int:
    """A repo with a bump PR open; returns its number."""
    seed(env)
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    env.sandbox.set_permission(DOWNSTREAM, READER, "read")
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)
    return int(pull["number"])


async def say(env: Harness, number: int, login: str, body: str) -> str:
    before = len(bot_replies(env, number))
    env.sandbox.comment_as(DOWNSTREAM, number, login, body)
    await env.settle()
    replies = bot_replies(env, number)
    assert len(replies) == before + 1, replies
    return replies[-1]


async def test_pause_stops_changes_and_resume_catches_up(env: Harness) -> None:
    number = await setup(env)
    reply = await say(env, number, MAINTAINER, "@bot pause flash-attention")
    assert reply.startswith("@maintainer Paused `flash-attention`")
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    newer = await merge_upstream(env, 2)
    await env.settle()
    assert env.sandbox.head(DOWNSTREAM, BRANCH) == head  # paused: nothing changed
    state = await env.running.services.store.get_state(Kind.BUMP, f"{DOWNSTREAM}#flash-attention")
    assert state is not None
    assert state["last_result"] == Outcome.PAUSED

    reply = await say(env, number, MAINTAINER, "@bot resume flash-attention")
    assert "Resumed `flash-attention`: updated" in reply
    assert f"GIT_TAG {newer}" in (env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) or "")


@pytest.mark.parametrize(
    "command",
    [
        "@bot pause flash-attention",
        "@bot resume flash-attention",
        "@bot bump flash-attention",
        "@bot recreate",
    ],
)
async def test_pin_commands_need_write_access(env: Harness, command: str) -> None:
    number = await setup(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    env.sandbox.reset_log()
    reply = await say(env, number, READER, command)
    # the command is quoted as inert code: its "@bot" pings nobody
    assert reply.startswith(f"@reader I did not run {neutralise.code(command)}")
    assert "write access" in reply
    assert [w for w in writes(env) if "/comments" not in w and "/reactions" not in w] == []
    assert env.sandbox.head(DOWNSTREAM, BRANCH) == head


async def test_bump_to_a_chosen_commit_and_back_to_head_when_upstream_moves(
    env: Harness,
) -> None:
    number = await setup(env)
    chosen = env.sandbox.head(UPSTREAM)
    newest = await merge_upstream(env, 2)
    await env.settle()
    assert f"GIT_TAG {newest}" in (env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) or "")

    reply = await say(env, number, MAINTAINER, f"@bot bump flash-attention --to {chosen[:10]}")
    assert "updated #" in reply
    assert env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) == PIN_TEMPLATE.format(sha=chosen)

    later = await merge_upstream(env, 3)  # upstream moves: back to following its head
    await env.settle()
    assert env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) == PIN_TEMPLATE.format(sha=later)


async def test_bump_refuses_a_commit_not_on_the_branch(env: Harness) -> None:
    number = await setup(env)
    stray = env.sandbox.commit(UPSTREAM, {"x": "1\n"}, "Experiment", branch="experiment")
    reply = await say(env, number, MAINTAINER, f"@bot bump flash-attention --to {stray}")
    assert "is not a commit on `vllm-project/flash-attention@main`" in reply
    reply = await say(env, number, MAINTAINER, "@bot bump flash-attention --to nothex")
    assert "needs a commit sha" in reply
    reply = await say(env, number, MAINTAINER, "@bot bump flashmla")
    assert "there is no pin named `flashmla`" in reply


async def test_recreate_takes_the_branch_back_from_a_human(env: Harness) -> None:
    number = await setup(env)
    human = await env.sandbox.push_commit(
        DOWNSTREAM, {"notes.md": "wip\n"}, "WIP", branch=BRANCH, author=("Grace", "g@example.com")
    )
    await env.settle()
    assert env.sandbox.head(DOWNSTREAM, BRANCH) == human

    reply = await say(env, number, MAINTAINER, "@bot recreate")
    assert "updated #" in reply
    assert env.sandbox.head(DOWNSTREAM, BRANCH) != human
    assert env.sandbox.read_file(DOWNSTREAM, BRANCH, "notes.md") is None
    await merge_upstream(env, 2)  # and the bot keeps it updated again
    await env.settle()
    assert "(2 commits)" in bump_pulls(env)[0]["title"]


async def test_help_lists_every_command(env: Harness) -> None:
    number = await setup(env)
    reply = await say(env, number, READER, "@bot help")
    for usage in ("retry-flaky", "bump PIN", "recreate", "pause PIN", "resume PIN"):
        assert usage in reply
