"""One registry client per endpoint, on the app's one HTTP session.

A client keeps the tokens its registry issued, so it lives as long as the app: a repo
config naming the same endpoint on every delivery reuses the same tokens.
"""

from __future__ import annotations

import aiohttp

from bot.registry.client import RegistryClient


class Registries:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._session = session
        self._username, self._password = username, password
        self._timeout = timeout
        self._clients: dict[str | None, RegistryClient] = {}

    def client(self, endpoint: str | None) -> RegistryClient:
        """The client of ``endpoint`` (None: each image's own host, over https)."""
        found = self._clients.get(endpoint)
        if found is None:
            found = RegistryClient(
                self._session,
                endpoint=endpoint,
                username=self._username,
                password=self._password,
                timeout=self._timeout,
            )
            self._clients[endpoint] = found
        return found

    @property
    def requests_made(self) -> int:
        return sum(client.requests_made for client in self._clients.values())
