"""A job log saying the registry has no manifest for the image the job pulls."""

from __future__ import annotations

import pytest

from bot.images.missing import MAX_SEARCHED_CHARS, image_missing_line, masked

DOCKER = (
    "docker: Error response from daemon: manifest for "
    "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:abc-cpu not found: manifest unknown"
)
CONTAINERD = "failed to resolve reference: registry.example/repo:abc: manifest unknown"
BARE_FOR = "manifest for registry.example/repo:abc not found"


@pytest.mark.parametrize("lines", [None, [], ["", "all good"]])
def test_no_evidence_no_line(lines: list[str] | None) -> None:
    assert image_missing_line(lines) is None


@pytest.mark.parametrize("line", [DOCKER, CONTAINERD, BARE_FOR])
def test_each_wording_of_the_registry_is_found(line: str) -> None:
    assert image_missing_line(["pulling", line, "exit 1"]) == line


def test_the_line_nearest_the_end_wins() -> None:
    assert image_missing_line([DOCKER, "retrying", CONTAINERD, "giving up"]) == CONTAINERD


@pytest.mark.parametrize(
    "line",
    [
        "FAILED tests/test_manifest_unknown.py::test_pull - AssertionError",
        "PASSED tests/images/manifest_unknown.py",
        "collecting (tests/x/manifest_for_y_not_found.py::test_z)",
    ],
)
def test_a_test_named_after_a_missing_manifest_is_no_evidence(line: str) -> None:
    assert image_missing_line([line]) is None


def test_evidence_past_the_searched_head_of_a_long_line_is_not_seen() -> None:
    line = "x" * MAX_SEARCHED_CHARS + " manifest unknown"
    assert image_missing_line([line]) is None
    near = "x" * (MAX_SEARCHED_CHARS - 10) + " manifest unknown"
    assert image_missing_line([near]) is None  # cut mid-phrase
    inside = "manifest unknown " + "x" * MAX_SEARCHED_CHARS
    assert image_missing_line([inside]) == inside


def test_masked_replaces_test_ids_and_cuts_long_lines() -> None:
    assert masked("FAILED tests/a/test_b.py::test_c[x] - boom") == "FAILED <test> - boom"
    assert masked("see 'setup.py' and (pkg/mod.py)") == "see '<test>' and (<test>)"
    assert masked("no path here") == "no path here"
    # Only after a space, bracket or quote: part of a longer word is left alone.
    assert masked("a=b/c.py") == "a=b/c.py"
    assert masked("y" * (MAX_SEARCHED_CHARS + 5)) == "y" * MAX_SEARCHED_CHARS
