"""Reads: query encoding, page and cursor pagination, log tails, artifacts."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.buildkite.client import BuildkiteClient
from bot.buildkite.errors import ArtifactTooLarge, BuildkiteError
from bot.buildkite.transport import BuildkiteConnection

from .buildkite_fakes import PIPELINE, TOKEN, FakeBuildkite, MakeClient, json_answer, raw_answer

BUILDS = PIPELINE + "/builds"


def build(number: int) -> dict[str, object]:
    return {"number": number, "state": "failed"}


# --- builds: the query and Link pagination ---------------------------------------


async def test_builds_query_repeats_state_and_encodes_values(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", BUILDS, json_answer([build(9), build(8)]))
    found = await client.builds(
        "vllm",
        "ci",
        commit="abc123",
        branch="feature/x y&z",
        states=("failed", "timed_out"),
        per_page=50,
        exclude_jobs=True,
    )
    assert [b["number"] for b in found] == [9, 8]
    (request,) = fake_buildkite.seen("GET", BUILDS)
    assert request.query == (
        "commit=abc123&branch=feature%2Fx%20y%26z&state[]=failed&state[]=timed_out"
        "&exclude_jobs=true&per_page=50"
    )
    assert request.headers["authorization"] == f"Bearer {TOKEN}"


async def test_builds_without_filters_asks_only_for_the_page_size(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", BUILDS, json_answer([]))
    assert await client.builds("vllm", "ci") == []
    assert fake_buildkite.seen("GET", BUILDS)[0].query == "per_page=30"


async def test_builds_follow_link_next_up_to_max_pages(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    async def pages(request: web.Request) -> web.StreamResponse:
        page = int(request.query.get("page", "1"))
        headers = {}
        if page < 3:
            following = buildkite_server.make_url(BUILDS).with_query(page=page + 1, per_page=2)
            last = buildkite_server.make_url(BUILDS).with_query(page=3, per_page=2)
            headers["Link"] = f'<{following}>; rel="next", <{last}>; rel="last"'
        return web.json_response([build(10 - 2 * page), build(9 - 2 * page)], headers=headers)

    fake_buildkite.route("GET", BUILDS, pages)
    two = await client.builds("vllm", "ci", per_page=2, max_pages=2)
    assert [b["number"] for b in two] == [8, 7, 6, 5]
    assert len(fake_buildkite.seen("GET", BUILDS)) == 2
    every = await client.builds("vllm", "ci", per_page=2, max_pages=10)
    assert [b["number"] for b in every] == [8, 7, 6, 5, 4, 3]  # stops where Link ends
    assert client.requests_made == 5


async def test_a_link_looping_back_is_refused(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    itself = buildkite_server.make_url(BUILDS).with_query(per_page=30)
    fake_buildkite.answer(
        "GET", BUILDS, json_answer([build(1)], headers={"Link": f'<{itself}>; rel="next"'})
    )
    with pytest.raises(BuildkiteError, match="lead back"):
        await client.builds("vllm", "ci", max_pages=5)


@pytest.mark.parametrize(
    ("argument", "value"), [("per_page", 0), ("per_page", 101), ("max_pages", 0)]
)
async def test_builds_arguments_are_checked(
    client: BuildkiteClient, argument: str, value: int
) -> None:
    with pytest.raises(ValueError, match=argument):
        await client.builds("vllm", "ci", **{argument: value})  # type: ignore[arg-type]


async def test_a_build_with_retried_jobs(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", BUILDS + "/7", json_answer({"number": 7, "jobs": []}))
    assert await client.build("vllm", "ci", 7) == {"number": 7, "jobs": []}
    assert await client.build("vllm", "ci", 7, include_retried_jobs=True) == {
        "number": 7,
        "jobs": [],
    }
    assert [r.query for r in fake_buildkite.seen("GET", BUILDS + "/7")] == [
        "",
        "include_retried_jobs=true",
    ]


@pytest.mark.parametrize(
    "answer", [raw_answer(b"<html>oops</html>"), json_answer([1, 2]), json_answer("text")]
)
async def test_an_answer_of_the_wrong_shape_is_a_permanent_error(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, answer: object
) -> None:
    fake_buildkite.answer("GET", BUILDS + "/7", answer)  # type: ignore[arg-type]
    with pytest.raises(BuildkiteError, match="not"):
        await client.build("vllm", "ci", 7)


async def test_builds_that_are_not_a_list_of_objects(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", BUILDS, json_answer([1, 2]))
    with pytest.raises(BuildkiteError, match="a JSON list of objects"):
        await client.builds("vllm", "ci")


# --- jobs: cursor pagination ------------------------------------------------------


async def test_jobs_follow_the_cursor_to_the_end(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    jobs_path = BUILDS + "/7/jobs"

    async def pages(request: web.Request) -> web.StreamResponse:
        cursor = request.query.get("cursor")
        if cursor is None:  # first page: an absolute next link
            following = buildkite_server.make_url(jobs_path).with_query(cursor="c2")
            return web.json_response({"items": [{"id": "j1"}], "links": {"next": str(following)}})
        if cursor == "c2":  # second page: a relative one
            return web.json_response(
                {"items": [{"id": "j2"}, {"id": "j3"}], "links": {"next": "jobs?cursor=c3"}}
            )
        return web.json_response({"items": [{"id": "j4"}], "links": {"next": None}})

    fake_buildkite.route("GET", jobs_path, pages)
    jobs = await client.jobs("vllm", "ci", 7, states=("failed", "timed_out"), step_key="audit")
    assert [job["id"] for job in jobs] == ["j1", "j2", "j3", "j4"]
    assert [r.query for r in fake_buildkite.seen("GET", jobs_path)] == [
        "state[]=failed&state[]=timed_out&step_key=audit",
        "cursor=c2",
        "cursor=c3",
    ]


async def test_jobs_page_without_items_is_an_error(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", BUILDS + "/7/jobs", json_answer({"links": {}}))
    with pytest.raises(BuildkiteError, match="a JSON list of objects"):
        await client.jobs("vllm", "ci", 7)


async def test_a_cursor_looping_back_is_refused(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer(
        "GET", BUILDS + "/7/jobs", json_answer({"items": [], "links": {"next": "jobs?cursor=x"}})
    )
    with pytest.raises(BuildkiteError, match="lead back"):
        await client.jobs("vllm", "ci", 7)


# --- log tail ---------------------------------------------------------------------

LOG = BUILDS + "/7/jobs/job-1/log"
WHOLE_LOG = b"".join(b"line %04d \x1b[31mred\x1b[0m \xff\n" % i for i in range(200))


async def test_log_tail_asks_for_a_range_and_takes_the_206(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer(
        "GET", LOG, raw_answer(WHOLE_LOG[-100:], 206, {"Content-Range": "bytes 1-100/101"})
    )
    assert await client.job_log_tail("vllm", "ci", 7, "job-1", max_bytes=100) == WHOLE_LOG[-100:]
    (request,) = fake_buildkite.seen("GET", LOG)
    assert request.headers["range"] == "bytes=-100"
    assert request.headers["accept"] == "text/plain"


async def test_log_tail_keeps_the_end_of_a_whole_log(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", LOG, raw_answer(WHOLE_LOG))  # Range ignored: 200
    assert await client.job_log_tail("vllm", "ci", 7, "job-1", max_bytes=100) == WHOLE_LOG[-100:]


async def test_log_tail_of_a_log_larger_than_many_chunks(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    big = bytes(range(256)) * 4096 + b"the end"  # about 1 MB, streamed in chunks

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for start in range(0, len(big), 10_000):
            await response.write(big[start : start + 10_000])
        await response.write_eof()
        return response

    fake_buildkite.route("GET", LOG, stream)
    assert await client.job_log_tail("vllm", "ci", 7, "job-1") == big[-65536:]


async def test_log_shorter_than_the_tail_is_whole(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", LOG, raw_answer(b"short\n"))
    assert await client.job_log_tail("vllm", "ci", 7, "job-1") == b"short\n"


async def test_log_tail_416_is_an_empty_log(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("GET", LOG, raw_answer(b"", 416))
    assert await client.job_log_tail("vllm", "ci", 7, "job-1") == b""


async def test_log_tail_of_an_unknown_job_is_a_permanent_error(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    with pytest.raises(BuildkiteError) as caught:
        await client.job_log_tail("vllm", "ci", 7, "nope")
    assert (caught.value.status, caught.value.message) == (404, "Not Found")


# --- artifacts ----------------------------------------------------------------------

ARTIFACTS = BUILDS + "/7/artifacts"
DOWNLOAD = ARTIFACTS + "/a1/download"


async def test_artifacts_list_follows_every_page(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    async def pages(request: web.Request) -> web.StreamResponse:
        if request.query.get("page") == "2":
            return web.json_response([{"id": "a3"}])
        following = buildkite_server.make_url(ARTIFACTS).with_query(page=2, per_page=100)
        return web.json_response(
            [{"id": "a1"}, {"id": "a2"}], headers={"Link": f'<{following}>; rel="next"'}
        )

    fake_buildkite.route("GET", ARTIFACTS, pages)
    assert [a["id"] for a in await client.artifacts("vllm", "ci", 7)] == ["a1", "a2", "a3"]
    assert fake_buildkite.seen("GET", ARTIFACTS)[0].query == "per_page=100"


def redirect_to(location: str) -> web.StreamResponse:
    return web.Response(status=302, headers={"Location": location})


async def test_download_follows_the_redirect_without_the_token(
    client: BuildkiteClient,
    fake_buildkite: FakeBuildkite,
    buildkite_server: TestServer,
    storage: FakeBuildkite,
    storage_server: TestServer,
) -> None:
    signed = str(storage_server.make_url("/bucket/wheel.whl").with_query(signature="s3cr3t"))
    fake_buildkite.answer("GET", DOWNLOAD, lambda: redirect_to(signed))
    storage.answer("GET", "/bucket/wheel.whl", raw_answer(b"wheel bytes"))
    url = str(buildkite_server.make_url(DOWNLOAD))
    assert await client.download_artifact(url, max_bytes=11) == b"wheel bytes"
    assert fake_buildkite.seen("GET", DOWNLOAD)[0].headers["authorization"] == f"Bearer {TOKEN}"
    (fetched,) = storage.seen("GET", "/bucket/wheel.whl")
    assert "authorization" not in fetched.headers
    assert fetched.query == "signature=s3cr3t"
    assert client.requests_made == 1  # the storage request costs no API budget


async def test_download_refuses_a_declared_size_past_the_cap(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    fake_buildkite.answer("GET", DOWNLOAD, raw_answer(b"x" * 1001))
    with pytest.raises(ArtifactTooLarge) as caught:
        await client.download_artifact(str(buildkite_server.make_url(DOWNLOAD)), max_bytes=1000)
    assert caught.value.max_bytes == 1000


async def test_download_stops_a_stream_as_it_passes_the_cap(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()  # chunked: no Content-Length to refuse early
        await response.prepare(request)
        try:
            for _ in range(1000):
                await response.write(b"y" * 65536)
        except ConnectionError:
            pass  # the client hung up, as it should
        return response

    fake_buildkite.route("GET", DOWNLOAD, endless)
    with pytest.raises(ArtifactTooLarge):
        await client.download_artifact(str(buildkite_server.make_url(DOWNLOAD)), max_bytes=200_000)


async def test_download_refuses_a_declared_size_before_reading_the_body(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    gate = asyncio.Event()

    async def declared_then_stalled(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_length = 10_000_000
        await response.prepare(request)
        await response.write(b"z" * 10)
        await gate.wait()  # the rest never comes: only the header can end this early
        return response

    fake_buildkite.route("GET", DOWNLOAD, declared_then_stalled)
    client = make_client(timeout=0.05, max_retries=0)
    try:
        with pytest.raises(ArtifactTooLarge):
            await client.download_artifact(str(buildkite_server.make_url(DOWNLOAD)), max_bytes=1000)
    finally:
        gate.set()


async def test_download_redirect_problems(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, buildkite_server: TestServer
) -> None:
    fake_buildkite.answer("GET", DOWNLOAD, lambda: web.Response(status=302))
    url = str(buildkite_server.make_url(DOWNLOAD))
    with pytest.raises(BuildkiteError, match="without a Location"):
        await client.download_artifact(url, max_bytes=10)
    fake_buildkite.answer("GET", DOWNLOAD, lambda: redirect_to(DOWNLOAD))  # relative, to itself
    with pytest.raises(BuildkiteError, match="more than 5 redirects"):
        await client.download_artifact(url, max_bytes=10)


def test_the_token_is_not_in_the_connection_repr() -> None:
    connection = BuildkiteConnection(token=TOKEN)
    assert TOKEN not in repr(connection)
    assert connection.api_url == "https://api.buildkite.com/v2"
    assert (connection.timeout, connection.max_retries, connection.max_wait) == (30.0, 4, 90.0)


def test_the_connection_gives_its_patience_to_the_request_policy() -> None:
    async def sleep(seconds: float) -> None:
        return None

    connection = BuildkiteConnection(token=TOKEN, timeout=5.0, max_retries=1, max_wait=7.0)
    policy = connection.policy(clock=lambda: 42.0, sleep=sleep)
    assert (policy.timeout, policy.max_retries, policy.max_wait) == (5.0, 1, 7.0)
    assert policy.clock() == 42.0
    assert policy.sleep is sleep


async def test_path_segments_are_encoded(
    make_client: MakeClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer(
        "GET", "/v2/organizations/my%20org/pipelines/a%2Fb/builds/3", json_answer({"number": 3})
    )
    assert await make_client().build("my org", "a/b", 3) == {"number": 3}
