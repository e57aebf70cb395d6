"""The dashboard's "Main" section: broken steps, and the last checked build's images."""

from __future__ import annotations

from bot.dashboard.red_text import (
    ALL_GREEN,
    HEADING_IMAGES,
    HEADING_MAIN,
    IMAGES_INTRO,
    IMAGES_PROBLEM,
    NIGHTLY_LANE,
    NOT_YET,
    RED_HEADER,
    RED_ROW,
    MainSection,
    RedRow,
    red_rows,
    render_main,
)
from bot.images.model import ImageCheck, ImageRow
from bot.images.text import image_table

SHA = "0123456789abcdef0123456789abcdef01234567"
WHEN = "2025-05-12 10:00 UTC"
ROW = ImageRow(f"registry.example/repo:{SHA}", SHA, "200", True, ("gpu-one",), "image-build")


def check(*, nightly: bool = False, problem: str | None = None) -> ImageCheck:
    return ImageCheck(
        build_number=4242,
        build_url="https://buildkite.example/vllm/ci/builds/4242",
        commit=SHA,
        branch="main",
        nightly=nightly,
        checked_at=0.0,
        rows=(ROW,) if problem is None else (),
        problem=problem,
    )


def test_all_green_and_no_image_check() -> None:
    assert render_main(MainSection((), None), when=WHEN) == [HEADING_MAIN, ALL_GREEN]
    assert ALL_GREEN == "No step is broken on main."


def test_red_rows_with_and_without_issue_and_revert() -> None:
    section = MainSection(
        (
            RedRow("ci/kernels", 101, 55, 56),
            RedRow("ci/@octo|x", None, None, None),
            RedRow("ci/zero", 0, 0, 0),
        ),
        None,
    )
    assert render_main(section, when=WHEN) == [
        HEADING_MAIN,
        RED_HEADER
        + "\n"
        + "\n".join(
            [
                RED_ROW.format(step="ci/kernels", since="build #101", issue="#55", revert="#56"),
                RED_ROW.format(
                    step="ci/@\u2060octo\\|x", since=NOT_YET, issue=NOT_YET, revert=NOT_YET
                ),
                RED_ROW.format(step="ci/zero", since="build #0", issue="#0", revert="#0"),
            ]
        ),
    ]
    assert RED_ROW.format(step="ci/kernels", since="build #101", issue="#55", revert="#56") == (
        "| `ci/kernels` | build #101 | #55 | #56 |"
    )


def test_the_images_of_a_stable_build() -> None:
    parts = render_main(MainSection((), check()), when=WHEN)
    assert parts == [
        HEADING_MAIN,
        ALL_GREEN,
        HEADING_IMAGES,
        IMAGES_INTRO.format(build=4242, branch="main", commit7=SHA[:7], lane="", when=WHEN),
        image_table(check()),
    ]
    assert parts[3] == f"Build #4242 (main at `0123456`), checked {WHEN}:"


def test_the_images_of_a_nightly_build() -> None:
    parts = render_main(MainSection((), check(nightly=True)), when=WHEN)
    assert parts[3] == IMAGES_INTRO.format(
        build=4242, branch="main", commit7=SHA[:7], lane=NIGHTLY_LANE, when=WHEN
    )
    assert parts[3] == f"Build #4242 (main at `0123456`, torch nightly), checked {WHEN}:"


def test_a_build_that_could_not_be_checked() -> None:
    parts = render_main(MainSection((), check(problem="no registry configured")), when=WHEN)
    assert parts == [
        HEADING_MAIN,
        ALL_GREEN,
        HEADING_IMAGES,
        IMAGES_PROBLEM.format(build=4242, problem="no registry configured"),
    ]


def test_red_rows_keep_only_broken_steps_sorted_by_key() -> None:
    docs: list[tuple[str, dict[str, object]]] = [
        ("ci/zeta", {"state": "broken", "since": 7, "issue": 70, "revert_pr": 71}),
        ("ci/green", {"state": "green", "since": 3}),
        ("ci/red", {"state": "red", "since": 4}),
        ("ci/alpha", {"state": "broken", "since": "8", "issue": None}),
        ("ci/nothing", {}),
    ]
    assert red_rows(docs) == (
        RedRow("ci/alpha", None, None, None),
        RedRow("ci/zeta", 7, 70, 71),
    )
    assert red_rows([]) == ()
