"""Web addresses of what the status page names, built from what the store records, pure.

GitHub's are made from the repository's ``owner/name`` and a number or a commit;
Buildkite's from the organization, pipeline and build number (a retried job's
record names its build as ``org/pipeline/number``) and a job's id. A piece that is
not shaped as those services shape it gives no link: the text is shown alone.
"""

from __future__ import annotations

import re
from urllib.parse import quote

GITHUB = "https://github.com"
BUILDKITE = "https://buildkite.com"

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SHA = re.compile(r"[0-9a-f]{7,40}")
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_JOB = re.compile(r"[0-9a-fA-F-]{8,64}")


def pull(repo: str, number: int | None) -> str | None:
    if number is None or not _REPO.fullmatch(repo):
        return None
    return f"{GITHUB}/{repo}/pull/{number}"


def issue(repo: str, number: int | None) -> str | None:
    if number is None or not _REPO.fullmatch(repo):
        return None
    return f"{GITHUB}/{repo}/issues/{number}"


def comment(repo: str, number: int, comment_id: int | None) -> str | None:
    """A comment on an issue or a PR (GitHub sends an issue's address on to its PR's)."""
    found = issue(repo, number)
    if found is None or comment_id is None:
        return found
    return f"{found}#issuecomment-{comment_id}"


def commit(repo: str | None, sha: str | None) -> str | None:
    if repo is None or sha is None or not _REPO.fullmatch(repo) or not _SHA.fullmatch(sha):
        return None
    return f"{GITHUB}/{repo}/commit/{sha}"


def build(org: str | None, pipeline: str, number: int | None) -> str | None:
    if org is None or number is None or not (_SLUG.fullmatch(org) and _SLUG.fullmatch(pipeline)):
        return None
    return f"{BUILDKITE}/{org}/{pipeline}/builds/{number}"


def build_key(key: str) -> str | None:
    """A build recorded as ``org/pipeline/number``."""
    org, _, rest = key.partition("/")
    pipeline, _, number = rest.partition("/")
    return build(org, pipeline, int(number)) if number.isdigit() else None


def job(build_url: str | None, job_id: str) -> str | None:
    if build_url is None or not _JOB.fullmatch(job_id):
        return None
    return f"{build_url}#{quote(job_id)}"
