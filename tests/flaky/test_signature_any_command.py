"""Signatures of failures that are not pytest's: the ABI audit, CUDA/NCCL, tracebacks, a
missing image, and any command's own last lines, in logs shaped like vLLM's."""

from __future__ import annotations

import pytest

from bot.abi.log import clean_log
from bot.failures.signature import (
    DESCRIBE_LINES,
    DESCRIBE_NONE,
    LINE_BREAK,
    MAX_ERROR_CHARS,
    MAX_LINES,
    NO_SIGNATURE,
    Signature,
    command_output,
    failure_signature,
    is_generic,
    last_error_line,
    last_lines,
    normalise_error_line,
    signature_from_lines,
    traceback_exception,
)

from .helpers import bk, log
from .vllm_logs import (
    AUDIT_OUTSIDE,
    AUDIT_SCRIPT,
    AUDIT_STALE,
    AUDIT_STDOUT,
    BUILD_A,
    BUILD_B,
    REPO,
    USER_ERROR,
    VERDICT,
    job_lines,
    job_log,
)

# --- the torch ABI audit (the incident) ---


def test_the_audit_on_the_cpu_image_has_a_signature_naming_both_libraries() -> None:
    raw = job_log([AUDIT_STDOUT, AUDIT_OUTSIDE], script=AUDIT_SCRIPT)
    signature = failure_signature(raw)
    assert signature == Signature("audit", (AUDIT_OUTSIDE,))
    assert "_C_AVX2.abi3.so, _C_AVX512.abi3.so" in signature.describe()


def test_the_same_audit_failure_in_two_builds_matches() -> None:
    # Other job, commit, agent and times; stdout's line before or after stderr's.
    a = failure_signature(job_log([AUDIT_STDOUT, AUDIT_OUTSIDE], BUILD_A, script=AUDIT_SCRIPT))
    b = failure_signature(job_log([AUDIT_OUTSIDE, AUDIT_STDOUT], BUILD_B, script=AUDIT_SCRIPT))
    assert a.matches(b)


def test_both_audit_verdicts_in_either_order_and_after_a_prefix() -> None:
    one = failure_signature(job_log([AUDIT_STALE, AUDIT_STDOUT, AUDIT_OUTSIDE]))
    other = failure_signature(job_log([f"[audit] {AUDIT_OUTSIDE}", AUDIT_STALE]))
    assert one == other == Signature("audit", (AUDIT_STALE, AUDIT_OUTSIDE))
    assert one.describe() == f"{AUDIT_STALE}{LINE_BREAK}{AUDIT_OUTSIDE}"


def test_an_audit_that_could_not_inspect_the_package() -> None:
    line = "error: failed to inspect 'vllm': No module named 'vllm._C' (in /tmp/tmpa8d7f3kq)"
    signature = failure_signature(job_log([AUDIT_STDOUT, line]))
    assert signature == Signature(
        "audit", ("error: failed to inspect 'vllm': No module named 'vllm._C' (in <tmp>)",)
    )


# --- any command's last lines ---

LOCK_CHECK = [
    "Comparing requirements/test.txt with a fresh uv pip compile",
    "requirements/test.txt differs from the compiled lock in 3 packages",
    "Run 'make lock' and commit the result",
]
PIPELINE_CHECK = [
    "Generating the pipeline from .buildkite/test_areas",
    "Step 'Kernels Test %N' asks for queue gpu_4_queue, which has no agents",
]


def test_two_unrelated_failures_with_the_same_exit_lines_do_not_match() -> None:
    a = failure_signature(job_log(LOCK_CHECK))
    b = failure_signature(job_log(PIPELINE_CHECK))
    assert a.kind == b.kind == "lines"
    assert not a.matches(b)


def test_the_last_lines_are_the_commands_own_normalised() -> None:
    assert failure_signature(job_log(LOCK_CHECK)) == Signature(
        "lines",
        (
            "Comparing requirements/test.txt with a fresh uv pip compile",
            "requirements/test.txt differs from the compiled lock in N packages",
            "Run 'make lock' and commit the result",
        ),
    )


def test_at_most_the_last_three_lines_count() -> None:
    output = ["first line of the script", *LOCK_CHECK]
    assert failure_signature(job_log(output)).value == failure_signature(job_log(LOCK_CHECK)).value
    assert len(failure_signature(job_log(output)).value) == MAX_LINES


def test_the_same_command_failure_in_two_builds_matches() -> None:
    def output(build_id: str, seconds: str, tmp: str) -> list[str]:
        return [
            f"Wheel size check for build {build_id}",
            f"dist/vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl is 412 MB after {seconds}",
            f"the limit is 400 MB (report in /tmp/{tmp}/size.txt)",
        ]

    a = failure_signature(job_log(output("86215", "12.5s", "tmpk3j9x2ab"), BUILD_A))
    b = failure_signature(job_log(output("86222", "9.1s", "tmpq0w8e7rt"), BUILD_B))
    assert a.kind == "lines"
    assert a.matches(b)


def test_echoed_commands_hooks_checkout_and_docker_lines_are_not_the_commands() -> None:
    # The script printed one line: nothing of the frame around it joins it.
    signature = failure_signature(job_log(["+ test -s dist/*.whl", "no wheel was built"]))
    assert signature == Signature("lines", ("no wheel was built",))


def test_output_made_only_of_generic_lines_has_no_signature() -> None:
    generic = [
        "make: *** [Makefile:42: test] Error 2",
        "Error: Process completed with exit code 2.",
        "FAILED",
        "==========",
        "ninja: build stopped: subcommand failed.",
    ]
    assert failure_signature(job_log(generic)) == NO_SIGNATURE
    # Nor does a command that printed nothing: the frame is no evidence.
    assert failure_signature(job_log([])) == NO_SIGNATURE


def test_generic_lines_are_skipped_not_taken_as_part_of_the_lines() -> None:
    output = ["Checking the docs build", "docs/source/index.md: broken link to ./serving", "FAILED"]
    assert failure_signature(job_log(output)).value == (
        "Checking the docs build",
        "docs/source/index.md: broken link to ./serving",
    )


def test_a_hook_that_failed_is_where_its_output_counts() -> None:
    lines = [
        "~~~ Running global environment hook",
        "$ /etc/buildkite-agent/hooks/environment",
        "nvidia-smi could not communicate with the NVIDIA driver",
        f"{VERDICT.replace('The command', 'The global environment hook')}",
        "^^^ +++",
    ]
    assert failure_signature(bk(lines)) == Signature(
        "lines", ("nvidia-smi could not communicate with the NVIDIA driver",)
    )


def test_a_log_without_a_verdict_is_read_to_its_end() -> None:
    # A tail read while the job was being cancelled: no "exited with status" yet.
    raw = bk(["~~~ Running commands", "$ bash run.sh", "waiting for the server on port 8000"])
    assert failure_signature(raw) == Signature("lines", ("waiting for the server on port N",))


def test_the_docker_plugins_command_hook_is_the_command_other_hooks_are_not() -> None:
    lines = [
        "~~~ Running global pre-command hook",
        "pre-command says hello",
        "~~~ Running plugin docker-compose command hook",
        "the command's own line",
        "~~~ Running plugin docker pre-exit hook",
        "pre-exit says hello",
        "~~~ Running plugin docker command hook",
        "the docker command's line",
        VERDICT,
    ]
    assert command_output(clean_log(bk(lines))) == [
        "the command's own line",
        "the docker command's line",
    ]


def test_runner_oom_gets_the_lines_that_say_what_was_killed() -> None:
    # Was "no signature"; the classifier calls it infra before any signature is compared.
    signature = failure_signature(log("runner_oom"))
    assert signature.kind == "lines"
    assert signature.value[-1] == (
        "/bin/bash: line N: N Killed pytest -v -s "
        "models/multimodal/generation/test_common.py -m core_model"
    )


# --- CUDA and NCCL ---


def test_a_cuda_error_wins_over_the_errors_that_follow_it() -> None:
    output = [
        "(EngineCore_DP0 pid=4242) RuntimeError: CUDA error: an illegal memory access was "
        "encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    assert failure_signature(job_log(output)) == Signature(
        "error",
        (
            "(EngineCore_DP0 pid=N) RuntimeError: CUDA error: an illegal memory access was "
            "encountered",
        ),
    )


def test_cuda_out_of_memory_in_two_builds_matches_whatever_the_sizes() -> None:
    def oom(tried: str, free: str) -> list[str]:
        return [
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried} MiB. "
            f"GPU 0 has a total capacity of 22.05 GiB of which {free} MiB is free.",
        ]

    a = failure_signature(job_log(oom("20.00", "3.06"), BUILD_A))
    b = failure_signature(job_log(oom("64.00", "11.50"), BUILD_B))
    assert a.kind == "error"
    assert a.matches(b)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1234, "
            "unhandled system error, NCCL version 2.21.5",
            "[rankN]: torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:N, "
            "unhandled system error, NCCL version N.N",
        ),
        ("RuntimeError: NCCL error: invalid usage", "RuntimeError: NCCL error: invalid usage"),
        (
            "[rank1]:[E512 10:41:07.123456789 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600043 "
            "milliseconds before timing out.",
            "[rankN]:[E<time> ProcessGroupNCCL.cpp:N] [Rank N] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=N, OpType=ALLREDUCE) ran for <duration> before "
            "timing out.",
        ),
    ],
)
def test_nccl_errors(line: str, expected: str) -> None:
    output = [line, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"]
    assert failure_signature(job_log(output)) == Signature("error", (expected,))


# --- Python tracebacks ---


def test_the_exception_that_ends_the_last_traceback() -> None:
    output = [
        "Traceback (most recent call last):",
        '  File "/vllm-workspace/examples/offline_inference/basic.py", line 3, in <module>',
        "ValueError: an earlier, handled failure",
        "(EngineCore_DP0 pid=4242) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=4242)   File "/usr/lib/python3.12/multiprocessing/process.py"',
        "(EngineCore_DP0 pid=4242)     self.run()",
        "INFO 08-12 10:11:12 [loader.py:12] another process, writing at the same time",
        "(EngineCore_DP0 pid=4242)",
        "(EngineCore_DP0 pid=4242) ValueError: max_model_len (32768) is larger than the KV cache",
        "ERROR 08-12 10:11:13 [core.py:586] EngineCore failed to start.",
    ]
    assert failure_signature(job_log(output)) == Signature(
        "error", ("ValueError: max_model_len (N) is larger than the KV cache",)
    )


def test_a_generic_exception_leaves_the_choice_to_the_lines_before_it() -> None:
    output = [
        "Building the docs: 3 warnings treated as errors",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/subprocess.py", line 571, in run',
        "subprocess.CalledProcessError: Command '['make', 'html']' returned non-zero exit "
        "status 2.",
    ]
    # The frame stays: it says where the command gave up.
    assert failure_signature(job_log(output)) == Signature(
        "lines",
        (
            "Building the docs: N warnings treated as errors",
            'File "/usr/lib/python3.N/subprocess.py", line N, in run',
        ),
    )


@pytest.mark.parametrize(
    "lines",
    [
        ["no traceback here"],
        ["Traceback (most recent call last):", '  File "x.py", line 1'],  # cut by the tail
        ["Traceback (most recent call last):", "", "During handling of the above exception:"],
        ["[rank0]: Traceback (most recent call last):", "[rank1]: RuntimeError: other rank"],
    ],
)
def test_tracebacks_without_an_exception_line(lines: list[str]) -> None:
    assert traceback_exception(lines) is None


# --- docker: manifest unknown ---


def test_a_missing_image_is_the_signature_and_matches_across_commits() -> None:
    def missing(commit: str) -> list[str]:
        return [
            f"docker: Error response from daemon: manifest for {REPO}:{commit}-cpu not found: "
            "manifest unknown: manifest unknown.",
            "See 'docker run --help'.",
        ]

    a = failure_signature(job_log(missing(BUILD_A.commit), BUILD_A))
    b = failure_signature(job_log(missing(BUILD_B.commit), BUILD_B))
    assert a == Signature(
        "error",
        (
            f"docker: Error response from daemon: manifest for {REPO}:<hex>-cpu not found: "
            "manifest unknown: manifest unknown.",
        ),
    )
    assert a.matches(b)


# --- error lines ---


def test_an_error_line_of_a_hook_after_the_verdict_is_not_the_commands() -> None:
    # The pre-exit hook says "error: could not remove network": the command said nothing.
    lines = job_lines(["Checking the generated pipeline", "Step 'x' has no queue"])
    assert any(line.startswith("error: could not remove network") for line in lines)
    assert failure_signature(bk(lines)).kind == "lines"


def test_make_and_exit_status_lines_are_not_the_error_line() -> None:
    output = [
        "csrc/attention/attention_kernels.cu(42): error: identifier 'half4' is undefined",
        "make[2]: *** [CMakeFiles/_C.dir/build.make:90: attention_kernels.cu.o] Error 1",
        "make: *** [Makefile:156: all] Error 2",
    ]
    assert failure_signature(job_log(output)) == Signature(
        "error", ("csrc/attention/attention_kernels.cu(N): error: identifier 'half4' is undefined",)
    )


def test_echoed_commands_are_not_error_lines() -> None:
    lines = ["+ grep -c error: build.log", "$ echo error: none", USER_ERROR]
    assert last_error_line(lines) is None
    assert signature_from_lines(lines) == NO_SIGNATURE


# --- the parts ---


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "🚨 Error: The command exited with status 1",
        "🚨 Error: The command was interrupted by a signal: terminated",
        "Error: The global pre-exit hook exited with status 2",
        "user command error: exit status 1",
        "Exited with status -1",
        "ERROR: Job failed: exit code 137",
        "Command exited with non-zero status 1",
        "subprocess.CalledProcessError: Command '['bash', 'x']' returned non-zero exit status 1.",
        "make: *** [all] Error 2",
        "make[3]: *** [sub] Error 1 (ignored)",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "Traceback (most recent call last):",
        "===== 1 failed, 3 passed in 2.10s =====",
        "------------------------------------------------------------",
        "Error",
        "FAILED.",
        "fatal:",
        "ninja: build stopped: subcommand failed.",
    ],
)
def test_generic_lines(line: str) -> None:
    assert is_generic(line)


@pytest.mark.parametrize(
    "line",
    [
        "AssertionError: request failed with status code 500",
        "/bin/bash: line 1:  4242 Killed  pytest -v tests/models",
        "RuntimeError: worker 3 exited unexpectedly",
        "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: _C.abi3.so",
        "error: failed to inspect 'vllm': boom",
    ],
)
def test_lines_that_say_something(line: str) -> None:
    assert not is_generic(line)


def test_last_lines_skip_noise_and_generic_lines() -> None:
    lines = ["one", "two 2", "$ echo", "+ echo", "three", "FAILED", "four", ""]
    assert last_lines(lines) == ("two N", "three", "four")
    assert last_lines(["", "exit status 1"]) == ()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[rank1]:[E512 10:41:07.123456789 ProcessGroupNCCL.cpp:632] x", "[rankN]:[E<time> "),
        ("E0512 10:41:09.882000 48190 torch/distributed/api.py:874] failed", "E<time> N torch"),
        ("W0512 10:41:09 worker stopped", "W<time> worker"),
        ("  time      : 2025-05-12_10:41:09", "time : <time>"),
    ],
)
def test_glog_and_torchrun_times_are_masked(line: str, expected: str) -> None:
    assert normalise_error_line(line).startswith(expected)


def test_names_with_digits_glued_to_letters_stay() -> None:
    assert normalise_error_line(AUDIT_OUTSIDE) == AUDIT_OUTSIDE


def test_describe_each_kind() -> None:
    lines = Signature("lines", ("a", "b"))
    assert lines.describe() == DESCRIBE_LINES.format(lines=f"a{LINE_BREAK}b")
    assert Signature("audit", ("Not allowed: x",)).describe() == "Not allowed: x"
    assert Signature("error", ("OSError: x",)).describe() == "OSError: x"
    assert NO_SIGNATURE.describe() == DESCRIBE_NONE


def test_a_lines_signature_stays_small() -> None:
    long_lines = [f"{n} " + "x" * 5000 for n in ("one", "two", "three", "four")]
    signature = failure_signature(job_log(long_lines))
    assert len(signature.value) == MAX_LINES
    assert all(len(line) == MAX_ERROR_CHARS for line in signature.value)
