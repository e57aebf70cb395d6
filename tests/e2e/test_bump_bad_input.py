"""Bad input and hostile conditions: a clear reason, no partial write, the service keeps serving."""

from __future__ import annotations

import hashlib
import hmac
import json

import aiohttp

from bot.pins.bump import REASON_UNKNOWN_PIN
from bot.pins.facts import REASON_OTHER_REPOSITORY
from bot.pins.state import Outcome
from bot.store.kinds import Kind
from bot.store.protocol import DeliveryStatus
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream, writes


async def pin_state(env: Harness) -> dict[str, object]:
    state = await env.running.services.store.get_state(Kind.BUMP, f"{DOWNSTREAM}#flash-attention")
    assert state is not None
    return state


async def start_then_merge(env: Harness) -> None:
    """Start the bot, forget what starting asked of GitHub, then one upstream merge."""
    await env.start()
    env.sandbox.reset_log()
    await merge_upstream(env, 1)
    await env.settle()


async def test_broken_config_is_reported_and_nothing_is_written(env: Harness) -> None:
    seed(env, config=CONFIG.replace("upstream:", "upstreem:"))
    await start_then_merge(env)

    assert writes(env) == []
    error = await env.running.services.store.get_state(Kind.CONFIG, DOWNSTREAM)
    assert error is not None
    assert "unknown key 'upstreem'" in str(error["error"])
    assert ".github/followup-bot.yml:" in str(error["error"])


async def test_pin_the_editor_cannot_parse_is_refused_without_writes(env: Harness) -> None:
    seed(env, pin_template=PIN_TEMPLATE.replace("GIT_TAG {sha}", "GIT_TAG v${{FA_VERSION}}-{sha}"))
    await start_then_merge(env)

    assert writes(env) == []
    state = await pin_state(env)
    assert state["last_result"] == Outcome.FAILED
    assert "is not a form the bot can edit" in str(state["last_failure"])


async def test_upstream_force_push_that_orphans_the_pin_is_not_guessed(env: Harness) -> None:
    pinned = seed(env)
    await env.start()
    # upstream rewrites history: main restarts from the pin's parent, without the pin
    [root] = env.sandbox.store.read_commit(UPSTREAM, pinned).parents
    env.sandbox.set_ref(UPSTREAM, "main", root)
    await env.settle()
    env.sandbox.reset_log()
    await merge_upstream(env, 1)
    await env.settle()

    assert writes(env) == []
    state = await pin_state(env)
    assert state["last_result"] == Outcome.FAILED
    assert f"pinned {pinned[:7]} is not an ancestor" in str(state["last_failure"])


async def test_github_5xx_on_a_write_is_retried_into_one_pr(env: Harness) -> None:
    seed(env)
    await env.start()
    env.sandbox.faults.fail_next(1, status=502, operation="pulls/create")
    await merge_upstream(env, 1)
    await env.settle()

    [pull] = bump_pulls(env)
    assert pull["state"] == "open"
    assert [r.status for r in env.sandbox.requests if r.operation_id == "pulls/create"] == [
        502,
        201,
    ]


async def test_secondary_rate_limit_is_waited_out(env: Harness) -> None:
    seed(env)
    await env.start()
    env.sandbox.faults.rate_limit_next(
        1, kind="secondary", operation="git/create-tree", retry_after=0
    )
    await merge_upstream(env, 1)
    await env.settle()

    assert len(bump_pulls(env, "open")) == 1
    statuses = [r.status for r in env.sandbox.requests if r.operation_id == "git/create-tree"]
    assert statuses == [403, 201]


async def test_malformed_payload_fails_permanently_and_service_keeps_serving(
    env: Harness,
) -> None:
    seed(env)
    await env.start()
    # signed correctly, but not a payload GitHub sends (the stand-in would refuse to send it)
    status = await post_signed(env, "push", {"ref": "refs/heads/main"}, "bad-1")
    [record] = await env.settle(expect_failures=True)

    assert status == 202
    assert record.delivery.delivery_id == "bad-1"
    assert record.status is DeliveryStatus.FAILED
    assert "payload has no repository.full_name" in str(record.last_error)
    await merge_upstream(env, 1)  # still serving
    await env.settle()
    assert len(bump_pulls(env)) == 1


async def test_unknown_event_is_accepted_and_ignored(env: Harness) -> None:
    seed(env)
    await env.start()
    env.sandbox.reset_log()
    status = await post_signed(env, "star", {"action": "created"}, "star-1")
    await env.settle()
    record = await env.running.services.store.get_delivery("star-1")

    assert status == 202
    assert record is not None
    assert record.status is DeliveryStatus.DONE
    assert env.sandbox.requests == []


async def test_pr_closed_by_a_human_is_not_reopened_for_the_same_target(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)
    push = _last_upstream_push(env)
    env.sandbox.close_pull(DOWNSTREAM, pull["number"], by="maintainer")
    await env.settle()
    env.sandbox.reset_log()
    await env.sandbox.deliver("push", push)
    await env.settle()
    assert writes(env) == []

    newer = await merge_upstream(env, 2)
    await env.settle()
    reopened = bump_pulls(env, "open")
    assert len(reopened) == 1
    assert reopened[0]["number"] != pull["number"]
    assert reopened[0]["title"].endswith(f"to {newer[:7]} (2 commits)")


async def test_pin_ahead_of_upstream_closes_the_bump_pr(env: Harness) -> None:
    seed(env)
    await env.start()
    new = await merge_upstream(env, 1)
    await env.settle()
    # downstream moves the pin to an upstream commit on another branch, ahead of main
    ahead = env.sandbox.commit(UPSTREAM, {"y": "2\n"}, "Feature", branch="main")
    env.sandbox.set_ref(UPSTREAM, "main", new)  # upstream main stays at `new`
    await env.sandbox.push_commit(
        DOWNSTREAM, {PIN_FILE: PIN_TEMPLATE.format(sha=ahead)}, "Pin ahead"
    )
    await env.settle()

    [closed] = bump_pulls(env)
    assert closed["state"] == "closed"
    [comment] = env.sandbox.comments(DOWNSTREAM, closed["number"])
    assert "which is ahead of" in comment["body"]


async def test_paused_pin_is_looked_at_but_never_changed(env: Harness) -> None:
    seed(env, config=CONFIG.replace("    owns:", "    paused: true\n    owns:"))
    await start_then_merge(env)

    assert writes(env) == []
    assert (await pin_state(env))["last_result"] == Outcome.PAUSED
    assert bump_pulls(env) == []


async def post_signed(
    env: Harness, event: str, payload: dict[str, object], delivery_id: str
) -> int:
    body = json.dumps(payload).encode()
    digest = hmac.new(env.settings.webhook_secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": f"sha256={digest}",
        "Content-Type": "application/json",
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(env.running.webhook_url, data=body, headers=headers) as response,
    ):
        return response.status


def _last_upstream_push(env: Harness) -> dict[str, object]:
    push = next(
        d for d in reversed(env.sandbox.deliveries) if d.event == "push" and d.repo == UPSTREAM
    )
    return json.loads(json.dumps(push.payload))  # type: ignore[no-any-return]


async def test_a_shallow_pin_is_not_given_a_commit_sha(env: Harness) -> None:
    shallow = PIN_TEMPLATE.replace("GIT_TAG {sha}", "GIT_TAG {sha}\n  GIT_SHALLOW TRUE")
    seed(env, pin_template=shallow)
    await start_then_merge(env)

    assert writes(env) == []
    assert bump_pulls(env) == []
    state = await pin_state(env)
    assert state["last_result"] == Outcome.FAILED
    assert "GIT_SHALLOW TRUE, which cannot fetch a commit sha" in str(state["last_failure"])


async def test_a_pin_of_another_repository_is_not_bumped_from_this_upstream(
    env: Harness,
) -> None:
    fork = PIN_TEMPLATE.replace(f"github.com/{UPSTREAM}", "github.com/someone/fork")
    assert fork != PIN_TEMPLATE
    seed(env, pin_template=fork)
    await start_then_merge(env)

    assert writes(env) == []
    state = await pin_state(env)
    assert state["last_failure"] == REASON_OTHER_REPOSITORY.format(
        file=PIN_FILE,
        repository="https://github.com/someone/fork.git",
        upstream=UPSTREAM,
    )


async def test_upstream_rewritten_under_an_open_bump_pr_is_said_once(env: Harness) -> None:
    pinned = seed(env)
    await env.start()
    first = await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)
    head = env.sandbox.head(DOWNSTREAM, pull["head"]["ref"])
    # upstream force-pushes: main goes back to the pin and grows another way
    env.sandbox.set_ref(UPSTREAM, "main", pinned)
    await merge_upstream(env, 2)
    await env.settle()
    await merge_upstream(env, 3)  # and again: nothing more is said
    await env.settle()

    [still] = bump_pulls(env)
    assert still["state"] == "open"
    assert env.sandbox.head(DOWNSTREAM, still["head"]["ref"]) == head  # left alone
    [comment] = env.sandbox.comments(DOWNSTREAM, int(pull["number"]))
    assert f"`{first[:7]}`, the commit this PR pins, is no longer on" in comment["body"]
    state = await pin_state(env)
    assert state["last_result"] == Outcome.FAILED
    assert "no longer has on" in str(state["last_failure"])  # what the dashboard shows

    # a human closes it: the next upstream commit gets a fresh bump from the new history
    env.sandbox.close_pull(DOWNSTREAM, int(pull["number"]))
    await env.settle()
    newest = await merge_upstream(env, 4)
    await env.settle()
    fresh = [p for p in bump_pulls(env) if p["state"] == "open"]
    assert [newest[:7] in p["title"] for p in fresh] == [True]


async def test_a_pin_upstream_does_not_know_is_said_on_a_push(env: Harness) -> None:
    seed(env)
    unknown = "f" * 40
    env.sandbox.commit(DOWNSTREAM, {PIN_FILE: PIN_TEMPLATE.format(sha=unknown)}, "Pin by hand")
    await start_then_merge(env)

    assert writes(env) == []
    state = await pin_state(env)
    assert state["last_failure"] == REASON_UNKNOWN_PIN.format(value=unknown, upstream=UPSTREAM)
