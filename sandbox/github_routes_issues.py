"""Issue, comment, label and reaction operations of the GitHub stand-in (and rate_limit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sandbox.github_http import (
    VALIDATION_FAILED,
    ApiError,
    Call,
    Reply,
    Router,
    not_found,
    paginate,
)
from sandbox.github_json_base import JSON
from sandbox.github_pulls import PullEvent
from sandbox.github_routes_timeline import LABELED, UNLABELED, record
from sandbox.github_state import Comment, Issue, Label, Reaction, Repo

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

LABEL_MISSING = "Label does not exist"
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = IssueRoutes(sandbox)
    add = router.add
    add("POST", "/repos/{owner}/{repo}/issues", "issues/create", routes.create)
    add("GET", "/repos/{owner}/{repo}/issues", "issues/list-for-repo", routes.list)
    add("GET", "/repos/{owner}/{repo}/issues/{issue_number}", "issues/get", routes.get)
    add("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}", "issues/update", routes.update)
    add(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "issues/create-comment",
        routes.create_comment,
    )
    add(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "issues/list-comments",
        routes.list_comments,
    )
    add(
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "issues/update-comment",
        routes.update_comment,
    )
    add(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "issues/add-labels",
        routes.add_labels,
    )
    add(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
        "issues/remove-label",
        routes.remove_label,
    )
    add(
        "POST",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        "reactions/create-for-issue-comment",
        routes.react,
    )
    add("GET", "/rate_limit", "rate-limit/get", routes.rate_limit)


class IssueRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    def _issue(self, call: Call) -> tuple[Repo, Issue]:
        repo = call.the_repo
        try:
            return repo, repo.issues[int(call.params["issue_number"])]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc

    def _comment(self, call: Call) -> tuple[Repo, Comment]:
        repo = call.the_repo
        try:
            comment = self.sb.comment_store[int(call.params["comment_id"])]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc
        if comment.repo != repo.full_name:
            raise not_found()
        return repo, comment

    def _label(self, repo: Repo, name: str) -> Label:
        label = repo.labels.get(name)
        if label is None:
            label = Label(self.sb.ids(), name)
            repo.labels[name] = label
        return label

    async def create(self, call: Call) -> Reply:
        repo = call.the_repo
        title = call.field("title")
        if not isinstance(title, str) or not title:
            raise ApiError(
                422,
                VALIDATION_FAILED,
                [{"resource": "Issue", "field": "title", "code": "missing_field"}],
            )
        now = self.sb.clock()
        issue = Issue(
            repo.next_number,
            self.sb.ids(),
            title,
            call.field("body"),
            self.sb.bot_user,
            "open",
            now,
            now,
        )
        issue.labels = [self._label(repo, str(n)) for n in call.field("labels", []) or []]
        for label in issue.labels:
            record(self.sb, issue, LABELED, label, self.sb.bot_user)
        repo.next_number += 1
        repo.issues[issue.number] = issue
        return Reply(201, self.sb.json.issue(repo, issue))

    async def get(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        return Reply(200, self.sb.json.issue(repo, issue))

    async def list(self, call: Call) -> Reply:
        repo = call.the_repo
        state = call.arg("state") or "open"
        wanted = {n for n in (call.arg("labels") or "").split(",") if n}
        found = [
            i
            for i in sorted(repo.issues.values(), key=lambda i: -i.number)
            if state in ("all", i.state) and wanted <= {label.name for label in i.labels}
        ]
        if (call.arg("direction") or "desc") == "asc":
            found.reverse()
        url = f"{self.sb.base_url}/repos/{repo.full_name}/issues"
        page, headers = paginate(call, found, url)
        return Reply(200, [self.sb.json.issue(repo, i) for i in page], headers)

    async def update(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        now = self.sb.clock()
        events: list[PullEvent] = []
        sender = self.sb.bot_user
        if isinstance(call.field("title"), str):
            issue.title = call.field("title")
        if "body" in (call.body or {}):
            issue.body = call.field("body")
        if isinstance(call.field("labels"), list):
            self._replace_labels(repo, issue, tuple(str(n) for n in call.field("labels")))
        state = call.field("state")
        if state == "closed" and issue.state == "open":
            issue.state, issue.closed_at = "closed", now
            if issue.pull is not None:
                events.append(PullEvent(issue, "closed", sender, {}))
        elif state == "open" and issue.state == "closed":
            if issue.pull is not None and issue.pull.merged:
                raise ApiError(
                    422,
                    VALIDATION_FAILED,
                    [
                        {
                            "resource": "Issue",
                            "code": "custom",
                            "message": "merged pull requests cannot be reopened",
                        }
                    ],
                )
            issue.state, issue.closed_at = "open", None
            if issue.pull is not None:
                events.append(PullEvent(issue, "reopened", sender, {}))
        issue.updated_at = now
        await self.sb.emit_pull_events_async(repo, events)
        return Reply(200, self.sb.json.issue(repo, issue))

    # -- comments ---------------------------------------------------------------------------

    def _emit_comment(self, action: str, repo: Repo, comment: Comment, **extra: Any) -> None:
        issue = repo.issues[comment.issue_number]
        payload = self.sb.events.issue_comment(
            action,
            repo,
            self.sb.json.issue(repo, issue),
            self.sb.json.comment(repo, comment),
            comment.user,
            **extra,
        )
        self.sb.emit("issue_comment", payload, repo)

    async def create_comment(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        body = _comment_body(call)
        comment = self.sb.add_comment(repo, issue, self.sb.bot_user, body)
        self._emit_comment("created", repo, comment)
        json = self.sb.json.comment(repo, comment)
        return Reply(201, json, {"Location": json["url"]})

    async def list_comments(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        comments = [self.sb.comment_store[cid] for cid in issue.comment_ids]
        url = f"{self.sb.base_url}/repos/{repo.full_name}/issues/{issue.number}/comments"
        page, headers = paginate(call, comments, url)
        return Reply(200, [self.sb.json.comment(repo, c) for c in page], headers)

    async def update_comment(self, call: Call) -> Reply:
        repo, comment = self._comment(call)
        body = _comment_body(call)
        if body != comment.body:
            previous = comment.body
            comment.body, comment.updated_at = body, self.sb.clock()
            self._emit_comment("edited", repo, comment, changes={"body": {"from": previous}})
        return Reply(200, self.sb.json.comment(repo, comment))

    # -- labels -----------------------------------------------------------------------------

    async def add_labels(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        # PyGithub sends a bare JSON array; the documented form is {"labels": [...]}.
        names = call.body if isinstance(call.body, list) else call.field("labels", [])
        names = [n if isinstance(n, str) else n.get("name") for n in names or []]
        present = {label.name for label in issue.labels}
        added: list[Label] = []
        for name in names:
            if name not in present:
                label = self._label(repo, name)
                issue.labels.append(label)
                present.add(name)
                added.append(label)
                record(self.sb, issue, LABELED, label, self.sb.bot_user)
        if added:
            issue.updated_at = self.sb.clock()
        if issue.pull is not None:
            sender = self.sb.bot_user
            events = [
                PullEvent(issue, "labeled", sender, {"label": self._webhook_label(repo, label)})
                for label in added
            ]
            await self.sb.emit_pull_events_async(repo, events)
        return Reply(200, [self.sb.json.label(repo, label) for label in issue.labels])

    def _replace_labels(self, repo: Repo, issue: Issue, names: tuple[str, ...]) -> None:
        """Set the issue's labels to ``names``; the timeline gets what changed."""
        wanted = [self._label(repo, name) for name in names]
        kept = {label.name for label in wanted}
        for label in issue.labels:
            if label.name not in kept:
                record(self.sb, issue, UNLABELED, label, self.sb.bot_user)
        had = {label.name for label in issue.labels}
        for label in wanted:
            if label.name not in had:
                record(self.sb, issue, LABELED, label, self.sb.bot_user)
        issue.labels = wanted

    def _webhook_label(self, repo: Repo, label: Label) -> JSON:
        return self.sb.json.label(repo, label)

    async def remove_label(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        name = call.params["name"]
        if name not in {label.name for label in issue.labels}:
            raise ApiError(404, LABEL_MISSING)
        for label in issue.labels:
            if label.name == name:
                record(self.sb, issue, UNLABELED, label, self.sb.bot_user)
        issue.labels = [label for label in issue.labels if label.name != name]
        issue.updated_at = self.sb.clock()
        return Reply(200, [self.sb.json.label(repo, label) for label in issue.labels])

    # -- reactions --------------------------------------------------------------------------

    async def react(self, call: Call) -> Reply:
        _, comment = self._comment(call)
        content = call.field("content")
        if content not in REACTIONS:
            raise ApiError(
                422,
                VALIDATION_FAILED,
                [{"resource": "Reaction", "field": "content", "code": "invalid"}],
            )
        user = self.sb.bot_user
        for reaction in comment.reactions:
            if reaction.user == user and reaction.content == content:
                return Reply(200, self.sb.json.reaction(reaction))
        reaction = Reaction(self.sb.ids(), user, str(content), self.sb.clock())
        comment.reactions.append(reaction)
        return Reply(201, self.sb.json.reaction(reaction))

    async def rate_limit(self, call: Call) -> Reply:
        key = call.token.token if call.token else "anonymous"
        bucket = self.sb.auth.bucket(key)
        core = {
            "limit": bucket.limit,
            "remaining": bucket.remaining,
            "reset": bucket.reset,
            "used": bucket.used,
        }
        search = {"limit": 30, "remaining": 30, "reset": bucket.reset, "used": 0}
        return Reply(200, {"resources": {"core": core, "search": search}, "rate": core})


def _comment_body(call: Call) -> str:
    """The comment body a create or update carries; 422 like GitHub when it is missing."""
    body = call.field("body")
    if not isinstance(body, str) or not body:
        raise ApiError(
            422,
            VALIDATION_FAILED,
            [{"resource": "IssueComment", "field": "body", "code": "missing_field"}],
        )
    return body
