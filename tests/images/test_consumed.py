"""Which commit images a build pulls, who pulls each, and which step should build it."""

from __future__ import annotations

from dataclasses import replace

from bot.images.consumed import ConsumedImage, consumed_images, producer_of
from bot.routing.model import RoutedStep, Routes, route
from bot.routing.tables import RoutingTables, default_tables, with_overrides
from sandbox.vllm_ci_tree import vllm_ci_files

SHA = "0123456789abcdef0123456789abcdef01234567"
REPO = f"public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:{SHA}"
MAIN = {"BUILDKITE_BRANCH": "main", "BUILDKITE_COMMIT": SHA}
NIGHTLY = {**MAIN, "TORCH_NIGHTLY": "1"}

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
JOBS = """\
steps:
  - label: GPU One
    key: gpu-one
    commands:
      - pytest tests/one
  - label: CPU One
    key: cpu-one
    device: cpu-small
    commands:
      - pytest tests/cpu_one
  - label: GPU Two
    key: gpu-two
    commands:
      - pytest tests/two
"""
SMALL_TREE = {
    ".buildkite/ci_config.yaml": CONFIG,
    ".buildkite/test_areas/builds.yaml": BUILDS,
    ".buildkite/test_areas/jobs.yaml": JOBS,
}
SMALL = f"registry.example/main-repo:{SHA}"


def small(env: dict[str, str], tables: RoutingTables | None = None) -> Routes:
    return route(SMALL_TREE, env=env, tables=tables or default_tables())


def step(key: str, *, image: str | None, suffix: str | None) -> RoutedStep:
    return RoutedStep(
        key=key,
        label=key,
        group=None,
        queue="gpu_1_queue",
        plugin="docker",
        image_suffix=suffix,
        gpus=1,
        file=".buildkite/test_areas/jobs.yaml",
        line=1,
        image=image,
    )


# --- producer_of ----------------------------------------------------------------


def test_a_suffix_the_tables_name_has_that_producer() -> None:
    tables = default_tables()
    assert producer_of("", tables) == "image-build"
    assert producer_of("-cpu", tables) == "image-build-cpu"
    assert producer_of("-torch-nightly", tables) == "image-build"


def test_a_nightly_suffix_the_tables_do_not_name_is_built_by_its_stable_producer() -> None:
    assert producer_of("-torch-nightly-cpu", default_tables()) == "image-build-cpu"
    assert producer_of("-torch-nightly-arm64", default_tables()) == "arm64-image-build"


def test_a_stable_suffix_the_tables_do_not_name_has_no_producer() -> None:
    assert producer_of("-rocm", default_tables()) is None


def test_a_nightly_suffix_whose_stable_part_is_unknown_has_no_producer() -> None:
    assert producer_of("-torch-nightly-rocm", default_tables()) is None


def test_without_a_nightly_suffix_in_the_tables_only_named_suffixes_have_producers() -> None:
    tables = replace(default_tables(), nightly_suffix="")
    assert producer_of("-cpu", tables) == "image-build-cpu"
    assert producer_of("-torch-nightly-cpu", tables) is None


def test_overrides_name_a_producer_for_a_new_suffix() -> None:
    tables = with_overrides(default_tables(), {"producers": {"-rocm": "image-build-rocm"}})
    assert producer_of("-rocm", tables) == "image-build-rocm"
    assert producer_of("-torch-nightly-rocm", tables) == "image-build-rocm"


# --- consumed_images: the realistic tree ------------------------------------------


def test_the_vllm_tree_on_main_pulls_three_stable_images() -> None:
    tables = default_tables()
    routes = route(vllm_ci_files(), env=MAIN, tables=tables)
    images = consumed_images(routes, tables)
    assert [(i.image, i.suffix, i.producer, i.counterpart) for i in images] == [
        (f"{REPO}-arm64", "-arm64", "arm64-image-build", None),
        (REPO, "", "image-build", None),
        (f"{REPO}-cpu", "-cpu", "image-build-cpu", None),
    ]
    by_image = {i.image: i for i in images}
    assert by_image[f"{REPO}-arm64"].consumers == ("dgx-spark-smoke",)
    assert by_image[f"{REPO}-cpu"].consumers[:2] == ("documentation-build", "cpu-small-1")
    assert len(by_image[f"{REPO}-cpu"].consumers) == 6
    assert by_image[REPO].consumers[0] == "gh200-smoke"
    # The image builds themselves pull no commit image.
    pulled = {key for i in images for key in i.consumers}
    assert {"image-build", "image-build-cpu", "arm64-image-build"}.isdisjoint(pulled)
    without = {s.key for s in routes.steps if s.image is None}
    assert {"image-build", "image-build-cpu", "arm64-image-build"} <= without
    assert without.isdisjoint(pulled)
    # Every routed step with an image is counted once.
    assert sum(len(i.consumers) for i in images) == len(routes.steps) - len(without)


def test_the_vllm_tree_in_the_nightly_lane_pulls_nightly_images_with_counterparts() -> None:
    tables = default_tables()
    routes = route(vllm_ci_files(), env=NIGHTLY, tables=tables)
    images = consumed_images(routes, tables)
    assert [(i.suffix, i.producer, i.counterpart) for i in images] == [
        ("-torch-nightly-arm64", "arm64-image-build", f"{REPO}-arm64"),
        ("-torch-nightly", "image-build", REPO),
        ("-torch-nightly-cpu", "image-build-cpu", f"{REPO}-cpu"),
    ]
    assert [i.image for i in images] == [
        f"{REPO}-torch-nightly-arm64",
        f"{REPO}-torch-nightly",
        f"{REPO}-torch-nightly-cpu",
    ]


def test_the_vllm_tree_with_only_some_jobs_run() -> None:
    tables = default_tables()
    routes = route(vllm_ci_files(), env=MAIN, tables=tables)
    images = consumed_images(
        routes, tables, ran={"cpu-small-2", "cpu-full", "image-build", "not-a-step"}
    )
    assert images == (
        ConsumedImage(
            image=f"{REPO}-cpu",
            suffix="-cpu",
            consumers=("cpu-small-2", "cpu-full"),
            producer="image-build-cpu",
        ),
    )


# --- consumed_images: a small tree ------------------------------------------------


def test_steps_pulling_one_image_are_listed_in_pipeline_order() -> None:
    tables = default_tables()
    images = consumed_images(small(MAIN), tables)
    assert images == (
        ConsumedImage(SMALL, "", ("gpu-one", "gpu-two"), "image-build"),
        ConsumedImage(f"{SMALL}-cpu", "-cpu", ("cpu-one",), "image-build-cpu"),
    )


def test_ran_none_counts_every_step_and_an_empty_ran_none() -> None:
    tables = default_tables()
    routes = small(MAIN)
    assert consumed_images(routes, tables, ran=None) == consumed_images(routes, tables)
    assert consumed_images(routes, tables, ran=set()) == ()
    assert consumed_images(routes, tables, ran=["gpu-two"]) == (
        ConsumedImage(SMALL, "", ("gpu-two",), "image-build"),
    )


def test_a_tree_without_a_registry_pulls_no_commit_image() -> None:
    tree = {**SMALL_TREE, ".buildkite/ci_config.yaml": "job_dirs:\n  - .buildkite/test_areas\n"}
    tables = default_tables()
    routes = route(tree, env=MAIN, tables=tables)
    assert routes.steps
    assert all(s.image is None for s in routes.steps)
    assert consumed_images(routes, tables) == ()


def test_a_suffix_no_producer_builds_has_none() -> None:
    tables = replace(default_tables(), producers={"": "image-build"})
    stable = consumed_images(small(MAIN, tables), tables)
    assert [(i.suffix, i.producer, i.counterpart) for i in stable] == [
        ("", "image-build", None),
        ("-cpu", None, None),
    ]
    nightly = consumed_images(small(NIGHTLY, tables), tables)
    assert [(i.suffix, i.producer, i.counterpart) for i in nightly] == [
        ("-torch-nightly", "image-build", SMALL),
        ("-torch-nightly-cpu", None, f"{SMALL}-cpu"),
    ]


def test_without_a_nightly_suffix_no_image_has_a_counterpart() -> None:
    tables = replace(default_tables(), nightly_suffix="")
    images = consumed_images(small(NIGHTLY, tables), tables)
    assert [(i.suffix, i.producer, i.counterpart) for i in images] == [
        ("", "image-build", None),
        ("-cpu", "image-build-cpu", None),
    ]


def test_an_image_not_ending_in_its_suffix_has_no_counterpart() -> None:
    tables = default_tables()
    routes = Routes(
        (
            step("odd", image="registry.example/repo:latest", suffix="-torch-nightly-cpu"),
            step("no-suffix", image="registry.example/repo:abc", suffix=None),
            step("no-image", image=None, suffix=""),
        )
    )
    assert consumed_images(routes, tables) == (
        ConsumedImage(
            "registry.example/repo:latest", "-torch-nightly-cpu", ("odd",), "image-build-cpu"
        ),
    )
