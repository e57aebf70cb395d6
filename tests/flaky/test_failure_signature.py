from __future__ import annotations

import pytest

from bot.failures.signature import (
    DESCRIBE_NONE,
    MAX_ERROR_CHARS,
    NO_SIGNATURE,
    Signature,
    failure_signature,
    normalise_error_line,
)

from .helpers import bk, log

KERNEL_FAILURES = (
    "kernels/attention/test_attention.py::"
    "test_paged_attention[0-cuda:0-fp8-0-None-bfloat16-128-False-4-16-v2]",
    "kernels/test_moe.py::test_fused_moe[dtype0-8-2-1024-511-64]",
    "kernels/test_moe.py::test_mixtral_moe[torch.float16]",
)


def test_pytest_summary_gives_the_sorted_failed_and_errored_ids() -> None:
    assert failure_signature(log("pytest_failures")) == Signature("tests", KERNEL_FAILURES)


def test_order_repeats_timings_and_addresses_do_not_change_the_signature() -> None:
    assert failure_signature(log("pytest_failures_main")) == failure_signature(
        log("pytest_failures")
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "cuda_oom",
            "models/language/generation/test_common.py::"
            "test_models[False-False-5-32-Qwen/Qwen2.5-7B-Instruct]",
        ),
        (
            "nccl_connection",
            "distributed/test_pipeline_parallel.py::"
            "test_tp_language_generation[2-1-mp-meta-llama/Llama-3.2-1B-Instruct]",
        ),
        ("hf_hub_504", "entrypoints/openai/test_chat.py"),  # a collection error
        (
            "hf_read_timeout",
            "models/test_initialization.py::test_can_initialize[Gemma3ForConditionalGeneration]",
        ),
        (
            "hf_connection_reset",
            "quantization/test_fp8.py::"
            "test_model_load_and_run[True-neuralmagic/Meta-Llama-3-8B-Instruct-FP8]",
        ),
    ],
)
def test_one_failed_test_per_log(name: str, expected: str) -> None:
    assert failure_signature(log(name)) == Signature("tests", (expected,))


def test_ids_with_spaces_classes_and_no_reason() -> None:
    raw = bk(
        [
            "=========================== short test summary info ============================",
            "FAILED tests/a.py::test_x[hello world - 2] - AssertionError: assert [1] == [2]",
            "FAILED tests/b.py::TestCache::test_evict",
            "ERROR tests/c.py::test_setup[cuda] - RuntimeError: boom",
            "RERUN tests/d.py::test_flaky",  # pytest-rerunfailures: not a final failure
            "===== 2 failed, 1 error in 3.20s =====",
        ]
    )
    assert failure_signature(raw).value == (
        "tests/a.py::test_x[hello world - 2]",
        "tests/b.py::TestCache::test_evict",
        "tests/c.py::test_setup[cuda]",
    )


def test_vllm_log_lines_and_progress_lines_are_not_test_ids() -> None:
    raw = bk(
        [
            "tests/models/test_llava.py::test_models[llava-hf] FAILED [ 50%]",
            "ERROR 05-12 10:11:12 [core.py:586] EngineCore failed to start.",
            "Fatal Python error: Segmentation fault",
        ]
    )
    assert failure_signature(raw) == Signature("error", ("Fatal Python error: Segmentation fault",))


def test_the_last_error_line_is_normalised() -> None:
    signature = failure_signature(log("server_timeout_a"))
    assert signature == Signature(
        "error",
        (
            "TimeoutError: server pid N on port N not ready after <duration> "
            "(handle <hex>, log <tmp>)",
        ),
    )


def test_two_runs_with_other_addresses_durations_and_tmp_paths_are_equal() -> None:
    a = failure_signature(log("server_timeout_a"))
    b = failure_signature(log("server_timeout_b"))
    assert a == b
    assert a.matches(b)


def test_buildkite_and_pytest_boilerplate_is_not_the_error_line() -> None:
    raw = bk(
        [
            "RuntimeError: the real cause",
            "Traceback (most recent call last):",
            "===== 1 failed in 2.00s =====",
            "🚨 Error: The command exited with status 1",
            "^^^ +++",
            "user command error: exit status 1",
        ]
    )
    assert failure_signature(raw) == Signature("error", ("RuntimeError: the real cause",))
    boilerplate_only = bk(["🚨 Error: The command exited with status 1", "$ grep -c error: x"])
    assert failure_signature(boilerplate_only) == NO_SIGNATURE


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # The NCCL watchdog's timeout, not torchrun's generic ChildFailedError after it.
        (
            "nccl_timeout",
            "what(): [PG ID N PG GUID N(default_pg) Rank N] Process group watchdog thread "
            "terminated with exception: [Rank N] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=N, OpType=ALLREDUCE, NumelIn=N, NumelOut=N, Timeout(ms)=N) ran f…",
        ),
        # Docker's "manifest unknown", not the plugin's "Failed to pull" after it.
        (
            "image_pull_docker",
            "Error response from daemon: manifest for public.ecr.aws/q9t5s3a7/vllm-ci-test-repo:"
            "<hex> not found: manifest unknown: Requested image not found",
        ),
        (
            "disk_full",
            "OSError: [Errno N] No space left on device: "
            "'/workspace/build/temp.linux-x86_N-cpython-N/CMakeFiles/_C.dir/csrc/attention'",
        ),
    ],
)
def test_error_signatures_of_logs_without_a_pytest_summary(name: str, expected: str) -> None:
    assert failure_signature(log(name)) == Signature("error", (expected,))


# runner_oom has a signature now: its last lines (test_signature_any_command.py).
@pytest.mark.parametrize("name", ["agent_lost", "empty_after_cleaning"])
def test_logs_without_a_test_or_error_line_have_no_signature(name: str) -> None:
    assert failure_signature(log(name)) == NO_SIGNATURE
    assert failure_signature(b"") == NO_SIGNATURE


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("AssertionError: <Foo object at 0x7f3a2c1b9e80>", "AssertionError: <Foo object at <hex>>"),
        ("KeyError: 'req-3f1c9d0a-52e4-4c1b-9a77-0d2b1e6f4c88'", "KeyError: 'req-<id>'"),
        ("RuntimeError: at commit 3f9c2a7e41d05b8c", "RuntimeError: at commit <hex>"),
        ("ERROR 05-12 10:11:12 [core.py:586] died", "ERROR <time> [core.py:N] died"),
        ("error: 2025-05-12T10:41:09.123Z timeout", "error: <time> timeout"),
        ("TimeoutError: ran for 600043 milliseconds", "TimeoutError: ran for <duration>"),
        ("TimeoutError: gave up after 12.5s", "TimeoutError: gave up after <duration>"),
        ("OSError: bad file /tmp/pytest-of-root/pytest-3/x0/a.bin", "OSError: bad file <tmp>"),
        ("OSError: bad file 'tmpk3j9x2ab'", "OSError: bad file '<tmp>'"),
        ("[rank3]: RuntimeError: NCCL failure", "[rankN]: RuntimeError: NCCL failure"),
        (
            "ValueError: expected float16 on cu129, got 2 x  4",
            "ValueError: expected float16 on cu129, got N x N",
        ),
    ],
)
def test_normalise_error_line(line: str, expected: str) -> None:
    assert normalise_error_line(line) == expected


def test_a_long_error_line_is_cut() -> None:
    line = "ValueError: " + "x" * 1000
    normalised = normalise_error_line(line)
    assert len(normalised) == MAX_ERROR_CHARS
    assert normalised.endswith("…")


def test_a_tail_cut_mid_line_or_mid_marker_keeps_the_signature() -> None:
    raw = log("pytest_failures")
    summary_at = raw.index(b"short test summary info")
    for cut in range(summary_at - 120, summary_at):
        assert failure_signature(raw[cut:]).value == KERNEL_FAILURES


def test_none_matches_nothing_and_describe() -> None:
    assert not NO_SIGNATURE.matches(NO_SIGNATURE)
    assert not NO_SIGNATURE.matches(None)
    tests = Signature("tests", ("a.py::x", "a.py::y", "b.py::z", "c.py::w"))
    assert not tests.matches(None)
    assert tests.matches(Signature("tests", ("a.py::x", "a.py::y", "b.py::z", "c.py::w")))
    assert not tests.matches(Signature("tests", ("a.py::x",)))
    assert tests.describe() == "failed tests a.py::x, a.py::y, b.py::z (+1 more)"
    assert Signature("tests", ("a.py::x",)).describe() == "failed test a.py::x"
    assert Signature("error", ("OSError: x",)).describe() == "OSError: x"
    assert NO_SIGNATURE.describe() == DESCRIBE_NONE
