"""The registry table: summary lines, then tag → status → pulled by → built by."""

from __future__ import annotations

from bot.images.model import ImageCheck, ImageRow
from bot.images.text import (
    COUNTERPART,
    MAX_CONSUMERS_SHOWN,
    NO_IMAGES,
    NO_PRODUCER,
    ROW,
    SUMMARY_ALL_THERE,
    SUMMARY_MISSING,
    SUMMARY_UNKNOWN,
    SUMMARY_WRONG_TAG,
    TABLE_HEAD,
    image_table,
    row,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
IMAGE = f"registry.example/repo:{SHA}"


def image(suffix: str, status: str, exists: bool | None, *consumers: str, **kw: str) -> ImageRow:
    return ImageRow(
        image=IMAGE + suffix,
        tag=SHA + suffix,
        status=status,
        exists=exists,
        consumers=consumers,
        producer=kw.get("producer"),
        counterpart_of=kw.get("counterpart_of"),
    )


def check(*rows: ImageRow) -> ImageCheck:
    return ImageCheck(
        build_number=4242,
        build_url="https://buildkite.example/vllm/ci/builds/4242",
        commit=SHA,
        branch="main",
        nightly=True,
        checked_at=0.0,
        rows=rows,
    )


def table(*rows: ImageRow) -> str:
    return TABLE_HEAD + "\n" + "\n".join(row(r) for r in rows)


CUDA = image("", "200", True, "gpu-one", "gpu-two", producer="image-build")
NIGHTLY_CPU = image("-torch-nightly-cpu", "404", False, "cpu-one", producer="image-build-cpu")
STABLE_CPU = image(
    "-cpu", "200", True, producer="image-build-cpu", counterpart_of=f"{SHA}-torch-nightly-cpu"
)


# --- rows -------------------------------------------------------------------------


def test_a_row_names_its_consumers_and_producer() -> None:
    assert row(CUDA) == ROW.format(
        tag=SHA, status="200", consumers="`gpu-one`, `gpu-two`", producer="`image-build`"
    )
    assert row(CUDA) == f"| `{SHA}` | 200 | `gpu-one`, `gpu-two` | `image-build` |"


def test_a_row_without_producer_says_no_step_builds_it() -> None:
    for producer in ({}, {"producer": ""}):
        item = image("-rocm", "404", False, "amd-one", **producer)
        assert row(item) == ROW.format(
            tag=f"{SHA}-rocm", status="404", consumers="`amd-one`", producer=NO_PRODUCER
        )


def test_a_counterpart_row_names_the_tag_it_stands_in_for() -> None:
    assert row(STABLE_CPU) == ROW.format(
        tag=f"{SHA}-cpu",
        status="200",
        consumers=COUNTERPART.format(of=f"{SHA}-torch-nightly-cpu"),
        producer="`image-build-cpu`",
    )


def test_more_consumers_than_shown_are_counted() -> None:
    keys = [f"step-{n}" for n in range(MAX_CONSUMERS_SHOWN + 3)]
    shown = ", ".join(f"`{key}`" for key in keys[:MAX_CONSUMERS_SHOWN])
    assert f"| {shown} (+3 more) |" in row(image("", "200", True, *keys))
    exactly = keys[:MAX_CONSUMERS_SHOWN]
    assert f"| {shown} |" in row(image("", "200", True, *exactly))


def test_the_status_is_made_inert() -> None:
    text = row(image("", "500 @octo | #12", None))
    assert "| 500 @\u2060octo \\| #\u206012 |" in text


# --- summaries --------------------------------------------------------------------


def test_no_rows_no_table() -> None:
    assert image_table(check()) == NO_IMAGES.format(build="#4242")
    assert image_table(check()) == "Build #4242 pulls no commit image."


def test_every_image_there() -> None:
    assert image_table(check(CUDA)) == (
        SUMMARY_ALL_THERE.format(build="#4242") + "\n\n" + table(CUDA)
    )


def test_one_image_missing_while_its_stable_tag_was_pushed() -> None:
    summary = " ".join(
        [
            SUMMARY_MISSING.format(count=1, s="", build="#4242", are="is", them="it"),
            SUMMARY_WRONG_TAG.format(
                producer="image-build-cpu", counterpart=f"{SHA}-cpu", tag=f"{SHA}-torch-nightly-cpu"
            ),
        ]
    )
    assert image_table(check(CUDA, NIGHTLY_CPU, STABLE_CPU)) == (
        summary + "\n\n" + table(CUDA, NIGHTLY_CPU, STABLE_CPU)
    )
    assert summary.startswith("1 image that build #4242 pulls is not in the registry: ")
    assert summary.endswith(
        f"`image-build-cpu` pushed `{SHA}-cpu` instead of `{SHA}-torch-nightly-cpu`."
    )


def test_missing_images_without_a_counterpart_found() -> None:
    gone_cuda = image("-torch-nightly", "404", False, "gpu-one", producer="image-build")
    stable_gone = image(
        "-cpu", "404", False, producer="image-build-cpu", counterpart_of=f"{SHA}-torch-nightly-cpu"
    )
    rows = (gone_cuda, NIGHTLY_CPU, stable_gone)
    assert image_table(check(*rows)) == (
        SUMMARY_MISSING.format(count=2, s="s", build="#4242", are="are", them="them")
        + "\n\n"
        + table(*rows)
    )


def test_a_missing_image_with_its_counterpart_but_no_producer_names_no_one() -> None:
    nightly = image("-torch-nightly-rocm", "404", False, "amd-one")
    stable = image("-rocm", "200", True, counterpart_of=f"{SHA}-torch-nightly-rocm")
    assert image_table(check(nightly, stable)) == (
        SUMMARY_MISSING.format(count=1, s="", build="#4242", are="is", them="it")
        + "\n\n"
        + table(nightly, stable)
    )


def test_one_unknown_answer() -> None:
    unknown = image("-cpu", "429 rate limited", None, "cpu-one", producer="image-build-cpu")
    assert image_table(check(CUDA, unknown)) == (
        SUMMARY_UNKNOWN.format(count=1, s="", v="s", why="429 rate limited")
        + "\n\n"
        + table(CUDA, unknown)
    )
    assert image_table(check(CUDA, unknown)).startswith(
        "The registry did not say whether 1 image exists: 429 rate limited."
    )


def test_missing_and_unknown_answers_are_both_said() -> None:
    first = image("-cpu", "401 unauthorized", None, "cpu-one")
    second = image("-arm64", "503", None, "arm-one")
    rows = (NIGHTLY_CPU, first, second)
    assert image_table(check(*rows)) == (
        SUMMARY_MISSING.format(count=1, s="", build="#4242", are="is", them="it")
        + " "
        + SUMMARY_UNKNOWN.format(count=2, s="s", v="", why="401 unauthorized")
        + "\n\n"
        + table(*rows)
    )
