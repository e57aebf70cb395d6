"""GitHub's own REST and webhook contract, so the sandbox cannot drift into fiction.

The sandbox checks every request it receives and every response and webhook it
sends against a subset of GitHub's OpenAPI description (cut by
``data/regenerate.py`` from a pinned ``@octokit/openapi``). Problems come back as
readable strings rather than exceptions, so the sandbox can decide whether to
answer 422 (a bad request from the bot) or fail the test (a bad stand-in).
Finding the operation for a method and path is ``contract_routes``.

Loading reads a ~0.5 MB file: call ``Contract.load`` once at start-up, off the
event loop (``asyncio.to_thread``), and share the instance; it is cached.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from typing import Any

from cachetools import LRUCache
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from openapi_schema_validator import OAS30ReadValidator, OAS30WriteValidator
from referencing import Registry
from referencing.jsonschema import DRAFT4

from sandbox.contract_routes import (
    Match,
    Operation,
    Parameter,
    Route,
    Routes,
    escape_pointer,
    pointer_at,
    resolve,
)

DATA_PACKAGE = "sandbox"
DATA_DIR = "data"
SUBSET_FILE = "github-rest-subset.json"
WEBHOOKS_DIR = "webhooks"
# The subset is registered under this URI so every "#/components/..." reference
# inside it resolves without touching the network.
SPEC_URI = "urn:followup-bot:github-rest-subset"

MAX_PROBLEMS = 10
CHECKED_VALUES = 4096  # validations remembered (by value) per contract
MAX_MESSAGE_CHARS = 300
JSON_MEDIA_TYPE = "application/json"
# Statuses that never carry a body, whatever the description says.
BODYLESS_STATUSES = frozenset({204, 304})

PROBLEM = "{where}: {path}: {message}"
MORE_PROBLEMS = "... and {count} more problems"
MISSING_PARAMETER = "{where}: $: required {location} parameter {name!r} is missing"
REPEATED_PARAMETER = "{where}: $: parameter {name!r} given {count} times but is not an array"
BODY_REQUIRED = "{where}: $: a JSON body is required"
BODY_NOT_ACCEPTED = "{where}: $: this operation takes no request body"
UNDECLARED_STATUS = "{where}: $: status {status} is not declared (declared: {declared})"
BODY_FORBIDDEN = "{where}: $: status {status} must not carry a body"
BODY_MISSING = "{where}: $: status {status} declares a JSON body but none was sent"
NO_BODY_DECLARED = "{where}: $: status {status} declares no body but one was sent"
WEBHOOK_NOT_IN_SUBSET = "{where}: $: schema {schema!r} is not in the contract subset"
REF_WITH_SIBLINGS = "the contract subset has a $ref with sibling keywords: {ref} {keys}"
UNKNOWN_WEBHOOK_EXAMPLE = "no webhook example {name!r}; known: {known}"


def _truncate(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[: MAX_MESSAGE_CHARS - 3] + "..."


def _render(where: str, error: ValidationError) -> str:
    message = error.message
    if error.context:
        # oneOf/anyOf failures only say "not valid under any"; the closest
        # alternative's own error is what helps someone fix the payload.
        closest = best_match(error.context)
        message = f"{_truncate(message)} (closest: {closest.json_path}: {closest.message})"
    return PROBLEM.format(where=where, path=error.json_path, message=_truncate(message))


def _capped(problems: Iterable[str]) -> list[str]:
    result: list[str] = []
    extra = 0
    for problem in problems:
        if len(result) < MAX_PROBLEMS:
            result.append(problem)
        else:
            extra += 1
    if extra:
        result.append(MORE_PROBLEMS.format(count=extra))
    return result


def _coerce_scalar(value: str, declared_type: object) -> object:
    """Turn a query/path string into the declared JSON type when it parses as one.

    A string that does not parse is left alone, so the schema reports it.
    """
    if declared_type == "integer" and re.fullmatch(r"-?\d+", value):
        return int(value)
    if declared_type == "number":
        try:
            return float(value)
        except ValueError:
            return value
    if declared_type == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def followed_refs(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``document`` in which every local ``$ref`` object *is* its target.

    jsonschema looks a ``$ref`` up in the registry each time a value passes it (walking
    the pointer and wrapping each step as a resource); GitHub's schemas are refs all the
    way down, and the lookups were a large part of each validation. Followed once here,
    the schemas become one graph of shared (and, for recursive schemas, cyclic) objects
    that validation walks directly (12 % less time per validation). No ``$ref`` in the
    subset has sibling keywords (loading refuses one that has), so an object that was a
    reference is replaced whole. The discriminator's ``mapping`` names schemas by pointer
    and still looks them up, in this same copy.
    """
    copy: dict[str, Any] = json.loads(json.dumps(document))

    def target(ref: str) -> Any:
        node = pointer_at(copy, ref[1:])
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            node = pointer_at(copy, node["$ref"][1:])  # a reference to a reference
        return node

    def follow(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/"):
                if len(node) > 1:  # OpenAPI 3.0 applies the siblings too: keep them
                    raise ValueError(REF_WITH_SIBLINGS.format(ref=ref, keys=sorted(node)))
                return target(ref)
            for key, value in node.items():
                node[key] = follow(value)
        elif isinstance(node, list):
            node[:] = [follow(value) for value in node]
        return node

    follow(copy)
    return copy


class Contract:
    """The subset of GitHub's OpenAPI description the sandbox is held to."""

    def __init__(self, document: dict[str, Any]) -> None:
        self._document = document
        self._registry: Registry[Any] = Registry().with_resource(
            SPEC_URI, DRAFT4.create_resource(followed_refs(document))
        )
        self._validators: dict[tuple[str, bool], Validator] = {}
        self._routes = Routes(document)
        self._lock = threading.Lock()
        self._checked: LRUCache[tuple[str, str, bool, str], tuple[str, ...]] = LRUCache(
            CHECKED_VALUES
        )

    @classmethod
    def load(cls) -> Contract:
        """The packaged subset, parsed once per process."""
        return _load_packaged_contract()

    # --- routing -------------------------------------------------------------

    def operations(self) -> list[Operation]:
        return list(self._routes.operations)

    def match(self, method: str, path: str) -> Match | None:
        """The operation serving ``method path`` (path without base URL), if any."""
        route, params = self._routes.find(path, method.upper())
        return Match(route.operation, params) if route else None

    def allowed_methods(self, path: str) -> list[str]:
        """Methods some operation accepts on ``path``: tells 405 from 404."""
        return self._routes.allowed_methods(path)

    # --- document access -----------------------------------------------------

    def _at(self, pointer: str) -> Any:
        return pointer_at(self._document, pointer)

    def _resolve(self, node: Any, pointer: str) -> tuple[Any, str]:
        return resolve(self._document, node, pointer)

    def _validator(self, pointer: str, *, writing: bool) -> Validator:
        key = (pointer, writing)
        validator = self._validators.get(key)
        if validator is None:
            # Requests are "written" by the client (readOnly fields must not be
            # sent), responses and webhooks are "read" (writeOnly ones absent).
            cls = OAS30WriteValidator if writing else OAS30ReadValidator
            # Formats are checked too: a sandbox that renders timestamps its own
            # way would teach the bot to parse something GitHub never sends.
            validator = cls(
                {"$ref": f"{SPEC_URI}#{pointer}"},
                registry=self._registry,
                format_checker=cls.FORMAT_CHECKER,
            )
            self._validators[key] = validator
        return validator

    def _problems(self, where: str, pointer: str, instance: Any, *, writing: bool) -> list[str]:
        """The problems of ``instance`` under the schema at ``pointer``, remembered by value:
        a test serves the same objects again and again (a repository, a ref, a commit),
        and a third of the suite's validations were of a value seen before."""
        try:
            key = (where, pointer, writing, json.dumps(instance, sort_keys=True))
        except (TypeError, ValueError):  # not JSON: a bad stand-in; validate, don't keep
            return self._validated(where, pointer, instance, writing=writing)
        with self._lock:
            found = self._checked.get(key)
        if found is None:
            found = tuple(self._validated(where, pointer, instance, writing=writing))
            with self._lock:
                self._checked[key] = found
        return list(found)

    def _validated(self, where: str, pointer: str, instance: Any, *, writing: bool) -> list[str]:
        errors = self._validator(pointer, writing=writing).iter_errors(instance)
        ordered = sorted(errors, key=lambda e: (e.json_path, e.message))
        # allOf branches often state the same rule twice; say it once.
        return list(dict.fromkeys(_render(where, error) for error in ordered))

    def _declared_type(self, schema: Any) -> object:
        resolved, _ = self._resolve(schema, "")
        return resolved.get("type") if isinstance(resolved, Mapping) else None

    # --- validation ----------------------------------------------------------

    def validate_request(
        self,
        match: Match,
        query: Mapping[str, str | list[str]],
        body: object | None,
    ) -> list[str]:
        """Problems with a request: parameters (coerced to their types) and JSON body."""
        route = self._routes.of(match)
        op_id = route.operation.operation_id
        return _capped(self._request_problems(route, op_id, match, query, body))

    def _request_problems(
        self,
        route: Route,
        op_id: str,
        match: Match,
        query: Mapping[str, str | list[str]],
        body: object | None,
    ) -> Iterator[str]:
        for parameter in route.parameters:
            where = f"{op_id} {parameter.location} parameter {parameter.name}"
            if parameter.location == "path":
                raw: str | list[str] | None = match.path_params.get(parameter.name)
            elif parameter.location == "query":
                raw = query.get(parameter.name)
            else:
                continue  # headers are the HTTP layer's business, not the contract's
            if raw is None:
                if parameter.required:
                    yield MISSING_PARAMETER.format(
                        where=where, location=parameter.location, name=parameter.name
                    )
                continue
            value = self._coerce_parameter(parameter, raw)
            if value is None:
                yield REPEATED_PARAMETER.format(where=where, name=parameter.name, count=len(raw))
                continue
            yield from self._problems(where, parameter.pointer, value, writing=True)

        yield from self._body_problems(route, op_id, body)

    def _coerce_parameter(self, parameter: Parameter, raw: str | list[str]) -> object | None:
        declared = self._declared_type(parameter.schema)
        if declared == "array":
            values = [raw] if isinstance(raw, str) else raw
            items_type = self._declared_type(self._resolve(parameter.schema, "")[0].get("items"))
            return [_coerce_scalar(v, items_type) for v in values]
        if isinstance(raw, list):
            if len(raw) != 1:
                return None
            raw = raw[0]
        return _coerce_scalar(raw, declared)

    def _body_problems(self, route: Route, op_id: str, body: object | None) -> Iterator[str]:
        where = f"{op_id} request body"
        operation = self._at(route.pointer)
        if "requestBody" not in operation:
            if body is not None:
                yield BODY_NOT_ACCEPTED.format(where=where)
            return
        request_body, pointer = self._resolve(
            operation["requestBody"], f"{route.pointer}/requestBody"
        )
        if body is None:
            if request_body.get("required", False):
                yield BODY_REQUIRED.format(where=where)
            return
        if JSON_MEDIA_TYPE in request_body.get("content", {}):
            schema_pointer = f"{pointer}/content/{escape_pointer(JSON_MEDIA_TYPE)}/schema"
            yield from self._problems(where, schema_pointer, body, writing=True)

    def validate_response(self, match: Match, status: int, body: object | None) -> list[str]:
        """Problems with a response: the status must be declared, the body must fit it."""
        route = self._routes.of(match)
        where = f"{route.operation.operation_id} response {status}"
        responses: dict[str, Any] = self._at(route.pointer)["responses"]
        key = next(
            (k for k in (str(status), f"{status // 100}XX", "default") if k in responses), None
        )
        if key is None:
            declared = ", ".join(responses)
            return [UNDECLARED_STATUS.format(where=where, status=status, declared=declared)]
        if status in BODYLESS_STATUSES:
            return [] if body is None else [BODY_FORBIDDEN.format(where=where, status=status)]
        response, pointer = self._resolve(
            responses[key], f"{route.pointer}/responses/{escape_pointer(key)}"
        )
        content: dict[str, Any] = response.get("content", {})
        if not content:
            return [] if body is None else [NO_BODY_DECLARED.format(where=where, status=status)]
        if JSON_MEDIA_TYPE not in content:
            return []  # only a non-JSON representation (diff, patch, raw) is declared
        if body is None:
            return [BODY_MISSING.format(where=where, status=status)]
        schema_pointer = f"{pointer}/content/{escape_pointer(JSON_MEDIA_TYPE)}/schema"
        return _capped(self._problems(where, schema_pointer, body, writing=False))

    def validate_webhook(self, event: str, payload: Mapping[str, object]) -> list[str]:
        """Problems with a webhook payload, against ``webhook-<event>[-<action>]``."""
        action = payload.get("action")
        base = "webhook-" + event.replace("_", "-")
        schemas: dict[str, Any] = self._document["components"]["schemas"]
        if isinstance(action, str):
            where = f"webhook {event}.{action}"
            name = f"{base}-{action.replace('_', '-')}"
        else:
            where = f"webhook {event}"
            name = base
        if name not in schemas:
            return [WEBHOOK_NOT_IN_SUBSET.format(where=where, schema=name)]
        pointer = f"/components/schemas/{escape_pointer(name)}"
        return _capped(self._problems(where, pointer, payload, writing=False))


def _data_file(*parts: str) -> str:
    return resources.files(DATA_PACKAGE).joinpath(DATA_DIR, *parts).read_text("utf-8")


@functools.cache
def _load_packaged_contract() -> Contract:
    return Contract(json.loads(_data_file(SUBSET_FILE)))


def webhook_example_names() -> list[str]:
    """Names accepted by ``load_webhook_example``, e.g. ``"pull_request.merged"``."""
    return list(_webhook_example_names())


@functools.cache
def _webhook_example_names() -> tuple[str, ...]:
    # Packaged data does not change while the process runs: the folder is listed once,
    # not for every event the stand-in sends.
    directory = resources.files(DATA_PACKAGE).joinpath(DATA_DIR, WEBHOOKS_DIR)
    return tuple(
        sorted(
            entry.name.removesuffix(".json")
            for entry in directory.iterdir()
            if entry.name.endswith(".json")
        )
    )


@functools.cache
def _webhook_example_text(name: str) -> str:
    return _data_file(WEBHOOKS_DIR, f"{name}.json")


def load_webhook_example(name: str) -> dict[str, Any]:
    """A fresh copy of the example payload ``<event>.<variant>`` (safe to mutate)."""
    known = _webhook_example_names()
    if name not in known:
        raise KeyError(UNKNOWN_WEBHOOK_EXAMPLE.format(name=name, known=", ".join(known)))
    payload: dict[str, Any] = json.loads(_webhook_example_text(name))
    return payload
