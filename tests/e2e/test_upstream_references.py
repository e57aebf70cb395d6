"""Issue references in upstream commit subjects point upstream, never downstream."""

from __future__ import annotations

import re

from bot.github.neutralise import WORD_JOINER
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM, UPSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls


async def test_every_bare_reference_in_a_subject_links_to_the_upstream(env: Harness) -> None:
    seed(env)
    await env.start()
    await env.sandbox.push_commit(
        UPSTREAM, {"csrc/m.cu": "// m\n"}, "Merge pull request #130 from dev/fix-#2 (see #131)"
    )
    await env.settle()

    [pull] = bump_pulls(env)
    body = str(pull["body"])
    for number in (130, 131):
        link = rf"\[{UPSTREAM}#{WORD_JOINER}{number}\]\([^)\s]*/{UPSTREAM}/issues/{number}\)"
        assert re.search(link, body), body
    assert f"fix-#{WORD_JOINER}2" in body  # part of a branch name: no link, and inert
    # nothing in the body is a bare reference GitHub would resolve in the downstream repo
    assert "#130" not in body.replace(f"{UPSTREAM}#", "").replace("/issues/130", "")
    assert DOWNSTREAM not in body


LONG_HISTORY = 260  # past the 250 commits GitHub's compare lists


async def test_a_long_upstream_history_lists_the_newest_commits(env: Harness) -> None:
    seed(env)
    for n in range(1, LONG_HISTORY):
        env.sandbox.commit(UPSTREAM, {"csrc/long.cu": f"// {n}\n"}, f"Old change {n}")
    await env.start()  # those pushes happened while nobody listened; this one is heard
    head = await env.sandbox.push_commit(UPSTREAM, {"csrc/last.cu": "// last\n"}, "Newest change")
    await env.settle()

    [pull] = bump_pulls(env)
    body = str(pull["body"])
    assert f"### Upstream commits ({LONG_HISTORY})" in body
    listed = [line for line in body.splitlines() if line.startswith("- 20")]
    assert "Newest change" in listed[0]  # newest first
    assert head[:7] in listed[0]
    assert f"Old change {LONG_HISTORY - 49}" in listed[-1]  # the 50 newest, no older
    assert len(listed) == 50
    assert f"… and {LONG_HISTORY - 50} more" in body
    assert str(LONG_HISTORY) in str(pull["title"])
