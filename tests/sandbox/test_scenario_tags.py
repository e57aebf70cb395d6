"""The scenario API tags the upstream and releases it, delivering GitHub's webhooks.

Apart from the other release tests: importing ``sandbox.scenario`` imports the bot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web

from sandbox.scenario import world


async def test_the_scenario_world_tags_and_releases(tmp_path: Path, aiohttp_server: Any) -> None:
    received: list[tuple[str, str | None]] = []

    async def record(request: web.Request) -> web.Response:
        received.append((request.headers["X-GitHub-Event"], (await request.json()).get("action")))
        return web.Response(status=202)

    app = web.Application()
    app.router.add_post("/hooks", record)
    server = await aiohttp_server(app)
    async with world(tmp_path) as w:
        head = w.upstream()
        w.github.webhook_url = str(server.make_url("/hooks"))  # the bot is not started
        tag_sha = await w.tag("v2.0", annotated=True, message="Two")
        made = await w.release("v2.0", name="2.0")
        assert w.github.store.resolve_commit(w.upstream_name, "v2.0") == head
        assert w.github.tags(w.upstream_name) == {"v2.0": tag_sha}
        assert (made["tag_name"], made["name"]) == ("v2.0", "2.0")
        assert received == [
            ("create", None),
            ("push", None),
            ("release", "created"),
            ("release", "published"),
            ("release", "released"),
        ]
        assert w.github.violations == []
