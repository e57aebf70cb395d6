"""The culprit search on job files as vLLM writes them: keyless steps, directory
dependencies, ``!`` exclusions."""

from __future__ import annotations

import pytest

from bot.main_red.culprit import Confidence, Evidence, RangeCommit, Ranking, rank, trace_paths
from bot.main_red.suspects import find_step
from bot.routing.model import RoutedStep, route
from bot.routing.tables import default_tables
from tests.main_red.mamba_tree import (
    HYBRID_KEY,
    LAYERS_DEPENDENCIES,
    LAYERS_KEY,
    LAYERS_LABEL,
    MAMBA_FILE,
    MAMBA_JOBS,
    SSD_DEPENDENCIES,
    SSD_KERNEL,
    SSD_KEY,
    SSD_README,
)

CI_CONFIG = ".buildkite/ci_config.yaml"
TREE = {
    CI_CONFIG: "job_dirs:\n  - .buildkite/test_areas\n",
    ".buildkite/test_areas/builds.yaml": (
        "steps:\n  - label: ':docker: build image'\n    key: image-build\n"
    ),
    MAMBA_FILE: MAMBA_JOBS,
}


def routed(key: str) -> RoutedStep:
    steps = route(TREE, env={"BUILDKITE_BRANCH": "main"}, tables=default_tables()).steps
    step = find_step(steps, key)
    assert step is not None, key
    return step


def commit(sha: str, subject: str, *files: str) -> RangeCommit:
    return RangeCommit(sha * 40, subject, files)


def ranked(step: RoutedStep, commits: list[RangeCommit]) -> Ranking:
    return rank(
        commits,
        job_files={step.file},
        routing_files={CI_CONFIG},
        source_dependencies=step.source_file_dependencies,
        route_changed=False,
    )


@pytest.mark.parametrize(
    ("key", "label"),
    [(LAYERS_KEY, LAYERS_LABEL), (HYBRID_KEY, "Spec Decode MTP hybrid (B200)")],
)
def test_a_keyless_step_is_found_by_the_generators_key(key: str, label: str) -> None:
    step = routed(key)
    assert (step.label, step.key_derived, step.file) == (label, True, MAMBA_FILE)


def test_the_dependencies_are_read_as_written_plus_the_job_file() -> None:
    # The generator adds a job file with a file-level depends_on to its steps' dependencies.
    assert routed(LAYERS_KEY).source_file_dependencies == (*LAYERS_DEPENDENCIES, MAMBA_FILE)
    ssd = routed(SSD_KEY)
    assert (ssd.key_derived, ssd.source_file_dependencies) == (
        False,
        (*SSD_DEPENDENCIES, MAMBA_FILE),
    )


def test_a_kernel_break_under_a_directory_dependency_is_the_culprit() -> None:
    step = routed(LAYERS_KEY)
    touched = ["docs/mamba.md", "csrc/mamba/causal_conv1d.cu"]
    [traced] = trace_paths(touched, step.source_file_dependencies)
    assert traced == "csrc/mamba"  # GitHub is asked for the directory, no trailing "/"
    docs, kernel = commit("a", "Document Mamba (#1)"), commit("b", "Fix conv1d (#2)", traced)
    ranking = ranked(step, [docs, kernel])
    assert ranking.culprit is not None
    assert ranking.culprit.commit == kernel
    assert (ranking.confidence, ranking.culprit.evidence) == (Confidence.MEDIUM, (Evidence.SOURCE,))


def test_an_excluded_file_is_not_evidence() -> None:
    step = routed(SSD_KEY)
    traced = trace_paths([SSD_README, SSD_KERNEL], step.source_file_dependencies)
    assert traced == (SSD_KERNEL,)  # the directory would also find the README's commit
    readme, kernel = commit("a", "Explain the SSD ops"), commit("b", "Chunk SSD", SSD_KERNEL)
    ranking = ranked(step, [readme, kernel])
    assert ranking.culprit is not None
    assert ranking.culprit.commit == kernel
    assert ranking.candidates[1].evidence == ()


def test_an_edit_of_the_job_file_is_evidence_for_its_keyless_step() -> None:
    step = routed(LAYERS_KEY)
    assert trace_paths([MAMBA_FILE], step.source_file_dependencies) == (MAMBA_FILE,)
    kernel = commit("a", "Fix conv1d", "csrc/mamba")
    job = commit("b", "Give the Mamba tests more time", MAMBA_FILE)
    ranking = ranked(step, [kernel, job])
    assert ranking.culprit is not None
    assert ranking.culprit.commit == job  # the job file outranks a source dependency
    assert ranking.culprit.evidence == (Evidence.JOB_FILE, Evidence.SOURCE)
