"""The wording of the red-on-main follow-ups: issue, signal table, culprit, revert."""

from __future__ import annotations

import pytest

from bot.main_red.culprit import (
    Candidate,
    Confidence,
    Evidence,
    RangeCommit,
    Ranking,
    RouteChange,
)
from bot.main_red.images_text import (
    IMAGES_INTRO,
    IMAGES_OUTRO,
    IMAGES_TITLE,
    MARKER_IMAGES,
    MARKER_IMAGES_GREEN,
    images_body,
    images_green_marker,
    images_marker,
    images_title,
)
from bot.main_red.lanes import REGULAR, Lane
from bot.main_red.signals import SignalState, StepId, StepRun, StepSignal
from bot.main_red.text import (
    CANDIDATE_ROW,
    CANDIDATES_HEAD,
    CULPRIT_HEAD,
    CULPRIT_LINE,
    FIX_HEAD,
    FIX_NO_REVERT_CODE,
    FIX_REVERT,
    IMAGES_HEAD,
    INTRO,
    ISSUE_TITLE,
    MARKER_CULPRIT,
    MARKER_GREEN,
    MARKER_ISSUE,
    MARKER_REVERT,
    NO_CULPRIT,
    NO_EVIDENCE,
    NOTES_HEAD,
    REVERT_INTRO,
    REVERT_ROUTE_HEAD,
    REVERT_TITLE,
    ROUTE_AS_OF,
    ROUTE_CELL,
    ROUTE_CHANGE_HEAD,
    ROUTE_CHANGE_ROW,
    SIGNAL_HEAD,
    SIGNAL_ROW,
    TRAILER_EDITS,
    TRAILER_REVERT,
    culprit_marker,
    culprit_section,
    edits_digest,
    fix_revert,
    green_marker,
    images_section,
    issue_body,
    issue_marker,
    issue_title,
    lane_line,
    on_main,
    revert_body,
    revert_branch,
    revert_commit_message,
    revert_title,
    short,
    signal_table,
)
from bot.routing.model import RoutedStep, route
from bot.routing.tables import default_tables
from bot.routing_check.report import TABLE_HEAD, routing_row

PIPELINE = "ci"
STEP = "torch-stable-abi-audit"
MISC = ".buildkite/test_areas/misc.yaml"
CONFIG = """\
job_dirs:
  - .buildkite/test_areas
registries: registry.example
repositories:
  main: main-repo
  premerge: premerge-repo
"""
BUILDS = """\
steps:
  - label: ":docker: build image"
    key: image-build
  - label: ":docker: build CPU image"
    key: image-build-cpu
"""
GREEN_AUDIT = """\
steps:
  - label: Torch Stable ABI Audit
    key: torch-stable-abi-audit
    depends_on:
      - image-build
    commands:
      - python audit.py
"""
RED_AUDIT = """\
steps:
  - label: Torch Stable ABI Audit
    key: torch-stable-abi-audit
    device: cpu-small
    depends_on:
      - image-build-cpu
    commands:
      - python audit.py
"""

GREEN_SHA = "a" * 40
RED_SHA = "b" * 40
NEXT_SHA = "c" * 40
CULPRIT_SHA = "d" * 40
OTHER_SHA = "e" * 40


def routed(job: str, key: str = STEP) -> RoutedStep:
    tree = {".buildkite/ci_config.yaml": CONFIG, ".buildkite/test_areas/b.yaml": BUILDS, MISC: job}
    routes = route(tree, env={"BUILDKITE_BRANCH": "main"}, tables=default_tables())
    (step,) = [s for s in routes.steps if s.key == key]
    return step


BEFORE = routed(GREEN_AUDIT)
AFTER = routed(RED_AUDIT)
BUILDER = routed(GREEN_AUDIT, "image-build")  # no plugin, no commit image


def run(number: int, commit: str, *, passed: bool = False, url: bool = True) -> StepRun:
    return StepRun(
        build_number=number,
        build_url=f"https://buildkite.example/vllm/ci/builds/{number}" if url else "",
        commit=commit,
        passed=passed,
        job_id=f"job-{number}",
        job_url=f"https://buildkite.example/vllm/ci/builds/{number}#job-{number}",
        exit_status=None if passed else 1,
        signal_reason=None,
        state="passed" if passed else "failed",
        passed_on_retry=False,
    )


GREEN = run(100, GREEN_SHA, passed=True)
FIRST = run(101, RED_SHA)
SECOND = run(102, NEXT_SHA, url=False)
SIGNAL = StepSignal(StepId(STEP), SignalState.BROKEN, GREEN, (SECOND, FIRST), "broken")
SIGNATURES = {"job-101": "AssertionError: abi @octo", "job-102": "AssertionError: abi @octo"}

CULPRIT = RangeCommit(
    CULPRIT_SHA, "[CI] Move the audit to cpu-small (#23456)", (MISC,), pull_number=23456
)
DIRECT = RangeCommit(OTHER_SHA, "Direct push fixing #12", ("vllm/x.py",))
CERTAIN = Ranking(
    (Candidate(CULPRIT, (Evidence.ROUTE, Evidence.JOB_FILE)), Candidate(DIRECT, ())),
    Candidate(CULPRIT, (Evidence.ROUTE, Evidence.JOB_FILE)),
    Confidence.HIGH,
    "the only commit that changed the step's route",
)
NONE = Ranking((), None, Confidence.LOW, "no commit in the range")
CHANGES = (
    RouteChange("queue", "gpu_1_queue", "small_cpu_queue_premerge"),
    RouteChange("image", "", "-cpu"),
)


# --- small pieces ---------------------------------------------------------------------


def test_short_branch_and_digest() -> None:
    assert short(GREEN_SHA) == "aaaaaaa"
    assert revert_branch(STEP) == "followup-bot/revert/torch-stable-abi-audit"
    digest = edits_digest(MISC, RED_AUDIT)
    assert len(digest) == 16
    assert int(digest, 16) >= 0
    assert digest == edits_digest(MISC, RED_AUDIT)
    assert digest != edits_digest(MISC, GREEN_AUDIT)
    assert digest != edits_digest(".buildkite/other.yaml", RED_AUDIT)


NIGHTLY = Lane("torch-nightly", (("TORCH_NIGHTLY", "1"),))


def test_issue_title() -> None:
    assert issue_title(STEP, FIRST) == ISSUE_TITLE.format(
        step=STEP, on_main="on main", number="#101"
    )
    assert issue_title(STEP, FIRST) == "`torch-stable-abi-audit` red on main since build #101"
    assert issue_title(STEP, FIRST, NIGHTLY) == (
        "`torch-stable-abi-audit` red on main (torch-nightly) since build #101"
    )


def test_on_main_names_a_lane_other_than_the_regular_one() -> None:
    assert on_main() == on_main(REGULAR) == "on main"
    assert on_main(NIGHTLY) == "on main (torch-nightly)"


def test_the_regular_lanes_markers_are_those_of_before_lanes() -> None:
    # A bot upgraded with lanes finds the issues and comments it wrote before them.
    assert issue_marker(PIPELINE, STEP, 101) == (
        "<!-- followup-bot:red-on-main pipeline=ci step=torch-stable-abi-audit since=101 -->"
    )
    assert culprit_marker(PIPELINE, STEP) == (
        "<!-- followup-bot:red-on-main-culprit pipeline=ci step=torch-stable-abi-audit -->"
    )
    assert green_marker(PIPELINE, STEP, 101) == (
        "<!-- followup-bot:green-again pipeline=ci step=torch-stable-abi-audit since=101 -->"
    )


def test_another_lanes_markers_name_it() -> None:
    lane = " lane=torch-nightly"
    assert issue_marker(PIPELINE, STEP, 101, NIGHTLY) == MARKER_ISSUE.format(
        pipeline=PIPELINE, step=STEP, since=101, lane=lane
    )
    assert culprit_marker(PIPELINE, STEP, NIGHTLY) == MARKER_CULPRIT.format(
        pipeline=PIPELINE, step=STEP, lane=lane
    )
    assert green_marker(PIPELINE, STEP, 101, NIGHTLY) == MARKER_GREEN.format(
        pipeline=PIPELINE, step=STEP, since=101, lane=lane
    )
    # Neither marker is a part of the other: one lane's issue is never taken for another's.
    assert issue_marker(PIPELINE, STEP, 101) not in issue_marker(PIPELINE, STEP, 101, NIGHTLY)


def test_lane_line_lists_the_lanes_environment() -> None:
    two = Lane("cuda13-nightly", (("CUDA", "13"), ("TORCH_NIGHTLY", "1")))
    assert lane_line(two) == (
        "Lane `cuda13-nightly`: main's builds with `CUDA=13`, `TORCH_NIGHTLY=1`, judged apart "
        "from main's other builds."
    )


# --- signal table ---------------------------------------------------------------------


def test_signal_table_with_last_green_and_build_links() -> None:
    table = signal_table(SIGNAL, SIGNATURES, BEFORE, AFTER)
    red_route = ROUTE_CELL.format(queue="small_cpu_queue_premerge", plugin="docker", image="-cpu")
    green_route = ROUTE_CELL.format(queue="gpu_1_queue", plugin="docker", image="CUDA")
    signature = "AssertionError: abi @\u2060octo"
    assert table == "\n".join(
        [
            SIGNAL_HEAD,
            SIGNAL_ROW.format(
                build="#102",
                commit7="ccccccc",
                state="failed",
                signature=signature,
                route=red_route,
            ),
            SIGNAL_ROW.format(
                build="[#101](https://buildkite.example/vllm/ci/builds/101)",
                commit7="bbbbbbb",
                state="failed",
                signature=signature,
                route=red_route,
            ),
            SIGNAL_ROW.format(
                build="[#100](https://buildkite.example/vllm/ci/builds/100)",
                commit7="aaaaaaa",
                state="passed",
                signature="—",
                route=green_route,
            ),
        ]
    )


def test_signal_table_without_last_green_signatures_or_routes() -> None:
    signal = StepSignal(StepId(STEP), SignalState.UNKNOWN, None, (SECOND,), "no green")
    assert signal_table(signal, {}, None, None) == (
        SIGNAL_HEAD
        + "\n"
        + SIGNAL_ROW.format(
            build="#102", commit7="ccccccc", state="failed", signature="—", route="—"
        )
    )


def test_a_route_without_plugin_or_commit_image() -> None:
    signal = StepSignal(StepId(STEP), SignalState.RED, None, (SECOND,), "red")
    route_cell = ROUTE_CELL.format(queue=BUILDER.queue, plugin="none", image="no commit image")
    assert BUILDER.plugin is None
    assert BUILDER.image_suffix is None
    assert signal_table(signal, {}, None, BUILDER).endswith(f"| {route_cell} |")


# --- culprit --------------------------------------------------------------------------


def test_culprit_section_with_culprit_route_changes_and_candidates() -> None:
    culprit = "ddddddd \\[CI\\] Move the audit to cpu-small (#23456)"
    assert culprit_section(CERTAIN, CHANGES) == "\n\n".join(
        [
            CULPRIT_HEAD,
            CULPRIT_LINE.format(
                confidence="high",
                why="the only commit that changed the step's route",
                commit=culprit,
            ),
            ROUTE_CHANGE_HEAD
            + "\n"
            + ROUTE_CHANGE_ROW.format(
                field="queue", before="`gpu_1_queue`", after="`small_cpu_queue_premerge`"
            )
            + "\n"
            + ROUTE_CHANGE_ROW.format(field="image", before='`""`', after="`-cpu`"),
            CANDIDATES_HEAD
            + "\n"
            + CANDIDATE_ROW.format(
                commit=culprit,
                evidence="changed the step's route, touched the step's job file",
            )
            + "\n"
            + CANDIDATE_ROW.format(
                commit="eeeeeee Direct push fixing #\u206012", evidence=NO_EVIDENCE
            ),
        ]
    )


def test_culprit_section_without_culprit_changes_or_candidates() -> None:
    assert culprit_section(NONE, ()) == (
        CULPRIT_HEAD + "\n\n" + NO_CULPRIT.format(why="no commit in the range")
    )


@pytest.mark.parametrize(
    ("commit", "shown"),
    [
        # Others' Markdown is escaped; the subject's own "(#N)" becomes the real link.
        (CULPRIT, "ddddddd \\[CI\\] Move the audit to cpu-small (#23456)"),
        # A pull number the subject does not end with is added, not doubled.
        (RangeCommit(CULPRIT_SHA, "Fix the audit", (), 77), "ddddddd Fix the audit (#77)"),
        (
            RangeCommit(CULPRIT_SHA, "Fix the audit (#76) ", (), 77),
            "ddddddd Fix the audit (#\u206076) (#77)",
        ),
        # Without a pull number a trailing reference is others' text: made inert.
        (RangeCommit(CULPRIT_SHA, "Fix (#76)", ()), "ddddddd Fix (#\u206076)"),
    ],
)
def test_the_culprit_commit_line(commit: RangeCommit, shown: str) -> None:
    ranking = Ranking((), Candidate(commit, (Evidence.ONLY_COMMIT,)), Confidence.CERTAIN, "one")
    assert culprit_section(ranking, ()).splitlines()[-1] == CULPRIT_LINE.format(
        confidence="certain", why="one", commit=shown
    )


def test_empty_route_values_are_shown_as_empty_strings() -> None:
    changes = (RouteChange("plugin", "docker", ""),)
    assert culprit_section(NONE, changes).endswith(
        ROUTE_CHANGE_ROW.format(field="plugin", before="`docker`", after='`""`')
    )


# --- issue body -----------------------------------------------------------------------


def body(*, images: str | None, notes: tuple[str, ...], lane: Lane = REGULAR) -> str:
    return issue_body(
        pipeline=PIPELINE,
        step=STEP,
        signal=SIGNAL,
        first=FIRST,
        signatures=SIGNATURES,
        before=BEFORE,
        after=AFTER,
        ranking=CERTAIN,
        changes=CHANGES,
        fix=FIX_NO_REVERT_CODE,
        images=images,
        notes=notes,
        lane=lane,
    )


def expected_head() -> list[str]:
    return [
        INTRO.format(
            step=STEP,
            pipeline=PIPELINE,
            first="[#101](https://buildkite.example/vllm/ci/builds/101)",
            commit7="bbbbbbb",
            signature="AssertionError: abi @\u2060octo",
            green="[#100](https://buildkite.example/vllm/ci/builds/100)",
            green7="aaaaaaa",
        ),
        signal_table(SIGNAL, SIGNATURES, BEFORE, AFTER),
        ROUTE_AS_OF.format(green7="aaaaaaa", red7="bbbbbbb"),
        culprit_section(CERTAIN, CHANGES),
        FIX_HEAD + "\n\n" + FIX_NO_REVERT_CODE,
    ]


MARKER = MARKER_ISSUE.format(pipeline=PIPELINE, step=STEP, since=101, lane="")


def test_issue_body_without_images_or_notes() -> None:
    text = body(images=None, notes=())
    assert text == "\n\n".join([*expected_head(), MARKER])
    assert text.endswith(
        "<!-- followup-bot:red-on-main pipeline=ci step=torch-stable-abi-audit since=101 -->"
    )
    assert body(images="", notes=()) == text


def test_issue_body_with_images_and_notes() -> None:
    images = images_section(102, "Build #102 pulls no commit image.")
    assert images == IMAGES_HEAD.format(build="#102") + "\n\nBuild #102 pulls no commit image."
    notes = ("the culprit ddddddd names no pull request", "second note")
    assert body(images=images, notes=notes) == "\n\n".join(
        [
            *expected_head(),
            images,
            NOTES_HEAD + "\n- the culprit ddddddd names no pull request\n- second note",
            MARKER,
        ]
    )


def test_a_lanes_issue_body_names_the_lane_and_its_marker() -> None:
    head = expected_head()
    assert body(images=None, notes=(), lane=NIGHTLY) == "\n\n".join(
        [head[0], lane_line(NIGHTLY), *head[1:], issue_marker(PIPELINE, STEP, 101, NIGHTLY)]
    )


# --- a lane's images ------------------------------------------------------------------

TABLE = "| tag | registry | pulled by | built by |"


def test_images_title_and_markers() -> None:
    assert images_title(7) == IMAGES_TITLE.format(on_main="on main", number="#7")
    assert images_title(7, NIGHTLY) == "Images missing on main (torch-nightly) since build #7"
    assert images_marker(PIPELINE, 7) == MARKER_IMAGES.format(pipeline=PIPELINE, since=7, lane="")
    assert images_marker(PIPELINE, 7, NIGHTLY) == (
        "<!-- followup-bot:images-missing pipeline=ci since=7 lane=torch-nightly -->"
    )
    assert images_green_marker(PIPELINE, 7, NIGHTLY) == MARKER_IMAGES_GREEN.format(
        pipeline=PIPELINE, since=7, lane=" lane=torch-nightly"
    )


def test_images_body_of_the_regular_lane() -> None:
    text = images_body(
        pipeline=PIPELINE,
        lane=REGULAR,
        build=9,
        commit=RED_SHA,
        steps=["cpu-small-1", "cpu-@octo"],
        table=TABLE,
        since=8,
    )
    intro = IMAGES_INTRO.format(
        build="#9",
        commit7="bbbbbbb",
        pipeline=PIPELINE,
        lane="",
        steps="`cpu-small-1`, `cpu-@\u2060octo`",
    )
    assert text == "\n\n".join([intro, TABLE, IMAGES_OUTRO, images_marker(PIPELINE, 8)])


def test_images_body_of_another_lane_names_it() -> None:
    text = images_body(
        pipeline=PIPELINE,
        lane=NIGHTLY,
        build=9,
        commit=RED_SHA,
        steps=["cpu-small-1"],
        table=TABLE,
        since=9,
    )
    parts = text.split("\n\n")
    assert parts[0] == lane_line(NIGHTLY)
    assert parts[1].startswith(
        "Every step that failed in build #9 (bbbbbbb) of pipeline `ci`, lane `torch-nightly` "
        "could not pull its image: `cpu-small-1`."
    )
    assert parts[-1] == images_marker(PIPELINE, 9, NIGHTLY)


# --- partial revert -------------------------------------------------------------------


def test_revert_title_body_and_fix_line() -> None:
    keys = ("device", "depends_on")
    assert revert_title(STEP, CULPRIT_SHA) == REVERT_TITLE.format(step=STEP, culprit7="ddddddd")
    text = revert_body(
        step=STEP,
        first=FIRST,
        green=GREEN,
        culprit="ddddddd [CI] Move the audit (#23456)",
        keys=keys,
        issue=900,
        after=AFTER,
        restored=BEFORE,
    )
    intro = REVERT_INTRO.format(
        step=STEP,
        first="[#101](https://buildkite.example/vllm/ci/builds/101)",
        culprit="ddddddd [CI] Move the audit (#23456)",
        keys="`device`, `depends_on`",
        green7="aaaaaaa",
        green="[#100](https://buildkite.example/vllm/ci/builds/100)",
        issue=900,
    )
    assert text == "\n\n".join(
        [
            intro,
            REVERT_ROUTE_HEAD + "\n\n" + TABLE_HEAD + "\n" + routing_row(STEP, AFTER, BEFORE),
            MARKER_REVERT.format(step=STEP),
        ]
    )
    assert fix_revert(901, keys, GREEN_SHA) == FIX_REVERT.format(
        pr=901, keys="`device`, `depends_on`", green7="aaaaaaa"
    )


def test_revert_commit_message() -> None:
    message = revert_commit_message(STEP, CULPRIT_SHA, ("device",), "0123456789abcdef")
    assert message == (
        REVERT_TITLE.format(step=STEP, culprit7="ddddddd")
        + "\n\nPuts back `device` of `torch-stable-abi-audit` as they were before ddddddd."
        + f"\n\n{TRAILER_REVERT}: {STEP}\n{TRAILER_EDITS}: 0123456789abcdef\n"
    )
