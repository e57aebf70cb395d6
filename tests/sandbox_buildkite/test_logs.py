"""Job logs: JSON, raw bytes (Accept or .txt), HTML, and byte ranges."""

from __future__ import annotations

import pytest

from sandbox.buildkite_server import BuildkiteSandbox

from .helpers import AUDIT_LOG, PIPELINE, SHA_A, BuildkiteApi, api_path, audit_job

TEXT = {"Accept": "text/plain"}


@pytest.fixture
def log_path(bk: BuildkiteSandbox) -> str:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job(log=AUDIT_LOG)])
    return api_path(f"/builds/1/jobs/{build['jobs'][0]['id']}/log")


async def test_log_as_json(bk: BuildkiteSandbox, api: BuildkiteApi, log_path: str) -> None:
    answer = await api("GET", log_path)
    assert answer.status == 200
    assert answer.body["url"] == bk.base_url + log_path
    assert answer.body["content"] == AUDIT_LOG.decode()
    assert answer.body["size"] == len(AUDIT_LOG)
    assert answer.body["header_times"] == [1700000000000]


async def test_raw_log_by_accept_and_suffix(api: BuildkiteApi, log_path: str) -> None:
    by_accept = await api("GET", log_path, headers=TEXT)
    assert by_accept.status == 200
    assert by_accept.raw == AUDIT_LOG  # verbatim: timestamps and ANSI codes kept
    assert by_accept.headers["Content-Type"].startswith("text/plain")
    assert by_accept.headers["Accept-Ranges"] == "bytes"
    by_suffix = await api("GET", log_path + ".txt")
    assert by_suffix.raw == AUDIT_LOG


async def test_html_log_is_escaped_without_escape_codes(api: BuildkiteApi, log_path: str) -> None:
    answer = await api("GET", log_path, headers={"Accept": "text/html"})
    text = answer.raw.decode()
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "\x1b" not in text
    assert "&gt;&gt;&gt; Auditing" in text
    assert (await api("GET", log_path + ".html")).raw == answer.raw


async def test_suffix_range_is_the_tail(api: BuildkiteApi, log_path: str) -> None:
    answer = await api("GET", log_path, headers={**TEXT, "Range": "bytes=-20"})
    assert answer.status == 206
    assert answer.raw == AUDIT_LOG[-20:]
    size = len(AUDIT_LOG)
    assert answer.headers["Content-Range"] == f"bytes {size - 20}-{size - 1}/{size}"
    whole = await api("GET", log_path + ".txt", headers={"Range": "bytes=-999999"})
    assert whole.status == 206
    assert whole.raw == AUDIT_LOG


async def test_explicit_and_open_ranges(api: BuildkiteApi, log_path: str) -> None:
    middle = await api("GET", log_path + ".txt", headers={"Range": "bytes=5-9"})
    assert middle.status == 206
    assert middle.raw == AUDIT_LOG[5:10]
    assert middle.headers["Content-Range"] == f"bytes 5-9/{len(AUDIT_LOG)}"
    open_ended = await api("GET", log_path + ".txt", headers={"Range": "bytes=100-"})
    assert open_ended.raw == AUDIT_LOG[100:]
    clipped = await api("GET", log_path + ".txt", headers={"Range": "bytes=100-999999"})
    assert clipped.raw == AUDIT_LOG[100:]


async def test_unsatisfiable_range_is_416(api: BuildkiteApi, log_path: str) -> None:
    beyond = await api("GET", log_path + ".txt", headers={"Range": f"bytes={len(AUDIT_LOG)}-"})
    assert beyond.status == 416
    assert beyond.headers["Content-Range"] == f"bytes */{len(AUDIT_LOG)}"
    zero = await api("GET", log_path + ".txt", headers={"Range": "bytes=-0"})
    assert zero.status == 416


@pytest.mark.parametrize("header", ["bytes=9-5", "lines=1-2", "bytes=1-2,4-5", "bytes=-"])
async def test_ranges_it_does_not_understand_give_the_whole_log(
    api: BuildkiteApi, log_path: str, header: str
) -> None:
    answer = await api("GET", log_path + ".txt", headers={"Range": header})
    assert answer.status == 200
    assert answer.raw == AUDIT_LOG


async def test_empty_log_tail_is_416(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    path = api_path(f"/builds/1/jobs/{build['jobs'][0]['id']}/log.txt")
    assert (await api("GET", path, headers={"Range": "bytes=-10"})).status == 416
    assert (await api("GET", path)).raw == b""


async def test_log_of_a_job_in_another_build_is_404(
    bk: BuildkiteSandbox, api: BuildkiteApi, log_path: str
) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    assert (await api("GET", log_path.replace("/builds/1/", "/builds/2/"))).status == 404
