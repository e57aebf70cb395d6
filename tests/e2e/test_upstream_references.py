"""Issue references in upstream commit subjects point upstream, never downstream."""

from __future__ import annotations

import re

from bot.demo import DOWNSTREAM, UPSTREAM
from bot.neutralise import WORD_JOINER
from bot.sandbox.harness import Harness
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
