"""A round-robin load balancer on loopback, in front of several ``followup-bot serve`` replicas.

What an ingress does in a real deployment: each webhook goes to the next replica; one
that refuses the connection (killed, restarting) is skipped, and when none takes it the
sender gets a 502 (GitHub shows the delivery as failed, to be redelivered). A request
that reached a replica is never sent to another: the replica may have stored it.
"""

from __future__ import annotations

import itertools

import aiohttp
from aiohttp import web

HOP_BY_HOP = frozenset({"host", "content-length", "connection", "transfer-encoding"})
NO_REPLICA = "no replica took the delivery"


class WebhookBalancer:
    def __init__(self) -> None:
        self.replicas: list[str] = []  # base URLs, e.g. http://127.0.0.1:8123
        self._turn = itertools.count()
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{path:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{port}"
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        replicas = list(self.replicas)
        start = next(self._turn)
        for offset in range(len(replicas)):
            target = replicas[(start + offset) % len(replicas)] + request.path
            try:
                async with self._session.post(target, data=body, headers=headers) as answer:
                    return web.Response(
                        status=answer.status,
                        body=await answer.read(),
                        content_type=answer.content_type,
                    )
            except aiohttp.ClientConnectorError:
                continue  # refused before anything was sent: safe to try the next one
            except (aiohttp.ClientError, OSError):
                break  # died with the request in hand: it may have been stored
        return web.json_response({"message": NO_REPLICA}, status=502)
