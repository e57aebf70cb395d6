"""Seeded fuzzing of every event the bot handles, through the real dispatcher.

Each round takes a well-formed payload of one registered event, replaces one
field anywhere in it (or drops it, or adds one) with a random JSON value, and
dispatches it as a stored delivery of the right source. The only acceptable
outcomes are success and ``PermanentError``: never another exception, never a
request to GitHub or Buildkite (the payloads name a repository the bot does not
serve, so whatever reads correctly stops before any I/O).
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

from bot.core.errors import PermanentError
from bot.core.sources import BUILDKITE_PREFIX, INTERNAL_PREFIX, Source
from bot.service.app import DEFAULT_ROUTERS
from bot.service.dispatch import build_dispatcher
from bot.store.protocol import Delivery
from sandbox.harness import Harness
from tests.e2e.test_malformed_payloads import CASES, PAYLOADS, registrations

ROUNDS = 600
FAILED_AS = re.compile(r"(?:failed: |; )[a-z][\w.-]*: (\w+): ")
SEED = 20261202


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    leaves: list[Any] = [
        None,
        rng.choice([True, False]),
        rng.randint(-(2**40), 2**40),
        rng.random() * 1e6,
        rng.choice(["", "x", "refs/heads/main", "@bot help", "🙂", "a/b", "\x00", "9" * 30]),
        rng.choice([[], {}]),
    ]
    if kind < 6:
        return leaves[kind]
    if kind < 8:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["id", "name", "login", "sha"]): random_json(rng, depth + 1)}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def mutate(rng: random.Random, payload: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(payload)
    *parents, last = rng.choice(paths(result))
    target: Any = result
    for part in parents:
        target = target[part]
    roll = rng.random()
    if roll < 0.2 and isinstance(target, dict):
        del target[last]
    elif roll < 0.3 and isinstance(target, dict):
        target[f"extra_{rng.randrange(9)}"] = random_json(rng)
    else:
        target[last] = random_json(rng)
    return result


def source_and_name(event: str) -> tuple[str, str]:
    """The source that may send a routed event name, and the name it sends."""
    if event.startswith(BUILDKITE_PREFIX):
        return Source.BUILDKITE, event.removeprefix(BUILDKITE_PREFIX)
    if event.startswith(INTERNAL_PREFIX):
        return Source.INTERNAL, event
    return Source.GITHUB, event


async def test_random_payloads_end_in_success_or_one_permanent_error(ci_env: Harness) -> None:
    await ci_env.start()
    await ci_env.running.inbox.stop()  # this test is the only one to run the deliveries
    dispatch = build_dispatcher(DEFAULT_ROUTERS, ci_env.running.services)
    rng = random.Random(SEED)
    targets = [(h, e, d) for h, e, d in registrations() if h in CASES]
    succeeded, failures = 0, []
    for n in range(ROUNDS):
        handler, event, detail = rng.choice(targets)
        base = {**copy.deepcopy(PAYLOADS[CASES[handler][0]]), **detail}
        data = mutate(rng, base)
        source, name = source_and_name(event)
        body = json.dumps(data).encode()
        delivery = Delivery(f"fuzz-{n}", source, name, body, f"fuzz-{n}", 0.0)
        await ci_env.running.services.store.enqueue(delivery)  # as the intake stores it
        try:
            await dispatch(delivery)
        except PermanentError as exc:
            failures.append(str(exc))
        else:
            succeeded += 1

    assert ci_env.sandbox.requests == []
    assert ci_env.ci.requests == []
    # The dispatcher names each failed handler's exception type: only the bot's own
    # clear refusal may appear, never an AttributeError, KeyError or TypeError.
    types = [set(FAILED_AS.findall(message)) for message in failures]
    assert [m for m, t in zip(failures, types, strict=True) if t - {"PermanentError"}] == []
    assert succeeded > 0
    assert any(types)  # some payloads got as far as a handler, and it refused them
