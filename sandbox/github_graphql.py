"""``POST /graphql`` of the GitHub stand-in: auto-merge, and a repository's pull requests.

The document is parsed, validated and executed by graphql-core against a small
SDL holding only the types these mutations and ``repository { pullRequests }``
(``github_graphql_pulls``) touch, named and typed as in GitHub's public schema, so an
ill-formed query, an unknown field or an unknown mutation is refused the way GitHub
refuses it: HTTP 200 with ``{"errors": [...]}``. Refusals of the mutation itself carry
GitHub's ``type`` and wording ("Pull request ..." prefixed, as GitHub sends them).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web
from graphql import GraphQLError, GraphQLSchema, build_schema, graphql

from sandbox.github_auth import AuthError, InstallationToken, parse_authorization
from sandbox.github_faults import SECONDARY_LIMIT_MESSAGE, SERVER_ERROR_MESSAGE
from sandbox.github_graphql_pulls import RepositoryResolver, pull_fields
from sandbox.github_http import Reply
from sandbox.github_json_base import JSON, iso
from sandbox.github_state import AutoMerge, Issue, Repo
from sandbox.github_statuses import STATE_BLOCKED, STATE_DIRTY, merge_state

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

OPERATION_ID = "graphql"
GRAPHQL_DOCS_URL = "https://docs.github.com/graphql"
REQUIRES_AUTHENTICATION = "This endpoint requires you to be authenticated."
QUERY_MISSING = "A query attribute must be specified and must be a string."
PROBLEMS_PARSING_JSON = "Problems parsing JSON"
NODE_NOT_FOUND = "Could not resolve to a node with the global id of '{id}'"
NOT_ACCESSIBLE = "Resource not accessible by integration"
# GitHub prefixes a refused pull-request mutation's reason with "Pull request ".
AUTO_MERGE_NOT_ALLOWED = "Pull request Auto merge is not allowed for this repository"
NOT_PROTECTED = "Pull request Protected branch rules not configured for this branch"
IN_STATUS = "Pull request Pull request is in {state} status"
NOT_OPEN = "Pull request Pull request is closed"
# Not GitHub's confirmed wording (no public record found); the shape and type are.
HEAD_MOVED = "Pull request head commit {actual} does not match expectedHeadOid {expected}"

SCHEMA_SDL = """
scalar DateTime
scalar GitObjectID

enum PullRequestMergeMethod { MERGE SQUASH REBASE }
enum PullRequestState { OPEN CLOSED MERGED }
enum MergeStateStatus { BEHIND BLOCKED CLEAN DIRTY HAS_HOOKS UNKNOWN UNSTABLE }
enum IssueOrderField { CREATED_AT UPDATED_AT COMMENTS }
enum OrderDirection { ASC DESC }

input IssueOrder {
  field: IssueOrderField!
  direction: OrderDirection!
}

type Actor { login: String! }

type AutoMergeRequest {
  enabledAt: DateTime
  enabledBy: Actor
  mergeMethod: PullRequestMergeMethod!
  commitHeadline: String
  commitBody: String
}

type PullRequest {
  id: ID!
  databaseId: Int
  number: Int!
  state: PullRequestState!
  merged: Boolean!
  title: String!
  headRefName: String!
  headRefOid: GitObjectID!
  baseRefName: String!
  isCrossRepository: Boolean!
  createdAt: DateTime!
  closedAt: DateTime
  mergedAt: DateTime
  author: Actor
  mergeStateStatus: MergeStateStatus!
  autoMergeRequest: AutoMergeRequest
}

type PullRequestConnection {
  nodes: [PullRequest]
  totalCount: Int!
}

type Repository {
  nameWithOwner: String!
  pullRequests(
    states: [PullRequestState!]
    headRefName: String
    baseRefName: String
    first: Int
    last: Int
    orderBy: IssueOrder
  ): PullRequestConnection!
}

input EnablePullRequestAutoMergeInput {
  pullRequestId: ID!
  mergeMethod: PullRequestMergeMethod
  expectedHeadOid: GitObjectID
  commitHeadline: String
  commitBody: String
  authorEmail: String
  clientMutationId: String
}

input DisablePullRequestAutoMergeInput {
  pullRequestId: ID!
  clientMutationId: String
}

type EnablePullRequestAutoMergePayload {
  clientMutationId: String
  pullRequest: PullRequest
}

type DisablePullRequestAutoMergePayload {
  clientMutationId: String
  pullRequest: PullRequest
}

type Query {
  node(id: ID!): PullRequest
  repository(owner: String!, name: String!, followRenames: Boolean = true): Repository
}

type Mutation {
  enablePullRequestAutoMerge(
    input: EnablePullRequestAutoMergeInput!
  ): EnablePullRequestAutoMergePayload
  disablePullRequestAutoMerge(
    input: DisablePullRequestAutoMergeInput!
  ): DisablePullRequestAutoMergePayload
}
"""


class MutationRefused(GraphQLError):
    """A refusal GitHub reports with a ``type`` next to the message."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, extensions={"type": kind})


@dataclass(frozen=True)
class Caller:
    token: InstallationToken


def _pull_request_id(node: str) -> int | None:
    """The database id inside a ``PullRequest`` node id (as the REST ``node_id`` encodes it)."""
    try:
        decoded = base64.b64decode(node + "=" * (-len(node) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    kind, _, ident = decoded.partition(":")
    return int(ident) if kind == "PullRequest" and ident.isdigit() else None


@functools.cache
def _schema() -> GraphQLSchema:
    # Building the schema from its text took ~20 ms, and every test makes a stand-in. The
    # schema holds no resolvers (they come in as the root value), so one serves them all.
    return build_schema(SCHEMA_SDL)


class GraphQLEndpoint:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox
        self.schema = _schema()
        self.repositories = RepositoryResolver(sandbox)

    # -- HTTP -------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        body: object | None = None
        bucket_key: str | None = None
        try:
            credentials = parse_authorization(request.headers.get("Authorization"))
            if credentials is None:
                raise AuthError(REQUIRES_AUTHENTICATION)
            token = self.sb.auth.check_token(credentials[1])
            bucket_key = token.token
            try:
                body = json.loads(await request.text())
            except ValueError:
                reply = Reply(
                    400, {"message": PROBLEMS_PARSING_JSON, "documentation_url": GRAPHQL_DOCS_URL}
                )
            else:
                reply = await self._answer(body, Caller(token))
        except AuthError as error:
            reply = Reply(401, {"message": str(error), "documentation_url": GRAPHQL_DOCS_URL})
        if bucket_key is not None:
            self.sb.auth.bucket(bucket_key).used += 1
        self.sb.pipeline.record_request(request, OPERATION_ID, reply.status, started, body)
        return self.sb.pipeline.respond(reply, bucket_key)

    async def _answer(self, body: object, caller: Caller) -> Reply:
        """The query's answer, or the fault planned for it (a ghost runs the query first)."""
        fault = self.sb.faults.take(OPERATION_ID, "POST")
        if fault is None:
            return Reply(200, await self.execute(body, caller))
        if fault.kind in ("ghost", "crash"):
            await self.execute(body, caller)  # applied; the answer is lost
            if fault.kind == "crash" and self.sb.faults.on_crash is not None:
                self.sb.faults.on_crash()
        if fault.kind in ("error", "ghost", "crash"):
            return Reply(fault.status, {"message": SERVER_ERROR_MESSAGE})
        headers = {"retry-after": str(fault.retry_after)}
        return Reply(403, {"message": SECONDARY_LIMIT_MESSAGE}, headers)

    async def execute(self, body: object, caller: Caller) -> JSON:
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str):
            return {"errors": [{"message": QUERY_MISSING}]}
        variables = body.get("variables") if isinstance(body, dict) else None
        root: dict[str, Callable[..., Awaitable[JSON | None] | JSON]] = {
            "node": self._node,
            "repository": self.repositories.repository,
            "enablePullRequestAutoMerge": self._enable,
            "disablePullRequestAutoMerge": self._disable,
        }
        result = await graphql(
            self.schema,
            query,
            root_value=root,
            context_value=caller,
            variable_values=variables if isinstance(variables, dict) else None,
        )
        answer: JSON = {}
        if result.data is not None:
            answer["data"] = result.data
        if result.errors:
            answer["errors"] = [self._error(error) for error in result.errors]
        return answer

    @staticmethod
    def _error(error: GraphQLError) -> JSON:
        formatted: JSON = dict(error.formatted)
        extensions = formatted.pop("extensions", None) or {}
        if "type" in extensions:
            formatted["type"] = extensions["type"]
        return formatted

    # -- resolvers --------------------------------------------------------------------------

    def _find(self, node: str, caller: Caller, *, writing: bool) -> tuple[Repo, Issue]:
        ident = _pull_request_id(node)
        for repo in self.sb.repos.values():
            for issue in repo.issues.values():
                if issue.id != ident or issue.pull is None:
                    continue
                own = repo.installation_id == caller.token.installation_id
                if not own and repo.private:
                    break
                if not own and writing:
                    raise MutationRefused(NOT_ACCESSIBLE, "FORBIDDEN")
                return repo, issue
        raise MutationRefused(NODE_NOT_FOUND.format(id=node), "NOT_FOUND")

    async def _pull_value(self, repo: Repo, issue: Issue) -> JSON:
        pull = issue.pull
        assert pull is not None
        stats = await self.sb.git(self.sb.pulls_ops.stats_sync, repo, issue)
        status = "UNKNOWN"
        if stats.mergeable is not None:
            status = merge_state(repo, pull, stats.mergeable).upper()
        request = pull.auto_merge
        auto = None
        if request is not None:
            auto = {
                "enabledAt": iso(request.enabled_at),
                "enabledBy": {"login": request.enabled_by.login},
                "mergeMethod": request.merge_method.upper(),
                "commitHeadline": request.commit_title,
                "commitBody": request.commit_message,
            }
        return {
            **pull_fields(self.sb, repo, issue),
            "mergeStateStatus": status,
            "autoMergeRequest": auto,
        }

    async def _node(self, info: Any, id: str) -> JSON | None:
        try:
            repo, issue = self._find(id, info.context, writing=False)
        except MutationRefused:
            return None
        return await self._pull_value(repo, issue)

    async def _enable(self, info: Any, input: dict[str, Any]) -> JSON:
        repo, issue = self._find(input["pullRequestId"], info.context, writing=True)
        pull = issue.pull
        assert pull is not None
        if issue.state != "open" or pull.merged:
            raise MutationRefused(NOT_OPEN, "UNPROCESSABLE")
        if not repo.allow_auto_merge:
            raise MutationRefused(AUTO_MERGE_NOT_ALLOWED, "UNPROCESSABLE")
        expected = input.get("expectedHeadOid")
        if expected is not None and expected != pull.head_sha:
            raise MutationRefused(
                HEAD_MOVED.format(actual=pull.head_sha, expected=expected), "UNPROCESSABLE"
            )
        if not repo.required_contexts.get(pull.base_ref):
            raise MutationRefused(NOT_PROTECTED, "UNPROCESSABLE")
        stats = await self.sb.git(self.sb.pulls_ops.stats_sync, repo, issue)
        state = merge_state(repo, pull, bool(stats.mergeable))
        # Auto-merge waits for something; a pull that could merge now is refused.
        if state not in (STATE_BLOCKED, STATE_DIRTY):
            raise MutationRefused(IN_STATUS.format(state=state), "UNPROCESSABLE")
        method = str(input.get("mergeMethod") or "MERGE").lower()
        pull.auto_merge = AutoMerge(
            enabled_by=self.sb.bot_user,
            merge_method=method,
            commit_title=input.get("commitHeadline"),
            commit_message=input.get("commitBody"),
            enabled_at=self.sb.clock(),
        )
        return {
            "clientMutationId": input.get("clientMutationId"),
            "pullRequest": await self._pull_value(repo, issue),
        }

    async def _disable(self, info: Any, input: dict[str, Any]) -> JSON:
        repo, issue = self._find(input["pullRequestId"], info.context, writing=True)
        assert issue.pull is not None
        issue.pull.auto_merge = None
        return {
            "clientMutationId": input.get("clientMutationId"),
            "pullRequest": await self._pull_value(repo, issue),
        }
