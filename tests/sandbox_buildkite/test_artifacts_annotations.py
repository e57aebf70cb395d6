"""Artifacts (listing, 302 to a signed URL that serves the bytes) and annotations."""

from __future__ import annotations

from sandbox.buildkite_routes_builds import BAD_STYLE, BODY_REQUIRED
from sandbox.buildkite_routes_jobs import BAD_SIGNATURE, TWO_AUTH_MECHANISMS
from sandbox.buildkite_server import BuildkiteSandbox

from .helpers import PIPELINE, SHA_A, BuildkiteApi, api_path, audit_job

REPORT = b'{"libraries": []}'


def build_with_artifacts(bk: BuildkiteSandbox) -> str:
    build = bk.create_build(
        PIPELINE,
        commit=SHA_A,
        branch="main",
        jobs=[audit_job(artifacts={"reports/abi.json": REPORT, "abi.log": b"x"})],
    )
    job_id: str = build["jobs"][0]["id"]
    return job_id


async def test_build_and_job_artifact_lists(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    job = build_with_artifacts(bk)
    listed = await api("GET", api_path("/builds/1/artifacts"))
    assert [a["path"] for a in listed.body] == ["reports/abi.json", "abi.log"]
    first = listed.body[0]
    assert first["job_id"] == job
    assert first["filename"] == "abi.json"
    assert first["dirname"] == "reports"
    assert first["file_size"] == len(REPORT)
    assert first["mime_type"] == "application/json"
    assert first["state"] == "finished"
    per_job = await api("GET", api_path(f"/builds/1/jobs/{job}/artifacts"))
    assert per_job.body == listed.body
    one = await api("GET", first["url"])
    assert one.body == first
    paged = await api("GET", api_path("/builds/1/artifacts"), params={"per_page": "1"})
    assert len(paged.body) == 1
    assert 'rel="next"' in paged.headers["Link"]


async def test_download_redirects_to_a_signed_url(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    build_with_artifacts(bk)
    artifact = (await api("GET", api_path("/builds/1/artifacts"))).body[0]
    redirect = await api("GET", artifact["download_url"], follow=False)
    assert redirect.status == 302
    location = redirect.headers["Location"]
    assert redirect.body == {"url": location}
    assert location.startswith(bk.store_url)  # another origin, like S3
    assert bk.store_url != bk.root_url
    assert "signature=" in location
    # The signed URL needs no token, like the object store Buildkite sends clients to.
    async with api.session.get(location) as response:
        assert response.status == 200
        assert await response.read() == REPORT
    followed = await api("GET", artifact["download_url"])
    assert followed.raw == REPORT  # the client dropped its token crossing origins
    leaked = await api("GET", location)
    assert (leaked.status, leaked.body) == (400, {"message": TWO_AUTH_MECHANISMS})
    async with api.session.get(location.replace("signature=", "signature=0")) as forged:
        assert forged.status == 403
        assert (await forged.json()) == {"message": BAD_SIGNATURE}
    missing = await api("GET", artifact["url"].replace(artifact["id"], "nope") + "/download")
    assert missing.status == 404


async def test_annotations_create_replace_append(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    path = api_path("/builds/1/annotations")
    made = await api("POST", path, {"body": "Stale: **fa3**", "style": "warning", "context": "abi"})
    assert made.status == 201
    assert made.body["context"] == "abi"
    assert made.body["style"] == "warning"
    assert made.body["body_html"] == "Stale: **fa3**"
    await api("POST", path, {"body": " and more", "context": "abi", "append": True})
    await api("POST", path, {"body": "other"})
    listed = (await api("GET", path)).body
    assert [(a["context"], a["body_html"]) for a in listed] == [
        ("abi", "Stale: **fa3** and more"),
        ("default", "other"),
    ]
    replaced = await api("POST", path, {"body": "fresh", "context": "abi", "style": "info"})
    assert replaced.body["id"] == made.body["id"]
    assert replaced.body["body_html"] == "fresh"


async def test_annotation_validation(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    path = api_path("/builds/1/annotations")
    blank = await api("POST", path, {"body": "  "})
    assert (blank.status, blank.body) == (422, {"message": BODY_REQUIRED})
    no_body = await api("POST", path)
    assert no_body.status == 422
    style = await api("POST", path, {"body": "x", "style": "purple"})
    assert (style.status, style.body) == (422, {"message": BAD_STYLE})
    assert (await api("GET", path)).body == []
