"""An issue's (or pull request's) timeline in the GitHub stand-in: the labels put on and taken
off, each with who did it and when (``issues/list-events-for-timeline``).

GitHub's timeline holds many more kinds of event (comments, commits, reviews...); the
stand-in keeps the label events, which is what the bot reads it for: when a label went on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.github_http import Call, Reply, Router, not_found, paginate
from sandbox.github_json_base import JSON, iso, node_id
from sandbox.github_state import Issue, IssueEvent, Label, Repo, User

if TYPE_CHECKING:
    from sandbox.github_core import GitHubCore
    from sandbox.github_server import GitHubSandbox

LABELED, UNLABELED = "labeled", "unlabeled"


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = TimelineRoutes(sandbox)
    router.add(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/timeline",
        "issues/list-events-for-timeline",
        routes.list,
    )


def record(
    sandbox: GitHubCore,
    issue: Issue,
    event: str,
    label: Label,
    actor: User,
    at: float | None = None,
) -> None:
    """Put a label event on ``issue``'s timeline (now, unless ``at`` dates it)."""
    when = sandbox.clock() if at is None else at
    issue.events.append(IssueEvent(sandbox.ids(), event, actor, label, when))
    issue.events.sort(key=lambda found: found.created_at)


class TimelineRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    async def list(self, call: Call) -> Reply:
        repo = call.the_repo
        try:
            issue = repo.issues[int(call.params["issue_number"])]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc
        url = f"{self.sb.base_url}/repos/{repo.full_name}/issues/{issue.number}/timeline"
        page, headers = paginate(call, issue.events, url)
        return Reply(200, [self._event(repo, found) for found in page], headers)

    def _event(self, repo: Repo, found: IssueEvent) -> JSON:
        kind = "LabeledEvent" if found.event == LABELED else "UnlabeledEvent"
        return {
            "id": found.id,
            "node_id": node_id(kind, found.id),
            "url": f"{self.sb.json.api}/repos/{repo.full_name}/issues/events/{found.id}",
            "actor": self.sb.json.user(found.actor),
            "event": found.event,
            "commit_id": None,
            "commit_url": None,
            "created_at": iso(found.created_at),
            "performed_via_github_app": None,
            "label": {"name": found.label.name, "color": found.label.color},
        }
