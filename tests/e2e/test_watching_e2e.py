"""A real bump through the GitHub stand-in, as /metrics shows it."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from sandbox.harness import Harness
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream


async def scrape(env: Harness) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Each sample of the bot's /metrics, by name, then by sorted labels."""
    url = env.running.webhook_url.removesuffix("/webhooks/github") + "/metrics"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
        text = await response.text()
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


async def test_a_bump_counts_its_pull_request_and_its_github_requests(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [_] = bump_pulls(env)

    found = await scrape(env)
    assert found["followup_bot_pull_requests_total"] == {(("action", "opened"),): 1.0}
    github = {
        labels: value
        for labels, value in found["followup_bot_http_requests_total"].items()
        if ("service", "github") in labels
    }
    answered = sum(github.values())
    assert answered == len(env.sandbox.requests)  # every answer, one count each
    assert github[(("code", "201"), ("service", "github"))] >= 1  # the PR, among others
    remaining = found["followup_bot_rate_limit_remaining"][(("service", "github"),)]
    assert remaining >= 0
