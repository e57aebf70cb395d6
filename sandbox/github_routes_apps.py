"""App endpoints of the GitHub stand-in: the App itself, a repository's installation,
installation tokens.

All three authenticate with the App's JWT, not an installation token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.github_http import Call, Reply, Router, not_found
from sandbox.github_json_base import iso

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = AppRoutes(sandbox)
    router.add("GET", "/app", "apps/get-authenticated", routes.get_app, auth="jwt")
    router.add(
        "GET",
        "/repos/{owner}/{repo}/installation",
        "apps/get-repo-installation",
        routes.get_repo_installation,
        auth="jwt",
    )
    router.add(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        "apps/create-installation-access-token",
        routes.create_token,
        auth="jwt",
    )


class AppRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    async def get_app(self, call: Call) -> Reply:
        # The permissions and events are the sandbox's current ones, which tests may change
        # after the App object (kept for check runs) was made.
        app = self.sb.check_runs.app(self.sb.app_slug)
        body = self.sb.json.app(app)
        body["permissions"] = dict(self.sb.app_permissions)
        body["events"] = list(self.sb.app_events)
        return Reply(200, body)

    async def get_repo_installation(self, call: Call) -> Reply:
        repo = call.repo
        if repo is None or repo.installation_id is None:
            raise not_found()
        installation = self.sb.installations[repo.installation_id]
        return Reply(
            200, self.sb.json.installation(installation, int(self.sb.app_id), self.sb.app_slug)
        )

    async def create_token(self, call: Call) -> Reply:
        try:
            installation = self.sb.installations[int(call.params["installation_id"])]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc
        minted = self.sb.auth.mint(installation.id)
        return Reply(
            201,
            {
                "token": minted.token,
                "expires_at": iso(minted.expires_at),
                "permissions": {
                    "contents": "write",
                    "pull_requests": "write",
                    "issues": "write",
                    "metadata": "read",
                },
                "repository_selection": "selected",
            },
        )
