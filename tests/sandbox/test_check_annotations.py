"""Check-run annotations: at most 50 a request, appended by updates, listed per run."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_annotations import BAD_LINES, COLUMNS_ON_ONE_LINE
from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi
from .test_check_runs import grant_checks_write

NAME = "CI routing"


def note(n: int, **changes: Any) -> dict[str, Any]:
    return {
        "path": ".buildkite/test_areas/torch_abi.yaml",
        "start_line": n,
        "end_line": n,
        "annotation_level": "failure",
        "message": f"problem {n}",
        **changes,
    }


def output(annotations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"title": "CI routing", "summary": "2 steps change", "annotations": annotations}


async def test_annotations_are_appended_and_listed_in_pages(
    sandbox: GitHubSandbox, raw: RawApi, gh: GitHubAPI
) -> None:
    grant_checks_write(sandbox)
    sha = sandbox.head(REPO)
    first = [note(n) for n in range(1, 51)]
    created = await raw(
        "POST",
        f"/repos/{REPO}/check-runs",
        {"name": NAME, "head_sha": sha, "output": output(first)},
    )
    assert created.status == 201
    assert created.body["output"]["annotations_count"] == 50
    run = created.body["id"]
    more = [note(51, start_column=3, end_column=9, title="device", raw_details="d")]
    updated = await gh.patch(
        f"/repos/{REPO}/check-runs/{run}",
        data={"conclusion": "failure", "output": output(more)},
    )
    assert updated["output"]["annotations_count"] == 51

    listed = [a async for a in gh.getiter(f"/repos/{REPO}/check-runs/{run}/annotations")]
    assert [a["message"] for a in listed] == [f"problem {n}" for n in range(1, 52)]
    last = listed[-1]
    assert (last["start_column"], last["end_column"], last["title"]) == (3, 9, "device")
    assert last["blob_href"].endswith(f"/blob/{sha}/.buildkite/test_areas/torch_abi.yaml")
    assert sandbox.violations == []


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        # What the request schema says, refused by the contract before the route runs:
        ([note(n) for n in range(51)], "$.output.annotations: "),
        ([note(1), {"path": "a"}], "$.output.annotations[1]: 'end_line' is a required"),
        ([note(1, annotation_level="error")], "'error' is not one of"),
        # What only GitHub's code checks:
        ([note(4, end_line=3)], BAD_LINES.format(index=0)),
        ([note(4, end_line=5, start_column=1)], COLUMNS_ON_ONE_LINE.format(index=0)),
    ],
)
async def test_refused_annotations_make_no_run(
    sandbox: GitHubSandbox, raw: RawApi, annotations: list[dict[str, Any]], message: str
) -> None:
    grant_checks_write(sandbox)
    body = {
        "name": NAME,
        "head_sha": sandbox.head(REPO),
        "output": output(annotations),
    }
    refused = await raw("POST", f"/repos/{REPO}/check-runs", body)
    assert refused.status == 422
    assert message in refused.body["message"]
    assert sandbox.repo(REPO).check_runs == {}
