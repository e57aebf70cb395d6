"""A GitHub stand-in on loopback: real git underneath, GitHub's REST shape on top.

Tests and the offline demo point the bot at ``base_url``. Every request is
matched and validated against GitHub's OpenAPI contract, every JSON answer is
checked before it leaves (in strict mode a fictional shape becomes a 500), and
every ref change, pull request and comment emits the webhook GitHub would send.

``GitHubSandbox`` puts the parts together: the state and its rules
(``github_core``), the setup calls tests make (``github_setup_repos``,
``github_setup_activity``, ``github_setup_tags``), the REST routes
(``github_routes_*``) served through ``github_pipeline``, and GraphQL
(``github_graphql``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from sandbox import (
    github_routes_apps,
    github_routes_checks,
    github_routes_git,
    github_routes_issues,
    github_routes_pulls,
    github_routes_repos,
    github_routes_tags,
    github_routes_timeline,
)
from sandbox.github_graphql import GraphQLEndpoint
from sandbox.github_http import Router
from sandbox.github_pipeline import RequestPipeline
from sandbox.github_setup_activity import ActivitySetup
from sandbox.github_setup_repos import RepoSetup
from sandbox.github_setup_tags import TagSetup

if TYPE_CHECKING:
    from sandbox.contract import Contract


class GitHubSandbox(RepoSetup, ActivitySetup, TagSetup):
    def __init__(
        self,
        root: Path,
        *,
        app_id: str,
        app_public_key_pem: str,
        webhook_secret: str,
        contract: Contract | None = None,
        strict: bool = True,
        bot_login: str = "followup-bot[bot]",
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            root,
            app_id=app_id,
            app_public_key_pem=app_public_key_pem,
            webhook_secret=webhook_secret,
            contract=contract,
            strict=strict,
            bot_login=bot_login,
            clock=clock,
        )
        self.router = Router()
        # Registered in this order: among routes as specific as each other, the first wins.
        for routes in (
            github_routes_apps,
            github_routes_git,
            github_routes_repos,
            github_routes_pulls,
            github_routes_issues,
            github_routes_checks,
            github_routes_tags,
            github_routes_timeline,
        ):
            routes.register(self.router, self)
        self.pipeline = RequestPipeline(self, self.router)
        self.graphql = GraphQLEndpoint(self)
        self._runner: web.AppRunner | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        app = web.Application(client_max_size=100 * 1024**2)
        # GraphQL is one endpoint outside the REST contract, with its own error shape.
        app.router.add_post("/graphql", self.graphql.handle)
        app.router.add_route("*", "/{tail:.*}", self.pipeline.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]
        self.serve_at(f"http://{host}:{bound_port}")
        self.sender.start()

    async def close(self) -> None:
        await self.sender.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await asyncio.to_thread(self.store.close)
