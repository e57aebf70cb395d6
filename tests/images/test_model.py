"""One registry check of a build's images, stored and loaded back."""

from __future__ import annotations

from typing import Any

from bot.images.model import ImageCheck, ImageRow

SHA = "0123456789abcdef0123456789abcdef01234567"
IMAGE = f"registry.example/repo:{SHA}"

THERE = ImageRow(IMAGE, SHA, "200", True, ("gpu-one", "gpu-two"), "image-build")
GONE = ImageRow(
    f"{IMAGE}-torch-nightly-cpu",
    f"{SHA}-torch-nightly-cpu",
    "404",
    False,
    ("cpu-one",),
    "image-build-cpu",
)
STABLE = ImageRow(
    f"{IMAGE}-cpu",
    f"{SHA}-cpu",
    "200",
    True,
    (),
    "image-build-cpu",
    counterpart_of=f"{SHA}-torch-nightly-cpu",
)
STABLE_GONE = ImageRow(
    f"{IMAGE}-arm64",
    f"{SHA}-arm64",
    "404",
    False,
    (),
    None,
    counterpart_of=f"{SHA}-torch-nightly-arm64",
)
UNKNOWN = ImageRow(f"{IMAGE}-arm64", f"{SHA}-arm64", "429 rate limited", None, ("arm",), None)

CHECK = ImageCheck(
    build_number=4242,
    build_url="https://buildkite.example/vllm/ci/builds/4242",
    commit=SHA,
    branch="main",
    nightly=True,
    checked_at=1_747_000_000.5,
    rows=(THERE, GONE, STABLE, STABLE_GONE, UNKNOWN),
)


def test_dump_then_load_gives_the_same_check() -> None:
    doc = CHECK.dump()
    assert doc["build_number"] == 4242
    assert doc["rows"][1]["status"] == "404"
    assert doc["problem"] is None
    assert ImageCheck.load(doc) == CHECK


def test_a_check_with_a_problem_round_trips() -> None:
    check = ImageCheck(7, "", "", "main", False, 0.0, (), problem="no routing")
    assert ImageCheck.load(check.dump()) == check


def test_load_fills_what_an_older_document_left_out() -> None:
    doc: dict[str, Any] = {
        "build_number": "12",
        "rows": [{"image": IMAGE, "tag": SHA, "status": 200}],
        "build_url": None,
    }
    assert ImageCheck.load(doc) == ImageCheck(
        build_number=12,
        build_url="",
        commit="",
        branch="",
        nightly=False,
        checked_at=0.0,
        rows=(ImageRow(IMAGE, SHA, "200", None, (), None),),
    )
    assert ImageCheck.load({"build_number": 1, "rows": None}).rows == ()


def test_missing_is_the_absent_tags_that_stand_for_no_other() -> None:
    assert CHECK.missing == (GONE,)
    assert ImageCheck(1, "", SHA, "main", False, 0.0, (THERE, UNKNOWN)).missing == ()
