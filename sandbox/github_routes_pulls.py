"""Pull-request operations of the GitHub stand-in."""

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
from sandbox.github_names import same_name
from sandbox.github_pulls import MERGE_METHODS, MERGED, PullEvent
from sandbox.github_state import Issue, PullInfo, Repo

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

PULL_EXISTS = "A pull request already exists for {label}."
NO_COMMITS = "No commits between {base} and {head}"
REOPEN_NO_BRANCH = "Cannot reopen a pull request whose head branch is gone"
SORT_KEYS = ("created", "updated", "popularity", "long-running")


def _field_error(field: str, code: str = "invalid") -> list[dict[str, Any]]:
    return [{"resource": "PullRequest", "field": field, "code": code}]


def _custom_error(message: str) -> list[dict[str, Any]]:
    return [{"resource": "PullRequest", "code": "custom", "message": message}]


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = PullRoutes(sandbox)
    router.add("POST", "/repos/{owner}/{repo}/pulls", "pulls/create", routes.create)
    router.add("GET", "/repos/{owner}/{repo}/pulls", "pulls/list", routes.list)
    router.add("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", "pulls/get", routes.get)
    router.add("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}", "pulls/update", routes.update)
    router.add(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        "pulls/list-reviews",
        routes.list_reviews,
    )
    router.add(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/files",
        "pulls/list-files",
        routes.list_files,
    )
    router.add(
        "PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge", "pulls/merge", routes.merge
    )
    router.add(
        "PUT",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals",
        "pulls/dismiss-review",
        routes.dismiss_review,
    )


class PullRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    def _pull(self, call: Call) -> tuple[Repo, Issue]:
        repo = call.the_repo
        try:
            issue = repo.issues[int(call.params["pull_number"])]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc
        if issue.pull is None:
            raise not_found()
        return repo, issue

    async def create(self, call: Call) -> Reply:
        repo = call.the_repo
        store = self.sb.store
        head_spec, base = str(call.field("head", "")), str(call.field("base", ""))
        owner, _, head = head_spec.rpartition(":")
        if owner and not same_name(owner, repo.owner.login):
            raise ApiError(422, VALIDATION_FAILED, _field_error("head"))
        base_sha = await self.sb.git(store.get_ref, repo.full_name, f"refs/heads/{base}")
        if base_sha is None:
            raise ApiError(422, VALIDATION_FAILED, _field_error("base"))
        head_sha = await self.sb.git(store.get_ref, repo.full_name, f"refs/heads/{head}")
        if head_sha is None:
            raise ApiError(422, VALIDATION_FAILED, _field_error("head"))
        label = f"{repo.owner.login}:{head}"
        if any(i.pull.base_ref == base for i in repo.open_pulls_with_head(head) if i.pull):
            raise ApiError(422, VALIDATION_FAILED, _custom_error(PULL_EXISTS.format(label=label)))
        if await self.sb.git(store.count, repo.full_name, f"{base_sha}..{head_sha}") == 0:
            raise ApiError(
                422, VALIDATION_FAILED, _custom_error(NO_COMMITS.format(base=base, head=label))
            )
        title = call.field("title")
        if not isinstance(title, str) or not title.strip():
            raise ApiError(422, VALIDATION_FAILED, _field_error("title", "missing_field"))
        now = self.sb.clock()
        user = self.sb.bot_user
        issue = Issue(
            number=repo.next_number,
            id=self.sb.ids(),
            title=title,
            body=call.field("body"),
            user=user,
            state="open",
            created_at=now,
            updated_at=now,
            pull=PullInfo(
                head_ref=head,
                base_ref=base,
                head_sha=head_sha,
                base_sha=base_sha,
                maintainer_can_modify=bool(call.field("maintainer_can_modify", True)),
            ),
        )
        repo.next_number += 1
        repo.issues[issue.number] = issue
        await self.sb.emit_pull_events_async(repo, [PullEvent(issue, "opened", user, {})])
        body = await self.sb.pull_json(repo, issue)
        headers = {"Location": body["url"]}
        return Reply(201, body, headers)

    async def list(self, call: Call) -> Reply:
        repo = call.the_repo
        state = call.arg("state") or "open"
        head = call.arg("head")
        base = call.arg("base")
        found = [i for i in repo.issues.values() if i.pull is not None]
        if state != "all":
            found = [i for i in found if i.state == state]
        if head:
            owner, _, branch = head.rpartition(":")
            if owner and not same_name(owner, repo.owner.login):
                found = []
            found = [i for i in found if i.pull is not None and i.pull.head_ref == branch]
        if base:
            found = [i for i in found if i.pull is not None and i.pull.base_ref == base]
        sort = call.arg("sort") or "created"
        newest_first = (call.arg("direction") or "desc") == "desc"
        if sort == "updated":
            found.sort(key=lambda i: (i.updated_at, i.number), reverse=newest_first)
        else:
            found.sort(key=lambda i: (i.created_at, i.number), reverse=newest_first)
        url = f"{self.sb.base_url}/repos/{repo.full_name}/pulls"
        page, headers = paginate(call, found, url)
        return Reply(200, [self.sb.json.pull(repo, issue) for issue in page], headers)

    async def get(self, call: Call) -> Reply:
        repo, issue = self._pull(call)
        return Reply(200, await self.sb.pull_json(repo, issue))

    async def update(self, call: Call) -> Reply:
        repo, issue = self._pull(call)
        pull = issue.pull
        assert pull is not None
        changes: dict[str, Any] = {}
        events: list[PullEvent] = []
        sender = self.sb.bot_user
        title, body = call.field("title"), call.field("body")
        if isinstance(title, str) and title != issue.title:
            changes["title"] = {"from": issue.title}
            issue.title = title
        if "body" in (call.body or {}) and body != issue.body:
            changes["body"] = {"from": issue.body or ""}
            issue.body = body if isinstance(body, str) else None
        new_base = call.field("base")
        if isinstance(new_base, str) and new_base != pull.base_ref:
            base_sha = await self.sb.git(
                self.sb.store.get_ref, repo.full_name, f"refs/heads/{new_base}"
            )
            if base_sha is None:
                raise ApiError(422, VALIDATION_FAILED, _field_error("base"))
            changes["base"] = {"ref": {"from": pull.base_ref}, "sha": {"from": pull.base_sha}}
            pull.base_ref, pull.base_sha = new_base, base_sha
        now = self.sb.clock()
        if changes:
            issue.updated_at = now
            events.append(PullEvent(issue, "edited", sender, {"changes": changes}))
        state = call.field("state")
        if state == "closed" and issue.state == "open":
            issue.state, issue.closed_at, issue.updated_at = "closed", now, now
            events.append(PullEvent(issue, "closed", sender, {}))
        elif state == "open" and issue.state == "closed" and not pull.merged:
            head_sha = await self.sb.git(
                self.sb.store.get_ref, repo.full_name, f"refs/heads/{pull.head_ref}"
            )
            if head_sha is None:
                raise ApiError(422, VALIDATION_FAILED, _custom_error(REOPEN_NO_BRANCH))
            pull.head_sha = head_sha
            issue.state, issue.closed_at, issue.updated_at = "open", None, now
            events.append(PullEvent(issue, "reopened", sender, {}))
        await self.sb.emit_pull_events_async(repo, events)
        return Reply(200, await self.sb.pull_json(repo, issue))

    async def list_reviews(self, call: Call) -> Reply:
        repo, issue = self._pull(call)
        assert issue.pull is not None
        url = f"{self.sb.base_url}/repos/{repo.full_name}/pulls/{issue.number}/reviews"
        page, headers = paginate(call, issue.pull.reviews, url)
        return Reply(200, [self.sb.json.review(repo, issue.number, r) for r in page], headers)

    async def dismiss_review(self, call: Call) -> Reply:
        repo, issue = self._pull(call)
        try:
            review_id = int(call.params["review_id"])
        except ValueError as exc:
            raise not_found() from exc
        message = str(call.field("message", ""))
        body = self.sb.pulls_ops.dismiss_review(repo, issue, review_id, message, self.sb.bot_user)
        return Reply(200, body)

    async def list_files(self, call: Call) -> Reply:
        repo, issue = self._pull(call)
        pull = issue.pull
        assert pull is not None
        store = self.sb.store
        base = await self.sb.git(store.merge_base, repo.full_name, pull.base_sha, pull.head_sha)
        files = await self.sb.git(store.diff, repo.full_name, base or pull.base_sha, pull.head_sha)
        url = f"{self.sb.base_url}/repos/{repo.full_name}/pulls/{issue.number}/files"
        page, headers = paginate(call, files, url)
        return Reply(200, [self.sb.json.diff_entry(repo, pull.head_sha, f) for f in page], headers)

    async def merge(self, call: Call) -> Reply:
        repo, issue = self._pull(call)
        method = call.field("merge_method", "merge")
        if method not in MERGE_METHODS:
            raise ApiError(422, VALIDATION_FAILED, _field_error("merge_method"))
        sha = call.field("sha")
        merger = self.sb.bot_user
        self.sb.pulls_ops.check_protection(issue, repo)
        outcome = await self.sb.git(
            self.sb.pulls_ops.merge_sync,
            repo,
            issue,
            method,
            sha if isinstance(sha, str) else None,
            call.field("commit_title"),
            call.field("commit_message"),
            merger,
        )
        pushed = await self.sb.git(
            self.sb.push_details, repo.full_name, outcome.ref, outcome.before, outcome.sha
        )
        pending = self.sb.pulls_ops.after_merge(repo, issue, outcome, merger, pushed)
        await self.sb.emit_pull_events_async(repo, pending)
        return Reply(200, {"sha": outcome.sha, "merged": True, "message": MERGED})
