"""Invariants 1 and 6 (steps that need the CUDA build) and naming each problem's invariant."""

from __future__ import annotations

import pytest

from bot.config.routing import RoutingConfig
from bot.routing import checks, model, read, required, yaml_nodes
from bot.routing.invariants import UNREADABLE, invariant_of
from bot.routing.model import Routes, route
from bot.routing.problems import RoutingProblem
from bot.routing.repo_tables import routing_problems
from bot.routing.required import needs_cuda, required_problems
from bot.routing.tables import default_tables
from sandbox.vllm_ci_tree import AUDIT_KEY, vllm_ci_files

from .trees import one, routes

AUDIT = (
    "  - label: Audit\n    key: audit\n    commands: ['python3 .buildkite/check-torch-abi.py']\n"
)


def problems_of(
    step: str, *, keys: tuple[str, ...] = ("audit",), commands: tuple[str, ...] = ()
) -> list[str]:
    routed = routes("depends_on: [image-build]\nsteps:\n" + step)
    found = required_problems(routed.steps, default_tables(), keys=keys, commands=commands)
    return [problem.message for problem in found]


def test_a_required_step_as_it_should_be_breaks_nothing() -> None:
    assert problems_of(AUDIT) == []


def test_incident_a_a_cpu_device_pulls_the_cpu_image() -> None:
    step = AUDIT + "    device: cpu-small\n    depends_on: [image-build-cpu]\n"
    assert problems_of(step) == [
        required.MSG_OFF_CUDA_IMAGE.format(
            key="audit", image="the '-cpu' image", queue="small_cpu_queue_premerge"
        ),
        required.MSG_NO_GPU.format(key="audit", queue="small_cpu_queue_premerge", gpus=0),
        required.MSG_NOT_AFTER_BUILD.format(key="audit", producer="image-build"),
    ]


def test_required_by_command_pattern_and_flags() -> None:
    step = AUDIT + "    soft_fail: true\n    optional: true\n    no_plugin: true\n"
    assert problems_of(step, keys=(), commands=(r"check-torch-abi\.py",)) == [
        required.MSG_NO_PLUGIN.format(key="audit"),
        required.MSG_NO_GPU.format(key="audit", queue="gpu_1_queue", gpus=0),
        required.MSG_NOT_REQUIRED.format(key="audit", flag="soft_fail"),
        required.MSG_NOT_REQUIRED.format(key="audit", flag="optional"),
    ]


def test_steps_not_required_are_not_looked_at() -> None:
    step = one("  - label: Lint\n    device: cpu-small\n")
    assert not needs_cuda(step, ("audit",), (r"check-torch-abi",))


def test_the_vllm_tree_audit_before_and_after_incident_a() -> None:
    tables = default_tables()

    def audit_problems(**kind: bool) -> list[RoutingProblem]:
        routed = route(vllm_ci_files(**kind), env={}, tables=tables)
        return required_problems(routed.steps, tables, keys=(AUDIT_KEY,), commands=())

    assert audit_problems() == []
    assert [invariant_of(p) for p in audit_problems(incident_a=True)] == ["cuda-required"] * 3


@pytest.mark.parametrize(
    ("message", "invariant"),
    [
        (checks.MSG_UNKNOWN_FIELD.format(field="num_device"), "unknown-field"),
        (checks.MSG_UNKNOWN_DEVICE.format(device="L4", queue="gpu_1_queue"), "unknown-device"),
        (checks.MSG_DEVICE_CASE.format(device="L4", known="l4"), "unknown-device"),
        (checks.MSG_L4_DEVICES.format(device="l4", most=4), "l4-num-devices"),
        (checks.MSG_MULTI_NODE_KUBERNETES.format(queue="l4-k8s"), "multi-node-kubernetes"),
        (checks.MSG_KUBERNETES_NO_POD.format(queue="l4-k8s"), "kubernetes-plugin"),
        (checks.MSG_DUPLICATE_STEP_KEY.format(key="a", file="f", line=1), "duplicate-key"),
        (checks.MSG_UNKNOWN_DEPENDENCY.format(key="nope"), "missing-dependency"),
        (model.MSG_UNKNOWN_MIRROR.format(target="torch_nightly"), "unknown-field"),
        (read.MSG_UNKNOWN_CONFIG_KEY.format(key="x"), "unknown-field"),
        (read.MSG_UNKNOWN_TOP_LEVEL.format(key="x"), "unknown-field"),
        (yaml_nodes.MSG_DUPLICATE_KEY.format(key="label", first=2), "duplicate-key"),
        (checks.MSG_NO_PRODUCER.format(suffix="-torch-nightly-cpu"), "image-producer"),
        (required.MSG_NOT_REQUIRED.format(key="a", flag="optional"), "required-optional"),
        ("something the model could not read", UNREADABLE),
    ],
)
def test_each_problem_names_its_invariant(message: str, invariant: str) -> None:
    assert invariant_of(RoutingProblem("f.yaml", 3, 5, message)) == invariant


def test_a_fatal_problem_is_unreadable_whatever_its_text() -> None:
    text = checks.MSG_UNKNOWN_FIELD.format(field="x")
    assert invariant_of(RoutingProblem("f.yaml", 1, 1, text, fatal=True)) == UNREADABLE


def test_the_image_problems_point_at_the_device_line() -> None:
    step = AUDIT + "    depends_on: [image-build]\n    device: cpu-small\n"
    routed = routes("steps:\n" + step)
    found = required_problems(routed.steps, default_tables(), keys=("audit",), commands=())
    # line 1 "steps:", 2 the label, ..., 6 the device
    assert [(problem.line, invariant_of(problem)) for problem in found] == [
        (6, "cuda-required"),
        (6, "cuda-required"),
    ]


def test_a_repositorys_routing_problems_are_the_models_then_the_required_steps() -> None:
    unreadable = RoutingProblem("x.yaml", 1, 1, "cannot read", fatal=True)
    routed = routes("depends_on: [image-build]\nsteps:\n" + AUDIT + "    device: cpu-small\n")
    with_unreadable = Routes(routed.steps, (unreadable,))
    config = RoutingConfig(required_keys=("audit",))
    found = routing_problems(with_unreadable, config, default_tables())
    assert found[0] == unreadable
    assert [problem.message for problem in found[1:]] == problems_of(
        AUDIT + "    device: cpu-small\n"
    )
    assert with_unreadable.fatal
    assert not routed.fatal
