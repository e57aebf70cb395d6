"""A ``.buildkite`` tree shaped like vLLM's, for the routing model, its CLI and the sweep.

``vllm_ci_files()`` returns ``{path: text}``: ``ci_config.yaml``, the three image builds in
``.buildkite/image_build/`` and fourteen job files in ``.buildkite/test_areas/`` (99 test
steps, two with an AMD mirror: 104 routed steps with the builds). It holds the shapes
ci-routing.md describes:

- Incident A: ``torch-stable-abi-audit``, alone in ``torch_abi.yaml`` as in vLLM, in its
  fixed form (no device, the file's ``depends_on: image-build``: ``gpu_1_queue``, the CUDA
  image); with ``incident_a=True`` it is the broken form (the step's ``device: cpu-small``,
  the file's ``depends_on: image-build-cpu``).
- The migration sweep: 31 steps already ``device: l4`` with 2 or 4 GPUs, and the eight 1-GPU
  L4 steps of ``SWEEP_LABELS`` in five files (``BASIC_ONE_GPU`` already has
  ``num_devices: 1``), on ``gpu_1_queue``; with ``swept=True`` they are ``device: l4`` +
  ``num_devices: 1`` (39 steps on ``l4-k8s``). The 2-node step ``MULTI_NODE_LABEL`` stays on
  ``gpu_4_queue`` either way.
"""

from __future__ import annotations

from collections.abc import Iterator

CI_CONFIG_PATH = ".buildkite/ci_config.yaml"
TEST_AREAS = ".buildkite/test_areas"
AUDIT_KEY = "torch-stable-abi-audit"
AUDIT_FILE = f"{TEST_AREAS}/torch_abi.yaml"
MULTI_NODE_LABEL = "Distributed Tests (2 Nodes)"
BASIC_ONE_GPU = "Basic Correctness One GPU"
STEPS_ON_L4_BEFORE = 31
STEPS_ON_L4_AFTER = 39

# The eight 1-GPU L4 steps of the sweep, by file.
SWEEP_LABELS: dict[str, tuple[str, ...]] = {
    f"{TEST_AREAS}/basic_correctness.yaml": (BASIC_ONE_GPU,),
    f"{TEST_AREAS}/distributed.yaml": ("Distributed Comm Ops One GPU",),
    f"{TEST_AREAS}/engine.yaml": ("Engine One GPU", "Engine Metrics One GPU"),
    f"{TEST_AREAS}/entrypoints.yaml": ("Entrypoints LLM One GPU", "Entrypoints API One GPU"),
    f"{TEST_AREAS}/kernels.yaml": ("Kernels Attention One GPU", "Kernels MoE One GPU"),
}

CI_CONFIG = """\
name: vllm_ci
job_dirs:
  - .buildkite/image_build
  - .buildkite/test_areas
run_all_patterns:
  - docker/Dockerfile
  - CMakeLists.txt
run_all_exclude_patterns:
  - docs/
registries: public.ecr.aws/q9t5s3a7
repositories:
  main: vllm-ci-postmerge-repo
  premerge: vllm-ci-test-repo
"""

IMAGE_BUILD = """\
group: Image builds
steps:
  - label: ":docker: build image"
    key: image-build
    commands:
      - .buildkite/image_build/image_build.sh
  - label: ":docker: build CPU image"
    key: image-build-cpu
    commands:
      - .buildkite/image_build/image_build_cpu.sh
  - label: ":docker: build arm64 image"
    key: arm64-image-build
    commands:
      - .buildkite/image_build/image_build_arm64.sh
"""


def _step(label: str, *lines: str, source: str = "vllm/") -> str:
    body = "".join(f"    {line}\n" for line in lines)
    return (
        f"  - label: {label}\n"
        "    timeout_in_minutes: 30\n"
        f"{body}"
        "    source_file_dependencies:\n"
        f"      - {source}\n"
        "    commands:\n"
        f"      - pytest -v -s tests/{label.lower().replace(' ', '_')}\n"
    )


def _file(group: str, depends_on: str, steps: Iterator[str]) -> str:
    return f"group: {group}\ndepends_on:\n  - {depends_on}\nsteps:\n" + "".join(steps)


def _l4(name: str, count: int) -> Iterator[str]:
    for index in range(count):
        yield _step(f"{name} {index + 1}", "device: l4", f"num_devices: {2 if index % 2 else 4}")


def _plain(name: str, count: int) -> Iterator[str]:
    # On H200 agents (docker): gpu_1_queue holds only the steps the L4 sweep is about,
    # as on vLLM's CI when the sweep ran, so its `select: {queue: gpu_1_queue}` is exact.
    for index in range(count):
        yield _step(f"{name} {index + 1}", "device: h200")


def _one_gpu(label: str, swept: bool) -> str:
    if swept:
        return _step(label, "device: l4", "num_devices: 1")
    return _step(label, "num_devices: 1") if label == BASIC_ONE_GPU else _step(label)


def _swept(path: str, swept: bool) -> Iterator[str]:
    for label in SWEEP_LABELS[path]:
        yield _one_gpu(label, swept)


def _gpu_files(swept: bool) -> dict[str, str]:
    def area(name: str) -> str:
        return f"{TEST_AREAS}/{name}.yaml"

    def file(name: str, group: str, *parts: Iterator[str]) -> tuple[str, str]:
        return area(name), _file(group, "image-build", (step for part in parts for step in part))

    multi_node = _step(MULTI_NODE_LABEL, "num_devices: 2", "num_nodes: 2")
    return dict(
        [
            file(
                "basic_correctness",
                "Basic Correctness",
                _l4("Basic Correctness", 2),
                _swept(area("basic_correctness"), swept),
                _plain("Basic Models", 1),
            ),
            file(
                "distributed",
                "Distributed",
                _l4("Distributed", 6),
                iter([multi_node]),
                _swept(area("distributed"), swept),
            ),
            file(
                "engine",
                "Engine",
                _l4("Engine", 3),
                _swept(area("engine"), swept),
                _plain("Engine V1", 2),
            ),
            file(
                "entrypoints",
                "Entrypoints",
                _l4("Entrypoints", 4),
                _swept(area("entrypoints"), swept),
                _plain("Entrypoints Tool Use", 2),
            ),
            file(
                "kernels",
                "Kernels",
                _l4("Kernels", 5),
                _swept(area("kernels"), swept),
                iter(
                    [
                        _step("Kernels H100", "device: h100", "num_devices: 1"),
                        _step("Kernels B200", "device: b200"),
                    ]
                ),
            ),
            file("lora", "LoRA", _l4("LoRA", 4), _plain("LoRA Single GPU", 2)),
            file(
                "models",
                "Models",
                _l4("Models", 5),
                _plain("Models Basic", 8),
                iter(
                    [
                        _step(
                            "Models AMD", "device: h200", "mirror:", "  amd:", "    device: mi300_1"
                        ),
                        _step(
                            "Models AMD TP",
                            "num_devices: 2",
                            "mirror:",
                            "  amd:",
                            "    device: mi300_2",
                            "    dind: false",
                        ),
                    ]
                ),
            ),
            file("samplers", "Samplers", _l4("Samplers", 2), _plain("Samplers Single GPU", 8)),
            file(
                "quantization", "Quantization", _l4("Quantization", 0), _plain("Quantization", 10)
            ),
            file("spec_decode", "Speculative Decoding", _plain("Spec Decode", 8)),
        ]
    )


def _audit(incident_a: bool) -> str:
    """vLLM's torch_abi.yaml: one step, its ``depends_on`` at the file level."""
    if incident_a:
        step = _step("Torch Stable ABI Audit", f"key: {AUDIT_KEY}", "device: cpu-small")
        return _file("Torch ABI", "image-build-cpu", iter([step]))
    step = _step("Torch Stable ABI Audit", f"key: {AUDIT_KEY}")
    return _file("Torch ABI", "image-build", iter([step]))


def _other_files(incident_a: bool) -> dict[str, str]:
    misc = [
        *_plain("Misc", 4),
        _step("Misc Optional", "device: h200", "optional: true", "soft_fail: true"),
    ]
    cpu = [
        _step("Documentation Build", "device: cpu-small", source="docs/"),
        *(_step(f"CPU Small {index}", "device: cpu-small") for index in (1, 2, 3)),
        _step("CPU Medium", "device: cpu-medium"),
        _step("CPU Full", "device: cpu"),
    ]
    arm = [
        _step("DGX Spark Smoke", "device: dgx-spark", "depends_on:", "  - arm64-image-build"),
        _step("GH200 Smoke", "device: gh200"),
    ]
    return {
        AUDIT_FILE: _audit(incident_a),
        f"{TEST_AREAS}/misc.yaml": _file("Miscellaneous", "image-build", iter(misc)),
        f"{TEST_AREAS}/cpu.yaml": _file("CPU", "image-build-cpu", iter(cpu)),
        f"{TEST_AREAS}/arm.yaml": _file("Arm", "image-build", iter(arm)),
    }


def vllm_ci_files(*, swept: bool = False, incident_a: bool = False) -> dict[str, str]:
    """The tree as ``{path: text}`` (see the module docstring for the two switches)."""
    return {
        CI_CONFIG_PATH: CI_CONFIG,
        ".buildkite/image_build/image_build.yaml": IMAGE_BUILD,
        **_gpu_files(swept),
        **_other_files(incident_a),
    }


def before_incident_a() -> dict[str, str]:
    """The tree as it was before incident A's migration: the audit on the CUDA build, its
    file's ``depends_on: [image-build]`` (the migration changes that line and adds the
    step's ``device``; the real fix, and the partial revert, put both back)."""
    return vllm_ci_files()
