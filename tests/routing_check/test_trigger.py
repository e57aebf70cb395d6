"""Which PRs get the "CI routing" check: the config, everything under a job directory the
base's or the head's config names, and the extra ``routing.paths`` globs."""

from __future__ import annotations

import pytest

from bot.config.routing import RoutingConfig
from bot.routing.read import job_dirs_of
from bot.routing_check.trigger import fixed_trigger, under_job_dirs
from tests.real_data import RealTree, needs_pack, tree_ids, trees

CONFIG = ".buildkite/ci_config.yaml"
# The shape of vLLM's config since January 2026: three job directories.
VLLM_CONFIG = """\
name: vllm_ci
job_dirs:
  - ".buildkite/image_build"
  - ".buildkite/test_areas"
  - ".buildkite/hardware_tests"
registries: public.ecr.aws/example
repositories: {main: postmerge, premerge: premerge}
"""
VLLM_DIRS = job_dirs_of(VLLM_CONFIG)


def touches(paths: list[str], routing: RoutingConfig, *job_dirs: str) -> bool:
    """What the flow decides: a fixed trigger, or a path under a job directory."""
    return fixed_trigger(paths, routing) or under_job_dirs(paths, job_dirs)


@pytest.mark.parametrize(
    "path",
    [
        ".buildkite/hardware_tests/cpu.yaml",
        ".buildkite/image_build/image_build.yaml",
        ".buildkite/image_build/image_build_cpu.sh",  # a script the steps run: still the dir
        ".buildkite/test_areas/models/deep/language.yaml",
    ],
)
def test_every_file_under_a_job_directory_is_checked(path: str) -> None:
    assert touches([path], RoutingConfig(), *VLLM_DIRS)


@pytest.mark.parametrize(
    "path",
    [
        "docs/usage.md",
        ".buildkite/scripts/run-tests.sh",  # beside the job directories, not in one
        ".buildkite/test_areas_old/misc.yaml",  # a name that only starts like one
        ".buildkite/hardware_tests",  # a file of that name is not under the directory
    ],
)
def test_other_files_are_not(path: str) -> None:
    assert not touches([path], RoutingConfig(), *VLLM_DIRS)


def test_the_config_itself_is_checked_without_reading_it() -> None:
    assert fixed_trigger([CONFIG], RoutingConfig())
    assert fixed_trigger(["ci/pipeline.yaml"], RoutingConfig(ci_config="ci/pipeline.yaml"))
    assert not fixed_trigger([CONFIG], RoutingConfig(ci_config="ci/pipeline.yaml"))


def test_extra_paths_add_to_the_job_directories() -> None:
    routing = RoutingConfig(paths=(".buildkite/scripts/**",))
    assert fixed_trigger([".buildkite/scripts/run-tests.sh"], routing)
    assert touches([".buildkite/test_areas/misc.yaml"], routing, *VLLM_DIRS)
    assert not fixed_trigger(["docs/usage.md"], routing)


def test_a_directory_named_by_either_config_counts() -> None:
    """A PR branched before main added a job directory, or one that adds it: the base's
    config names it in one case, the head's in the other."""
    older = VLLM_CONFIG.replace('  - ".buildkite/hardware_tests"\n', "")
    path = [".buildkite/hardware_tests/intel.yaml"]
    assert not under_job_dirs(path, job_dirs_of(older))
    assert under_job_dirs(path, (*job_dirs_of(older), *VLLM_DIRS))
    assert under_job_dirs(path, (*VLLM_DIRS, *job_dirs_of(older)))


@pytest.mark.parametrize("written", ["./.buildkite/test_areas", ".buildkite/test_areas/"])
def test_a_job_directory_is_read_however_it_is_written(written: str) -> None:
    assert under_job_dirs([".buildkite/test_areas/misc.yaml"], (written,))


def test_no_config_names_no_directory() -> None:
    assert not under_job_dirs([".buildkite/test_areas/misc.yaml"], job_dirs_of(""))
    assert not under_job_dirs([], VLLM_DIRS)


@needs_pack
@pytest.mark.parametrize("tree", trees(), ids=list(tree_ids()))
def test_every_file_of_a_real_tree_gets_the_check(tree: RealTree) -> None:
    """The pack holds what the generator reads (the config and its job directories):
    a PR touching any one of them is checked."""
    files = tree.files()
    dirs = job_dirs_of(files[CONFIG])
    assert {".buildkite/hardware_tests", ".buildkite/image_build"} <= set(dirs)
    assert [path for path in files if not touches([path], RoutingConfig(), *dirs)] == []
