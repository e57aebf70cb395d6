"""Cut the sandbox's GitHub contract out of the pinned Octokit npm packages.

Longer than 400 lines because it is a standalone stdlib-only script, run as one file.

Usage: ``python regenerate.py NODE_MODULES [--out DIR]`` where NODE_MODULES holds
``@octokit/openapi`` and ``@octokit/webhooks-examples`` (``regenerate.sh`` installs
the pinned versions into a temporary directory and calls this script).

It writes, deterministically (same input, same bytes):

* ``github-rest-subset.json``: the operations the bot and its sandbox use, every
  component they reference (transitively) and the webhook payload schemas, with
  documentation prose removed and three known spec bugs fixed (see ``README.md``);
* ``webhooks/<event>.<variant>.json``: example deliveries, some cut verbatim from
  the examples package and some derived from them for variants it lacks.

Standard library only, so it runs with any Python 3.11 without the project's venv.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

OPENAPI_PACKAGE = "@octokit/openapi"
OPENAPI_VERSION = "23.0.2"
OPENAPI_FILE = "generated/api.github.com.json"
EXAMPLES_PACKAGE = "@octokit/webhooks-examples"
EXAMPLES_VERSION = "7.6.1"
EXAMPLES_FILE = "api.github.com/index.json"

SUBSET_FILE = "github-rest-subset.json"
# The installed app's slug in derived installation payloads (the recording predates the field).
EXAMPLE_APP_SLUG = "octoapp"
WEBHOOKS_DIR = "webhooks"

OPERATION_IDS: tuple[str, ...] = (
    "git/get-ref",
    "git/get-commit",
    "git/get-tree",
    "git/create-blob",
    "git/get-blob",
    "git/create-tree",
    "git/create-commit",
    "git/create-ref",
    "git/update-ref",
    "git/delete-ref",
    "git/list-matching-refs",
    "git/get-tag",
    "repos/get",
    "repos/get-branch",
    "repos/get-commit",
    "repos/get-content",
    "repos/compare-commits",
    "repos/list-commits",
    "repos/get-collaborator-permission-level",
    "repos/get-combined-status-for-ref",
    "repos/create-commit-status",
    "repos/list-tags",
    "repos/list-releases",
    "repos/get-latest-release",
    "repos/get-release-by-tag",
    "repos/get-release",
    "checks/list-for-ref",
    "checks/create",
    "checks/get",
    "checks/list-annotations",
    "checks/update",
    "pulls/create",
    "pulls/list",
    "pulls/get",
    "pulls/update",
    "pulls/list-reviews",
    "pulls/list-files",
    "pulls/merge",
    "pulls/dismiss-review",
    "issues/create-comment",
    "issues/update-comment",
    "issues/list-comments",
    "issues/create",
    "issues/update",
    "issues/get",
    "issues/list-for-repo",
    "issues/add-labels",
    "issues/remove-label",
    "issues/list-events-for-timeline",
    "reactions/create-for-issue-comment",
    "apps/create-installation-access-token",
    "apps/get-repo-installation",
    "apps/get-authenticated",
    "rate-limit/get",
)

WEBHOOK_SCHEMAS: tuple[str, ...] = (
    "webhook-push",
    "webhook-pull-request-opened",
    "webhook-pull-request-closed",
    "webhook-pull-request-synchronize",
    "webhook-pull-request-labeled",
    "webhook-pull-request-reopened",
    "webhook-pull-request-edited",
    "webhook-pull-request-review-submitted",
    "webhook-pull-request-review-dismissed",
    "webhook-issue-comment-created",
    "webhook-issue-comment-edited",
    "webhook-installation-created",
    "webhook-check-run-created",
    "webhook-check-run-completed",
    "webhook-status",
    "webhook-create",
    "webhook-delete",
    "webhook-release-created",
    "webhook-release-published",
    "webhook-release-released",
    "webhook-release-prereleased",
)

# Documentation-only keywords: they cost most of the 13 MB and validate nothing.
_PROSE_KEYS = frozenset(
    {"description", "summary", "externalDocs", "examples", "example", "title", "tags"}
)
# Vendor extensions are dropped except this one: it marks path parameters whose
# value may contain "/" (a ref such as "heads/feature/x", a file path), which is
# exactly what request routing needs.
_KEPT_EXTENSIONS = frozenset({"x-multi-segment"})
# Keys whose value maps *names* (property names, status codes, media types, ...)
# to objects: the names must survive even when they look like prose keywords
# (a repository has a "description" property).
_NAME_MAP_KEYS = frozenset(
    {"properties", "patternProperties", "paths", "responses", "content", "headers", "schemas"}
)
# Keys whose value is instance data, not schema: copied as is.
_DATA_KEYS = frozenset({"enum", "default", "required", "const"})

_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_REF_PREFIX = "#/components/"


def strip_prose(node: Any, *, name_map: bool = False) -> Any:
    """A copy of ``node`` without documentation keys and vendor extensions."""
    if isinstance(node, list):
        return [strip_prose(item) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if name_map:
            result[key] = strip_prose(value)
        elif key in _DATA_KEYS:
            result[key] = copy.deepcopy(value)
        elif key in _PROSE_KEYS or (key.startswith("x-") and key not in _KEPT_EXTENSIONS):
            continue
        else:
            result[key] = strip_prose(value, name_map=key in _NAME_MAP_KEYS)
    return result


def _refs_in(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _refs_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs_in(item)


def _split_component_ref(ref: str) -> tuple[str, str]:
    if not ref.startswith(_REF_PREFIX):
        raise ValueError(f"unsupported $ref (only local components): {ref}")
    kind, _, name = ref[len(_REF_PREFIX) :].partition("/")
    if not name or "/" in name:
        raise ValueError(f"unsupported $ref shape: {ref}")
    return kind, name


def collect_components(spec: dict[str, Any], roots: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Every component reachable from ``roots`` (already stripped), stripped too."""
    components: dict[str, dict[str, Any]] = {}
    pending = [ref for root in roots for ref in _refs_in(root)]
    while pending:
        kind, name = _split_component_ref(pending.pop())
        if name in components.get(kind, {}):
            continue
        stripped = strip_prose(spec["components"][kind][name])
        components.setdefault(kind, {})[name] = stripped
        pending.extend(_refs_in(stripped))
    # Sorted output keeps the file byte-identical however the walk went.
    return {kind: dict(sorted(components[kind].items())) for kind in sorted(components)}


def _schemas_in(node: Any) -> Iterable[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key not in _DATA_KEYS:
                yield from _schemas_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from _schemas_in(item)


def allow_null_in_nullable_enums(document: dict[str, Any]) -> int:
    """Add ``None`` to ``enum`` where the schema is ``nullable``; returns how many.

    GitHub's description marks such fields nullable and GitHub does send null,
    but an ``enum`` without null rejects it under OpenAPI 3.0 semantics.
    """
    fixed = 0
    for schema in _schemas_in(document):
        enum = schema.get("enum")
        if schema.get("nullable") is True and isinstance(enum, list) and None not in enum:
            enum.append(None)
            fixed += 1
    return fixed


_COMPOSITION_KEYS = ("allOf", "oneOf", "anyOf")
# Read by the validator on the property's own schema (to skip ``required`` for
# read-only fields in requests, ...), so they must stay on the rewritten outer one.
_OUTER_KEYS = ("readOnly", "writeOnly", "deprecated")
NULL_SCHEMA: dict[str, Any] = {"enum": [None]}


def allow_null_in_nullable_compositions(document: dict[str, Any]) -> int:
    """Make ``nullable`` schemas built with allOf/oneOf/anyOf accept null; returns how many.

    OpenAPI 3.0 validators (``OAS30Validator`` among them) honour ``nullable``
    only next to ``type``, so ``{"nullable": true, "oneOf": [...]}`` still
    rejects the null GitHub sends (a commit's ``author`` when its email belongs
    to no account). Each such schema becomes, in place,
    ``{"anyOf": [<itself without nullable>, {"enum": [null]}]}``.
    """
    targets = [
        schema
        for schema in _schemas_in(document)
        if schema.get("nullable") is True and any(key in schema for key in _COMPOSITION_KEYS)
    ]
    for schema in targets:
        inner = {key: value for key, value in schema.items() if key not in _OUTER_KEYS}
        del inner["nullable"]
        outer = {key: schema[key] for key in _OUTER_KEYS if key in schema}
        schema.clear()
        schema["anyOf"] = [inner, copy.deepcopy(NULL_SCHEMA)]
        schema.update(outer)
    return len(targets)


def allow_bare_label_array(operation: dict[str, Any]) -> bool:
    """Accept a bare JSON array of label names in ``issues/add-labels``.

    GitHub accepts it (and PyGithub sends it), the spec's own prose says so, but
    this version's schema only lists the ``{"labels": [...]}`` form.
    """
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    alternatives: list[Any] = schema.get("oneOf", [])
    if any(isinstance(alt, dict) and alt.get("type") == "array" for alt in alternatives):
        return False
    alternatives.append({"type": "array", "minItems": 1, "items": {"type": "string"}})
    return True


def extract_operations(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    wanted = set(OPERATION_IDS)
    paths: dict[str, dict[str, Any]] = {}
    for path, item in spec["paths"].items():
        shared = item.get("parameters")
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict) or operation.get("operationId") not in wanted:
                continue
            kept: dict[str, Any] = {"operationId": operation["operationId"]}
            parameters = [*(shared or []), *operation.get("parameters", [])]
            if parameters:
                kept["parameters"] = parameters
            for key in ("requestBody", "responses"):
                if key in operation:
                    kept[key] = operation[key]
            paths.setdefault(path, {})[method] = strip_prose(kept)
            wanted.discard(operation["operationId"])
    if wanted:
        raise SystemExit(f"operations missing from the spec: {sorted(wanted)}")
    return paths


def build_subset(spec: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
    """The subset, how many nullable enums and how many nullable compositions were fixed."""
    paths = extract_operations(spec)
    missing = [name for name in WEBHOOK_SCHEMAS if name not in spec["components"]["schemas"]]
    if missing:
        raise SystemExit(f"webhook schemas missing from the spec: {missing}")
    webhook_refs = [{"$ref": f"{_REF_PREFIX}schemas/{name}"} for name in WEBHOOK_SCHEMAS]
    components = collect_components(spec, [paths, webhook_refs])
    subset: dict[str, Any] = {
        "openapi": spec["openapi"],
        "info": {
            "title": f"Subset of {OPENAPI_PACKAGE}@{OPENAPI_VERSION} {OPENAPI_FILE}",
            "version": spec["info"]["version"],
            "license": spec["info"]["license"],
        },
        "paths": paths,
        "components": components,
    }
    for item in paths.values():
        for operation in item.values():
            if operation["operationId"] == "issues/add-labels":
                allow_bare_label_array(operation)
    # Enums first: a nullable enum inside a composition keeps its own null too.
    enum_fixes = allow_null_in_nullable_enums(subset)
    return subset, enum_fixes, allow_null_in_nullable_compositions(subset)


# --- webhook examples ------------------------------------------------------

Payload = dict[str, Any]


def _pick(
    examples: dict[str, list[Payload]], event: str, index: int, action: str | None
) -> Payload:
    payload = examples[event][index]
    if payload.get("action") != action:
        raise SystemExit(f"{event}[{index}] is {payload.get('action')!r}, expected {action!r}")
    return copy.deepcopy(payload)


def _walk_objects(node: Any) -> Iterable[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk_objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk_objects(item)


def _iso_utc(epoch_seconds: int) -> str:
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def modernize(payload: Payload) -> Payload:
    """Add the fields today's schema requires that the 2019-era recordings lack.

    Only additions GitHub itself now makes, with the value it sends when the
    feature is unused (a release's ``updated_at``, which is no feature, is its last
    recorded change); nothing present is changed except the installation
    timestamps, which GitHub now sends as ISO 8601 strings instead of epoch ints.
    """
    for obj in _walk_objects(payload):
        if {"full_name", "owner", "has_issues"} <= obj.keys():  # a repository
            obj.setdefault("has_discussions", False)
        if {"verified", "reason", "signature"} <= obj.keys():  # a commit verification
            obj.setdefault("verified_at", None)
        if {"tag_name", "upload_url", "assets"} <= obj.keys():  # a release
            obj.setdefault("immutable", False)
            # A recorded release was last changed when it was published (or created).
            obj.setdefault("updated_at", obj.get("published_at") or obj.get("created_at"))
    installation = payload.get("installation")
    if isinstance(installation, dict) and "account" in installation:  # not the {id} stub
        installation.setdefault("app_slug", EXAMPLE_APP_SLUG)
        for key in ("created_at", "updated_at"):
            if isinstance(installation.get(key), int):
                installation[key] = _iso_utc(installation[key])
    return payload


def merged(closed: Payload) -> Payload:
    """A ``closed`` delivery turned into the one GitHub sends for a merge."""
    pull = closed["pull_request"]
    pull["merged"] = True
    pull["merged_at"] = pull["closed_at"]
    pull["merged_by"] = copy.deepcopy(closed["sender"])
    if not pull.get("merge_commit_sha"):
        seed = f"merge of {pull['head']['sha']}".encode()
        pull["merge_commit_sha"] = hashlib.sha1(seed).hexdigest()
    return closed


def approved(submitted: Payload) -> Payload:
    # Webhooks spell review states in lower case; the REST reviews list uses "APPROVED".
    submitted["review"]["state"] = "approved"
    return submitted


def on_pull_request(created: Payload) -> Payload:
    """An ``issue_comment`` on a pull request: GitHub adds ``issue.pull_request``."""
    issue = created["issue"]
    html_url = issue["html_url"].replace("/issues/", "/pull/")
    issue["pull_request"] = {
        "url": f"{issue['repository_url']}/pulls/{issue['number']}",
        "html_url": html_url,
        "diff_url": f"{html_url}.diff",
        "patch_url": f"{html_url}.patch",
        "merged_at": None,
    }
    return created


def prereleased(recorded: Payload) -> Payload:
    """A ``prereleased`` delivery is about a pre-release; the recording's says otherwise
    (``prerelease: false``), which today's schema (``enum: [true]``) refuses."""
    recorded["release"]["prerelease"] = True
    return recorded


Derivation = Callable[[Payload], Payload]
# name -> (event, index in the package's list for that event, expected action,
# derivations applied after ``modernize``). Indices name recordings that fit the
# current schema best; ``modernize`` fills what they still lack.
WEBHOOK_EXAMPLES: dict[str, tuple[str, int, str | None, tuple[Derivation, ...]]] = {
    "push.branch": ("push", 4, None, ()),
    "pull_request.opened": ("pull_request", 12, "opened", ()),
    "pull_request.closed": ("pull_request", 3, "closed", ()),
    "pull_request.merged": ("pull_request", 3, "closed", (merged,)),
    "pull_request.synchronize": ("pull_request", 22, "synchronize", ()),
    "pull_request.labeled": ("pull_request", 8, "labeled", ()),
    "pull_request.reopened": ("pull_request", 18, "reopened", ()),
    "pull_request_review.submitted": ("pull_request_review", 2, "submitted", ()),
    "pull_request_review.approved": ("pull_request_review", 2, "submitted", (approved,)),
    "pull_request_review.dismissed": ("pull_request_review", 1, "dismissed", ()),
    "issue_comment.created": ("issue_comment", 1, "created", ()),
    "issue_comment.created_on_pull_request": ("issue_comment", 1, "created", (on_pull_request,)),
    "issue_comment.edited": ("issue_comment", 7, "edited", ()),
    "installation.created": ("installation", 1, "created", ()),
    "check_run.created": ("check_run", 4, "created", ()),
    "check_run.completed": ("check_run", 1, "completed", ()),
    "status.success": ("status", 0, None, ()),
    "create.tag": ("create", 0, None, ()),
    "delete.tag": ("delete", 0, None, ()),
    "release.created": ("release", 1, "created", ()),
    "release.published": ("release", 0, "published", ()),
    "release.released": ("release", 12, "released", ()),
    "release.prereleased": ("release", 8, "prereleased", (prereleased,)),
}


def build_webhook_examples(package_index: list[dict[str, Any]]) -> dict[str, Payload]:
    examples = {entry["name"]: entry["examples"] for entry in package_index}
    result: dict[str, Payload] = {}
    for name, (event, index, action, derivations) in WEBHOOK_EXAMPLES.items():
        payload = modernize(_pick(examples, event, index, action))
        for derive in derivations:
            payload = derive(payload)
        result[name] = payload
    return result


# --- output ----------------------------------------------------------------


def _dump(data: Any, indent: int) -> str:
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def regenerate(node_modules: Path, out: Path) -> tuple[int, int]:
    """Write the subset and the examples under ``out``.

    Returns how many nullable enums and nullable compositions were fixed.
    """
    spec = json.loads((node_modules / OPENAPI_PACKAGE / OPENAPI_FILE).read_text("utf-8"))
    if spec["info"]["version"] != OPENAPI_VERSION:
        raise SystemExit(f"expected {OPENAPI_PACKAGE}@{OPENAPI_VERSION}, got {spec['info']}")
    examples_meta = json.loads(
        (node_modules / EXAMPLES_PACKAGE / "package.json").read_text("utf-8")
    )
    if examples_meta["version"] != EXAMPLES_VERSION:
        raise SystemExit(f"expected {EXAMPLES_PACKAGE}@{EXAMPLES_VERSION}")
    package_index = json.loads((node_modules / EXAMPLES_PACKAGE / EXAMPLES_FILE).read_text("utf-8"))

    subset, enum_fixes, composition_fixes = build_subset(spec)
    out.mkdir(parents=True, exist_ok=True)
    (out / SUBSET_FILE).write_text(_dump(subset, indent=1), "utf-8")

    webhooks = out / WEBHOOKS_DIR
    webhooks.mkdir(exist_ok=True)
    for stale in webhooks.glob("*.json"):
        stale.unlink()
    for name, payload in build_webhook_examples(package_index).items():
        (webhooks / f"{name}.json").write_text(_dump(payload, indent=2), "utf-8")
    return enum_fixes, composition_fixes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("node_modules", type=Path, nargs="?", help="directory holding @octokit/*")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent, help="output directory"
    )
    parser.add_argument(
        "--print-packages",
        action="store_true",
        help="print the pinned npm packages (for regenerate.sh) and exit",
    )
    args = parser.parse_args(argv)
    if args.print_packages:
        print(f"{OPENAPI_PACKAGE}@{OPENAPI_VERSION} {EXAMPLES_PACKAGE}@{EXAMPLES_VERSION}")
        return 0
    if args.node_modules is None:
        parser.error("NODE_MODULES is required")
    enum_fixes, composition_fixes = regenerate(args.node_modules, args.out)
    print(
        f"wrote {args.out / SUBSET_FILE} ({enum_fixes} nullable enums and"
        f" {composition_fixes} nullable compositions now allow null)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
