"""Which commit broke a step: route changes, and commits ranked by evidence."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.main_red.culprit import (
    ABSENT,
    NONE,
    PRESENT,
    WHY_EMPTY,
    WHY_NONE,
    WHY_ONE,
    WHY_ONLY,
    WHY_SHARED,
    Confidence,
    Evidence,
    RangeCommit,
    Ranking,
    RouteChange,
    covers,
    excluded,
    pull_number_of,
    rank,
    route_changes,
    source_matches,
    trace_paths,
)
from bot.routing.model import RoutedStep, route
from bot.routing.tables import default_tables

CONFIG = """\
name: vllm_ci
job_dirs:
  - .buildkite/test_areas
registries: registry.example
repositories:
  main: main-repo
  premerge: premerge-repo
"""
MISC = ".buildkite/test_areas/misc.yaml"
CI_CONFIG = ".buildkite/ci_config.yaml"
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
SOURCES = ("vllm/", "csrc/", "!vllm/docs/")


def audit(job: str) -> RoutedStep:
    tree = {CI_CONFIG: CONFIG, ".buildkite/test_areas/builds.yaml": BUILDS, MISC: job}
    routes = route(tree, env={}, tables=default_tables())
    (step,) = [s for s in routes.steps if s.key == "torch-stable-abi-audit"]
    return step


def commit(sha: str, *files: str) -> RangeCommit:
    return RangeCommit(sha * 12, f"commit {sha} (#{len(sha)})", files, len(sha))


def ranked(commits: list[RangeCommit], *, route_changed: bool = False) -> Ranking:
    return rank(
        commits,
        job_files={MISC},
        routing_files={CI_CONFIG},
        source_dependencies=SOURCES,
        route_changed=route_changed,
    )


# --- pull numbers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("subject", "number"),
    [
        ("[CI] Move CPU steps to device: cpu-small (#23456)", 23456),
        ('Revert "Fix x (#100)" (#101)', 101),
        ("Direct push to main", None),
        ("Mentions #12 but no parentheses", None),
    ],
)
def test_pull_number_of(subject: str, number: int | None) -> None:
    assert pull_number_of(subject) == number


# --- route changes ------------------------------------------------------------


def test_incident_a_route_changes() -> None:
    changes = route_changes(audit(GREEN_AUDIT), audit(RED_AUDIT))
    assert {c.field: (c.before, c.after) for c in changes} == {
        "queue": ("gpu_1_queue", "small_cpu_queue_premerge"),
        "image_suffix": ("", "-cpu"),
        "gpus": ("1", "0"),
        "device": (NONE, "cpu-small"),
        "depends_on": ("image-build", "image-build-cpu"),
    }


def test_no_change_and_missing_steps() -> None:
    step = audit(GREEN_AUDIT)
    assert route_changes(step, step) == ()
    assert route_changes(None, None) == ()
    assert route_changes(None, step) == (RouteChange("step", ABSENT, PRESENT),)
    assert route_changes(step, None) == (RouteChange("step", PRESENT, ABSENT),)


def test_empty_depends_on_and_missing_values_read_as_none() -> None:
    step = audit(GREEN_AUDIT)
    changed = replace(step, depends_on=(), plugin=None, num_devices=2)
    assert route_changes(step, changed) == (
        RouteChange("plugin", step.plugin or NONE, NONE),
        RouteChange("num_devices", NONE, "2"),
        RouteChange("depends_on", "image-build", NONE),
    )


# --- source dependencies --------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "matches"),
    [
        ("vllm/model_executor/x.py", True),
        ("csrc/ops.cu", True),
        ("vllm/docs/index.md", False),
        ("docs/index.md", False),
    ],
)
def test_source_matches_like_the_generator(path: str, matches: bool) -> None:
    assert source_matches(path, SOURCES) is matches


def test_only_exclusions_match_nothing() -> None:
    assert not source_matches("vllm/x.py", ["!docs/"])


# As vLLM writes them: directories with and without their "/", a file, an exclusion.
MAMBA = (
    "csrc/mamba/",
    "vllm/model_executor/layers/mamba/",
    "tests/kernels/mamba",
    "tests/test_config.py",
    "!vllm/model_executor/layers/mamba/ops/README.md",
)


@pytest.mark.parametrize(
    ("entry", "path", "covered"),
    [
        ("csrc/mamba/", "csrc/mamba/x.cu", True),
        ("csrc/mamba", "csrc/mamba/x.cu", True),
        ("csrc/mamba/", "csrc/mamba2/x.cu", False),
        ("csrc/mamba", "csrc/mamba2/x.cu", False),
        ("csrc/mamba/", "csrc/mamba", True),  # the directory, as a listing by path traced it
        ("tests/test_x.py", "tests/test_x.py", True),
        ("tests/test_x.py", "tests/test_x.py.orig", False),
        ("", "csrc/mamba/x.cu", False),
        ("/", "csrc/mamba/x.cu", False),
    ],
)
def test_an_entry_covers_itself_and_what_is_under_it(entry: str, path: str, covered: bool) -> None:
    assert covers(entry, path) is covered


@pytest.mark.parametrize(
    ("path", "matches"),
    [
        ("csrc/mamba/causal_conv1d.cu", True),
        ("csrc/mamba", True),
        ("csrc/mamba2/x.cu", False),
        ("vllm/model_executor/layers/mamba/ops/ssd.py", True),
        ("vllm/model_executor/layers/mamba/ops/README.md", False),
        ("tests/kernels/mamba/test_ssd.py", True),
        ("tests/kernels/mamba_ssm.py", False),
        ("tests/test_config.py", True),
        ("csrc/ops.cu", False),
    ],
)
def test_directories_files_and_exclusions_as_vllm_writes_them(path: str, matches: bool) -> None:
    assert source_matches(path, MAMBA) is matches


def test_an_empty_entry_neither_includes_nor_excludes() -> None:
    assert not source_matches("vllm/x.py", ["", "!"])
    assert source_matches("vllm/x.py", ["vllm", "!", ""])
    assert not excluded("vllm/x.py", ["!", "vllm/"])


# --- what the listing by path asks for -------------------------------------------------


def test_a_directory_dependency_is_traced_as_the_directory() -> None:
    touched = ["csrc/mamba/a.cu", "csrc/mamba/b.cu", "tests/kernels/mamba/t.py", "docs/x.md"]
    assert trace_paths(touched, MAMBA) == ("csrc/mamba", "tests/kernels/mamba")


def test_a_file_dependency_is_traced_as_the_file() -> None:
    assert trace_paths(["tests/test_config.py"], MAMBA) == ("tests/test_config.py",)


def test_only_excluded_files_trace_nothing() -> None:
    assert trace_paths(["vllm/model_executor/layers/mamba/ops/README.md"], MAMBA) == ()


def test_an_excluded_file_under_the_directory_traces_the_counted_file_itself() -> None:
    # Listing the directory would also find a commit that touched only the README.
    touched = [
        "vllm/model_executor/layers/mamba/ops/README.md",
        "vllm/model_executor/layers/mamba/ops/ssd.py",
    ]
    assert trace_paths(touched, MAMBA) == ("vllm/model_executor/layers/mamba/ops/ssd.py",)


def test_the_widest_include_clear_of_excluded_files_is_traced() -> None:
    dependencies = ("csrc/", "csrc/mamba", "!csrc/quantization/")
    assert trace_paths(["csrc/mamba/x.cu", "csrc/ops.cu"], dependencies) == ("csrc",)
    touched = ["csrc/mamba/x.cu", "csrc/quantization/fp8.cu"]
    assert trace_paths(touched, dependencies) == ("csrc/mamba",)


# --- ranking ----------------------------------------------------------------------


def test_empty_range_is_low_with_a_reason() -> None:
    assert ranked([]) == Ranking((), None, Confidence.LOW, WHY_EMPTY)


def test_one_commit_is_certain() -> None:
    only = commit("a", "README.md")
    ranking = ranked([only])
    assert ranking.confidence is Confidence.CERTAIN
    assert ranking.culprit is not None
    assert ranking.culprit.commit == only
    assert ranking.culprit.evidence == (Evidence.ONLY_COMMIT,)
    assert ranking.why == WHY_ONLY.format(sha=only.sha[:12])


def test_incident_a_the_migration_changed_the_route() -> None:
    docs = commit("a", "docs/x.md")
    migration = commit("b", MISC, ".buildkite/test_areas/lora.yaml")
    kernel = commit("c", "csrc/ops.cu")
    ranking = ranked([docs, migration, kernel], route_changed=True)
    assert ranking.confidence is Confidence.HIGH
    assert ranking.culprit is not None
    assert ranking.culprit.commit == migration
    assert [c.commit for c in ranking.candidates] == [migration, kernel, docs]
    assert [c.evidence for c in ranking.candidates] == [
        (Evidence.ROUTE,),
        (Evidence.SOURCE,),
        (),
    ]
    assert ranking.why == WHY_ONE.format(sha=migration.sha[:12], evidence=Evidence.ROUTE.value)


def test_a_routing_file_counts_only_when_the_route_changed() -> None:
    config = commit("a", CI_CONFIG)
    other = commit("b", "setup.py")
    changed = ranked([other, config], route_changed=True)
    assert changed.culprit is not None
    assert changed.culprit.commit == config
    unchanged = ranked([other, config])
    assert unchanged.culprit is None
    assert unchanged.confidence is Confidence.LOW
    assert unchanged.why == WHY_NONE.format(count=2)


def test_job_file_without_a_route_change_is_medium() -> None:
    job = commit("a", MISC, "vllm/x.py")
    source = commit("b", "vllm/y.py")
    ranking = ranked([source, job])
    assert ranking.confidence is Confidence.MEDIUM
    assert ranking.culprit is not None
    assert ranking.culprit.commit == job
    assert ranking.culprit.evidence == (Evidence.JOB_FILE, Evidence.SOURCE)


def test_a_code_break_in_a_directory_dependency_is_named() -> None:
    # The files a commit carries are the paths traced for it, directories included.
    docs = commit("a", "docs/x.md")
    kernel = commit("b", "csrc/mamba")
    readme = commit("c", "vllm/model_executor/layers/mamba/ops/README.md")
    ranking = rank(
        [docs, kernel, readme],
        job_files={MISC},
        routing_files={CI_CONFIG},
        source_dependencies=MAMBA,
        route_changed=False,
    )
    assert ranking.confidence is Confidence.MEDIUM
    assert ranking.culprit is not None
    assert ranking.culprit.commit == kernel
    assert ranking.culprit.evidence == (Evidence.SOURCE,)
    assert [c.evidence for c in ranking.candidates[1:]] == [(), ()]
    assert ranking.why == WHY_ONE.format(sha=kernel.sha[:12], evidence=Evidence.SOURCE.value)


def test_several_with_the_strongest_evidence_name_no_culprit() -> None:
    first, second = commit("a", "vllm/x.py"), commit("b", "csrc/y.cu")
    ranking = ranked([first, second, commit("c", "README.md")])
    assert ranking.culprit is None
    assert ranking.confidence is Confidence.LOW
    assert ranking.why == WHY_SHARED.format(count=2, evidence=Evidence.SOURCE.value)
    assert [c.commit for c in ranking.candidates][:2] == [first, second]


_FILES = st.lists(st.sampled_from([MISC, CI_CONFIG, "vllm/x.py", "vllm/docs/y.md", "z"]))


@given(st.lists(_FILES, max_size=6), st.booleans())
def test_a_culprit_holds_evidence_no_other_commit_matches(
    files: list[list[str]], route_changed: bool
) -> None:
    commits = [commit("abcdef"[i] * (i + 1), *f) for i, f in enumerate(files)]
    ranking = ranked(commits, route_changed=route_changed)
    strengths = [c.strength for c in ranking.candidates]
    assert strengths == sorted(strengths, reverse=True)
    assert sorted(c.commit.sha for c in ranking.candidates) == sorted(c.sha for c in commits)
    if ranking.culprit is not None:
        assert ranking.culprit is ranking.candidates[0]
        assert ranking.culprit.strength > 0
        assert all(c.strength < ranking.culprit.strength for c in ranking.candidates[1:])
    else:
        assert ranking.confidence is Confidence.LOW
    assert (ranking.confidence is Confidence.CERTAIN) == (len(commits) == 1)
