"""The GitHub stand-in's REST request pipeline: every request, from raw HTTP to the record.

A request is parsed, matched to a route and to GitHub's OpenAPI contract (a request
the contract refuses is a 422), authenticated (App JWT or installation token),
perhaps hit by an injected fault, handled, given an ETag (a matching
``If-None-Match`` is a 304 that costs no rate limit), checked against the contract
(in strict mode a fictional answer becomes a 500) and recorded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from sandbox.github_auth import AuthError, InstallationToken, parse_authorization
from sandbox.github_faults import (
    PRIMARY_LIMIT_MESSAGE,
    SECONDARY_LIMIT_MESSAGE,
    SERVER_ERROR_MESSAGE,
    Fault,
)
from sandbox.github_http import ApiError, Call, Query, Reply, Route, Router
from sandbox.github_json_base import error_body

if TYPE_CHECKING:
    from sandbox.github_core import GitHubCore

log = logging.getLogger(__name__)

SANDBOX_BUG = "sandbox bug on {method} {path}: {error!r}"
UNKNOWN_ROUTE = "no such route: {method} {path}"
NOT_IN_CONTRACT = "{method} {path} is served by the sandbox but is not in the contract"
RESPONSE_VIOLATION = "the sandbox built a response that violates GitHub's contract"
PROBLEMS_PARSING_JSON = "Problems parsing JSON"
INVALID_REQUEST = "Invalid request."
REQUIRES_AUTH = "Requires authentication"
NOT_ACCESSIBLE = "Resource not accessible by integration"
_NO_BODY_DECLARED = "declares no body"
_NOT_DECLARED = "is not declared"
# Statuses GitHub answers on any operation (a hidden or missing resource, a bad body),
# documented or not; their bodies are still checked where the operation declares them.
_ANY_OPERATION = frozenset({404, 422})
# Answers GitHub can give on any operation (auth, rate limits, outages) whatever
# the description lists: a mismatch on these is GitHub's documentation gap, not ours.
_UNDOCUMENTED_OK = frozenset({304, 401, 403, 500, 502, 503, 504})


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Query
    operation_id: str | None
    status: int
    started: float
    finished: float
    conditional: bool
    body: object | None


@dataclass
class _Exchange:
    """One request on its way through the pipeline: what its answer and record need."""

    request: web.Request
    method: str
    raw_path: str
    query: Query
    started: float
    body: object | None = None
    operation_id: str | None = None
    bucket_key: str | None = None
    counted: bool = True  # whether the answer uses up one request of the rate limit


def _query_of(request: web.Request) -> Query:
    query: Query = {}
    for key in request.query:
        values = request.query.getall(key)
        query[key] = values if len(values) > 1 else values[0]
    return query


def _parse_body(text: str) -> object | None:
    if not text.strip():
        return None
    try:
        parsed: object = json.loads(text)
    except ValueError as exc:
        raise ApiError(400, PROBLEMS_PARSING_JSON) from exc
    return parsed


class RequestPipeline:
    """Serves ``router``'s routes for ``sandbox``, recording into ``sandbox.requests``."""

    def __init__(self, sandbox: GitHubCore, router: Router) -> None:
        self.sb = sandbox
        self.router = router

    async def handle(self, request: web.Request) -> web.StreamResponse:
        exchange = _Exchange(
            request,
            request.method,
            request.raw_path.partition("?")[0],
            _query_of(request),
            time.monotonic(),
        )
        faulted = False
        try:
            reply, faulted = await self._serve(exchange)
        except ApiError as error:
            reply = Reply(error.status, error_body(error.message, error.status, error.errors))
        except AuthError as error:
            reply = Reply(401, error_body(str(error), 401))
        except Exception as error:  # a stand-in bug: fail the test loudly, keep serving
            log.exception("sandbox failed on %s %s", exchange.method, exchange.raw_path)
            self.sb.violations.append(
                SANDBOX_BUG.format(method=exchange.method, path=exchange.raw_path, error=error)
            )
            reply = Reply(500, error_body(f"sandbox error: {error}", 500))
        if not faulted:
            # An injected fault's answer is GitHub's, unchecked, and costs no rate limit.
            reply = self._checked(exchange.method, exchange.raw_path, reply)
            if exchange.bucket_key is not None and exchange.counted:
                self.sb.auth.bucket(exchange.bucket_key).used += 1
        response = self.respond(reply, exchange.bucket_key)
        self.record_request(
            request,
            exchange.operation_id,
            reply.status,
            exchange.started,
            exchange.body,
            query=exchange.query,
        )
        return response

    async def _serve(self, exchange: _Exchange) -> tuple[Reply, bool]:
        """The handler's answer, or an injected fault's (then True); raises error answers."""
        exchange.body = _parse_body(await exchange.request.text())
        route, params = self._route(exchange)
        if self.sb.faults.latency:
            await asyncio.sleep(self.sb.faults.latency)
        call, exchange.bucket_key = self._authenticate(
            exchange.request, route, params, exchange.query, exchange.body
        )
        await self.sb.faults.run_before(route.operation_id)
        fault = self.sb.faults.take(route.operation_id, exchange.method)
        if fault is not None:
            return await self._fault(fault, route, call, exchange.bucket_key), True
        if self.sb.auth.bucket(exchange.bucket_key).remaining == 0:
            raise ApiError(403, PRIMARY_LIMIT_MESSAGE)
        reply = await route.handler(call)
        return self._conditional(exchange, reply), False

    def _route(self, exchange: _Exchange) -> tuple[Route, dict[str, str]]:
        method, raw_path = exchange.method, exchange.raw_path
        found = self.router.find(method, raw_path)
        if found is None:
            self.sb.violations.append(UNKNOWN_ROUTE.format(method=method, path=raw_path))
            raise ApiError(404, "Not Found")
        route, params = found
        exchange.operation_id = route.operation_id
        self._check_request(exchange, route.operation_id)
        return route, params

    def _check_request(self, exchange: _Exchange, operation_id: str) -> None:
        """Hold the request to the contract: a request it refuses is GitHub's 422."""
        contract = self.sb.contract
        if contract is None:
            return
        match = contract.match(exchange.method, exchange.raw_path)
        if match is None or match.operation.operation_id != operation_id:
            self.sb.violations.append(
                NOT_IN_CONTRACT.format(method=exchange.method, path=exchange.raw_path)
            )
            return
        problems = contract.validate_request(match, exchange.query, exchange.body)
        if problems:
            self.sb.violations.extend(problems)
            raise ApiError(422, INVALID_REQUEST + "\n\n" + "\n".join(problems))

    def _authenticate(
        self,
        request: web.Request,
        route: Route,
        params: dict[str, str],
        query: Query,
        body: object | None,
    ) -> tuple[Call, str]:
        credentials = parse_authorization(request.headers.get("Authorization"))
        repo = None
        token: InstallationToken | None = None
        if "owner" in params and "repo" in params:
            repo = self.sb.repos.get(f"{params['owner']}/{params['repo']}")
        if route.auth == "jwt":
            if credentials is None or credentials[0] != "bearer":
                raise ApiError(401, REQUIRES_AUTH)
            self.sb.auth.verify_jwt(credentials[1])
            bucket_key = "app"
        else:
            if credentials is None:
                raise ApiError(401, REQUIRES_AUTH)
            token = self.sb.auth.check_token(credentials[1])
            bucket_key = token.token
            if "repo" in params and (repo is None or repo.installation_id != token.installation_id):
                # GitHub hides private repositories the installation cannot see; public
                # ones are readable by any token but not writable.
                if repo is None or repo.private:
                    raise ApiError(404, "Not Found")
                if request.method not in ("GET", "HEAD"):
                    raise ApiError(403, NOT_ACCESSIBLE)
        call = Call(request, route.operation_id, params, query, body, repo, token)
        return call, bucket_key

    async def _fault(self, fault: Fault, route: Route, call: Call, bucket_key: str) -> Reply:
        if fault.kind in ("ghost", "crash"):
            await route.handler(call)  # applied; the answer is lost
            if fault.kind == "crash" and self.sb.faults.on_crash is not None:
                self.sb.faults.on_crash()
        return self._fault_reply(fault, bucket_key)

    def _fault_reply(self, fault: Fault, bucket_key: str) -> Reply:
        headers: dict[str, str] = {}
        if fault.kind in ("error", "ghost", "crash"):
            reply = Reply(fault.status, {"message": SERVER_ERROR_MESSAGE, "documentation_url": ""})
        elif fault.kind == "primary":
            # Only this answer claims the bucket is empty; the real bucket is untouched.
            bucket = self.sb.auth.bucket(bucket_key)
            headers["x-ratelimit-remaining"] = "0"
            headers["x-ratelimit-used"] = str(bucket.limit)
            reply = Reply(403, error_body(PRIMARY_LIMIT_MESSAGE, 403))
        else:
            headers["retry-after"] = str(fault.retry_after)
            reply = Reply(403, error_body(SECONDARY_LIMIT_MESSAGE, 403))
        reply.headers.update(headers)
        return reply

    @staticmethod
    def _conditional(exchange: _Exchange, reply: Reply) -> Reply:
        """GitHub's ETag on a GET answer; a matching ``If-None-Match`` gets a free 304."""
        if exchange.method != "GET" or reply.status != 200:
            return reply
        digest = hashlib.sha256(json.dumps(reply.body, sort_keys=True).encode()).hexdigest()
        etag = f'"{digest}"'
        reply.headers["ETag"] = etag
        if etag in exchange.request.headers.get("If-None-Match", ""):
            exchange.counted = False
            return Reply(304, None, {"ETag": etag})
        return reply

    def _checked(self, method: str, raw_path: str, reply: Reply) -> Reply:
        """Validate the answer against the contract; a violation in strict mode is a 500."""
        contract = self.sb.contract
        if contract is None:
            return reply
        match = contract.match(method, raw_path)
        if match is None:
            return reply
        problems = contract.validate_response(match, reply.status, reply.body)
        if problems and reply.status in _UNDOCUMENTED_OK:
            return reply
        if reply.status in _ANY_OPERATION and all(_NOT_DECLARED in p for p in problems):
            return reply
        if reply.status >= 400 and all(_NO_BODY_DECLARED in p for p in problems):
            # The description omits the body of some errors GitHub does send one for.
            return reply
        if problems:
            self.sb.violations.extend(problems)
            if self.sb.strict:
                return Reply(500, {"message": RESPONSE_VIOLATION, "problems": problems})
        return reply

    def respond(self, reply: Reply, bucket_key: str | None) -> web.Response:
        """``reply`` as GitHub sends it, with the rate-limit headers of ``bucket_key``."""
        headers = {
            "X-GitHub-Request-Id": uuid.uuid4().hex[:16].upper(),
            "X-GitHub-Media-Type": "github.v3; format=json",
        }
        if bucket_key is not None:
            bucket = self.sb.auth.bucket(bucket_key)
            headers.update(
                {
                    "x-ratelimit-limit": str(bucket.limit),
                    "x-ratelimit-remaining": str(bucket.remaining),
                    "x-ratelimit-reset": str(bucket.reset),
                    "x-ratelimit-used": str(bucket.used),
                    "x-ratelimit-resource": "core",
                }
            )
        headers.update(reply.headers)
        if reply.body is None or reply.status in (204, 304):
            return web.Response(status=reply.status, headers=headers)
        return web.Response(
            status=reply.status,
            body=json.dumps(reply.body).encode(),
            content_type="application/json",
            charset="utf-8",
            headers=headers,
        )

    def record_request(
        self,
        request: web.Request,
        operation_id: str | None,
        status: int,
        started: float,
        body: object | None,
        *,
        query: Query | None = None,
    ) -> None:
        self.sb.requests.append(
            RecordedRequest(
                request.method,
                request.raw_path.partition("?")[0],
                query or {},
                operation_id,
                status,
                started,
                time.monotonic(),
                "If-None-Match" in request.headers,
                body,
            )
        )
