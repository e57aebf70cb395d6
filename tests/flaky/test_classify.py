from __future__ import annotations

import pytest

from bot.failures.classify import (
    DEFAULT_INFRA_PATTERNS,
    EVIDENCE_AGENT_LOST,
    EVIDENCE_EMPTY_LOG,
    EVIDENCE_EXPIRED,
    INFRA_SIGNAL_REASONS,
    RETRY,
    WHY_NO_HISTORY,
    WHY_NOT_READ,
    FailureClass,
    FlakyRule,
    LogPattern,
    Verdict,
    classify,
)
from bot.failures.signature import NO_SIGNATURE, Signature, failure_signature

from .helpers import PR_COMMIT, bk, failure, log, main_run

INFRA = FailureClass.INFRA
NEW = FailureClass.NEW_FAILURE


# --- infra -----------------------------------------------------------------


def test_agent_lost_with_an_empty_log() -> None:
    verdict = classify(failure(b"", exit_status=-1), history=[])
    assert verdict == Verdict(INFRA, EVIDENCE_AGENT_LOST)
    assert verdict.evidence == "agent lost (exit status -1)"
    assert verdict.retry


def test_agent_lost_mid_checkout() -> None:
    verdict = classify(failure(log("agent_lost"), exit_status=-1), history=[])
    assert verdict.evidence == EVIDENCE_AGENT_LOST


@pytest.mark.parametrize("reason", sorted(INFRA_SIGNAL_REASONS))
def test_infra_signal_reasons(reason: str) -> None:
    verdict = classify(failure(log("pytest_failures"), signal_reason=reason), history=[])
    assert verdict.failure_class is INFRA
    assert verdict.evidence.startswith(f"signal reason {reason}: ")
    # GraphQL spells them in capitals; the same reason.
    assert classify(failure(None, signal_reason=reason.upper()), history=[]) == verdict


@pytest.mark.parametrize("reason", ["cancel", "signature_rejected", "none", ""])
def test_other_signal_reasons_are_not_infra(reason: str) -> None:
    verdict = classify(failure(log("pytest_failures"), signal_reason=reason), history=[])
    assert verdict.failure_class is NEW


@pytest.mark.parametrize(
    ("state", "reason", "expected"),
    [
        ("canceled", None, FailureClass.CANCELED),
        ("canceling", "cancel", FailureClass.CANCELED),
        ("failed", "cancel", NEW),
    ],
)
def test_a_canceled_job_is_never_infra(
    state: str, reason: str | None, expected: FailureClass
) -> None:
    # Exit status -1 and an empty log, or an infra-looking line: still not infra.
    for raw in (b"", log("disk_full"), log("pytest_failures")):
        canceled = failure(raw, state=state, exit_status=-1, signal_reason=reason)
        assert classify(canceled, history=[]).failure_class is expected


def test_expired_job_never_ran() -> None:
    verdict = classify(failure(None, state="expired", exit_status=None), history=[])
    assert verdict == Verdict(INFRA, EVIDENCE_EXPIRED)


@pytest.mark.parametrize("raw", [b"", log("empty_after_cleaning"), bk(["", "   ", "\x1b[0m"])])
def test_empty_log(raw: bytes) -> None:
    assert classify(failure(raw), history=[]) == Verdict(INFRA, EVIDENCE_EMPTY_LOG)


def test_a_log_not_read_is_not_an_empty_log() -> None:
    verdict = classify(failure(None), history=[main_run(5, passed=True)])
    assert verdict == Verdict(NEW, WHY_NOT_READ)


@pytest.mark.parametrize(
    ("name", "pattern", "quoted"),
    [
        ("runner_oom", "killed", "4242 Killed"),
        ("image_pull_k8s", "image-pull", "Failed to pull image"),
        ("hf_hub_504", "hf-hub-http", "HfHubHTTPError: 504 Server Error"),
        ("hf_read_timeout", "hf-hub-network", "Read timed out"),
        ("hf_connection_reset", "download-connection-reset", "Connection broken"),
        ("disk_full", "disk-full", "No space left on device"),
    ],
)
def test_infra_logs(name: str, pattern: str, quoted: str) -> None:
    verdict = classify(failure(log(name)), history=[])
    assert verdict.failure_class is INFRA
    assert verdict.rule == pattern
    assert verdict.evidence.startswith(f"{pattern}: ")
    assert quoted in verdict.evidence


@pytest.mark.parametrize(
    "name",
    [
        "cuda_oom",  # CUDA OOM inside a test: usually the PR's doing
        "nccl_timeout",
        "nccl_connection",
        "hf_retried_then_real_failure",  # the Hub hiccup was retried by the library
        "pytest_failures",
        "server_timeout_a",
    ],
)
def test_real_looking_failures_are_not_infra(name: str) -> None:
    verdict = classify(failure(log(name)), history=[])
    assert verdict.failure_class is NEW
    assert not verdict.retry
    assert verdict.evidence.endswith(WHY_NO_HISTORY)


# One line each pattern must recognise, and lines it must not.
INFRA_LINES = [
    (
        "runner-oom-kill",
        "[ 8123.4] Memory cgroup out of memory: Killed process 4242 (pt_main_thread)",
    ),
    ("runner-oom-kill", 'pod buildkite-x: container "container-0" terminated: OOMKilled'),
    ("runner-oom-kill", "oom-kill:constraint=CONSTRAINT_MEMCG,task=python3,pid=4242"),
    ("killed", "Killed"),
    ("exit-137", "🚨 Error: The command exited with status 137"),
    ("image-pull", "Back-off pulling image: ImagePullBackOff"),
    ("image-pull", "toomanyrequests: You have reached your pull rate limit."),
    (
        "hf-hub-http",
        "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: https://huggingface.co/api/models/x",
    ),
    (
        "hf-hub-http",
        "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/x",
    ),
    (
        "hf-hub-network",
        "MaxRetryError: HTTPSConnectionPool(host='cas-bridge.xethub.hf.co', port=443): "
        "Max retries exceeded",
    ),
    (
        "hf-hub-unreachable",
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file",
    ),
    (
        "hf-hub-unreachable",
        "LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub "
        "and we cannot find the requested files in the local cache. Please check your "
        "connection and try again.",
    ),
    (
        "download-connection-reset",
        "ConnectionResetError: [Errno 104] Connection reset by peer "
        "while downloading model.safetensors",
    ),
    (
        "disk-full",
        "write /var/lib/docker/tmp/GetImageBlob: no space left on device; No space left on device",
    ),
    (
        "docker-daemon",
        "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock.",
    ),
    (
        "gpu-unavailable",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    ),
    ("gpu-unavailable", "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
]
NOT_INFRA_LINES = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "[rank1]: Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=2381, OpType=ALLREDUCE)",
    "NCCL WARN socketProgress: Connection closed by remote peer gpu-node-17<41522>",
    # huggingface_hub will retry this itself.
    "'(ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): "
    "Read timed out.\"))' "
    "thrown while requesting HEAD https://huggingface.co/x. Retrying in 1s [Retry 1/5].",
    # Offline mode and an uncached model: the PR's doing.
    "LocalEntryNotFoundError: Cannot find the requested files in the local cache and outgoing "
    "traffic has been disabled.",
    "ConnectionResetError: [Errno 104] Connection reset by peer (http://localhost:8000/download)",
    "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/x",
    "Killed by the test itself? no: this line only mentions Killed",
    # Test names and paths are not evidence about the machine.
    "FAILED tests/oom_kill/test_image_pull.py::test_errors[ErrImagePull-manifest unknown] "
    "- assert 0",
    "tests/runtime/test_killed.py::test_oom-kill PASSED",
]


@pytest.mark.parametrize(("pattern", "line"), INFRA_LINES)
def test_each_default_infra_pattern(pattern: str, line: str) -> None:
    verdict = classify(failure(bk(["collected 3 items", line])), history=[])
    assert (verdict.failure_class, verdict.rule) == (INFRA, pattern)


def test_every_default_pattern_has_an_example() -> None:
    assert {name for name, _ in INFRA_LINES} == {p.name for p in DEFAULT_INFRA_PATTERNS}


@pytest.mark.parametrize("line", NOT_INFRA_LINES)
def test_lines_that_are_not_infra(line: str) -> None:
    assert classify(failure(bk([line])), history=[]).failure_class is NEW


def test_the_more_specific_pattern_is_the_evidence() -> None:
    # runner_oom ends with exit status 137 too; the Killed line says more.
    assert classify(failure(log("runner_oom")), history=[]).rule == "killed"


def test_a_long_line_shows_the_part_that_matched() -> None:
    line = "x" * 400 + " OSError: No space left on device " + "y" * 400
    verdict = classify(failure(bk([line])), history=[])
    assert "No space left on device" in verdict.evidence
    assert len(verdict.evidence) < 240


def test_custom_infra_patterns_replace_the_defaults() -> None:
    mine = [LogPattern("spot-reclaim", r"instance is being reclaimed")]
    assert classify(failure(log("disk_full")), history=[], infra=mine).failure_class is NEW
    raw = bk(["WARN: instance is being reclaimed by the cloud provider"])
    assert classify(failure(raw), history=[], infra=mine).rule == "spot-reclaim"


# --- known flaky -------------------------------------------------------------

MOE_RULE = FlakyRule(
    name="moe-fp8-numerics",
    log=r"FAILED kernels/test_moe\.py::test_fused_moe\[dtype0-",
    step="kernels-*",
    label="*Kernels*",
)


def test_a_rule_naming_a_test_id() -> None:
    verdict = classify(failure(log("pytest_failures")), history=[], rules=[MOE_RULE])
    assert verdict.failure_class is FailureClass.KNOWN_FLAKY
    assert verdict.rule == "moe-fp8-numerics"
    assert verdict.evidence.startswith("rule moe-fp8-numerics: FAILED kernels/test_moe.py::")
    assert verdict.retry


@pytest.mark.parametrize(
    "rule",
    [
        FlakyRule(MOE_RULE.name, MOE_RULE.log, step="distributed-*"),
        FlakyRule(MOE_RULE.name, MOE_RULE.log, label=":rocm:*"),
        FlakyRule(MOE_RULE.name, r"test_mixtral_moe\[torch\.bfloat16\]"),
    ],
    ids=["other-step", "other-label", "log-not-matching"],
)
def test_a_rule_that_does_not_match(rule: FlakyRule) -> None:
    assert classify(failure(log("pytest_failures")), history=[], rules=[rule]).failure_class is NEW


def test_a_step_glob_against_a_job_without_step_key() -> None:
    rule = FlakyRule("any", r"AssertionError")
    keyless = failure(log("pytest_failures"), step_key=None)
    assert classify(keyless, history=[], rules=[rule]).rule == "any"
    named = FlakyRule("named", r"AssertionError", step="kernels-*")
    assert classify(keyless, history=[], rules=[named]).failure_class is NEW


def test_a_rule_can_make_cuda_oom_or_nccl_timeouts_known_flaky() -> None:
    oom = FlakyRule("oom-on-l4", r"torch\.OutOfMemoryError: CUDA out of memory")
    assert classify(failure(log("cuda_oom")), history=[], rules=[oom]).rule == "oom-on-l4"
    nccl = FlakyRule("nccl-watchdog", r"Watchdog caught collective operation timeout")
    verdict = classify(failure(log("nccl_timeout")), history=[], rules=[nccl])
    assert verdict.failure_class is FailureClass.KNOWN_FLAKY
    assert "OpType=ALLREDUCE" in verdict.evidence


def test_the_first_matching_rule_wins_and_infra_comes_first() -> None:
    first = FlakyRule("first", r"AssertionError")
    second = FlakyRule("second", r"AssertionError")
    assert (
        classify(failure(log("pytest_failures")), history=[], rules=[first, second]).rule == "first"
    )
    disk = classify(failure(log("disk_full")), history=[], rules=[FlakyRule("any", r".")])
    assert disk.failure_class is INFRA


def test_invalid_regexes_are_refused_where_they_are_defined() -> None:
    with pytest.raises(ValueError, match="flaky rule 'bad'"):
        FlakyRule("bad", r"FAILED (")
    with pytest.raises(ValueError, match="infra pattern 'worse'"):
        LogPattern("worse", r"[")


# --- broken trunk and flaky by history ------------------------------------

PYTEST_SIGNATURE = failure_signature(log("pytest_failures_main"))
SERVER_SIGNATURE = failure_signature(log("server_timeout_b"))
OTHER = Signature("tests", ("kernels/test_cache.py::test_copy_blocks",))


def test_broken_trunk_when_main_failed_the_same_way() -> None:
    history = [main_run(12, passed=False, signature=PYTEST_SIGNATURE), main_run(11, passed=True)]
    verdict = classify(failure(log("pytest_failures")), history=history, pr_commit=PR_COMMIT)
    assert verdict.failure_class is FailureClass.BROKEN_TRUNK
    assert verdict.link == history[0].build_url
    assert verdict.evidence.startswith(f"main build #12 ({history[0].commit[:7]}) failed the same")
    assert not verdict.retry


def test_broken_trunk_on_a_normalised_error_line() -> None:
    history = [main_run(30, passed=False, signature=SERVER_SIGNATURE)]
    verdict = classify(failure(log("server_timeout_a")), history=history)
    assert verdict.failure_class is FailureClass.BROKEN_TRUNK


def test_not_broken_trunk_when_main_failed_differently() -> None:
    history = [main_run(12, passed=False, signature=OTHER)]
    verdict = classify(failure(log("pytest_failures")), history=history)
    assert verdict.failure_class is NEW
    assert verdict.evidence.endswith("main build #12 failed differently")
    assert verdict.link == history[0].build_url


def test_only_mains_latest_run_counts_for_broken_trunk() -> None:
    history = [main_run(13, passed=True), main_run(12, passed=False, signature=PYTEST_SIGNATURE)]
    verdict = classify(failure(log("pytest_failures")), history=history)
    assert verdict.failure_class is NEW
    assert verdict.evidence.endswith("main build #13 passed; never seen passing on retry on main")


def test_the_latest_run_is_the_latest_finished_whatever_the_order_given() -> None:
    history = [main_run(12, passed=True), main_run(14, passed=False, signature=PYTEST_SIGNATURE)]
    verdict = classify(failure(log("pytest_failures")), history=history)
    assert verdict.failure_class is FailureClass.BROKEN_TRUNK
    assert verdict.link == history[1].build_url


def test_a_main_run_on_the_prs_own_commit_is_not_evidence() -> None:
    history = [
        main_run(14, passed=False, signature=PYTEST_SIGNATURE, commit=PR_COMMIT),
        main_run(13, passed=True),
    ]
    verdict = classify(failure(log("pytest_failures")), history=history, pr_commit=PR_COMMIT)
    assert verdict.failure_class is NEW
    # Without the PR's commit to exclude, the same history reads as broken trunk.
    assert classify(failure(log("pytest_failures")), history=history).failure_class is (
        FailureClass.BROKEN_TRUNK
    )


def test_flaky_by_history() -> None:
    history = [
        main_run(40, passed=True),
        main_run(39, passed=True, passed_on_retry=True, signature=OTHER),
        main_run(38, passed=True, passed_on_retry=True, signature=SERVER_SIGNATURE),
        main_run(37, passed=True, passed_on_retry=True, signature=SERVER_SIGNATURE),
    ]
    verdict = classify(failure(log("server_timeout_a")), history=history, pr_commit=PR_COMMIT)
    assert verdict.failure_class is FailureClass.FLAKY_BY_HISTORY
    assert verdict.link == history[2].build_url  # the newest such run
    assert verdict.evidence.startswith("passed on retry on main, build #38 (")
    assert verdict.retry


def test_the_latest_main_run_passing_on_retry_is_itself_evidence() -> None:
    history = [main_run(40, passed=True, passed_on_retry=True, signature=PYTEST_SIGNATURE)]
    verdict = classify(failure(log("pytest_failures")), history=history)
    assert verdict.failure_class is FailureClass.FLAKY_BY_HISTORY


def test_not_flaky_by_history_while_main_is_failing() -> None:
    history = [
        main_run(41, passed=False, signature=OTHER),
        main_run(38, passed=True, passed_on_retry=True, signature=SERVER_SIGNATURE),
    ]
    assert classify(failure(log("server_timeout_a")), history=history).failure_class is NEW


def test_not_flaky_by_history_when_seen_only_on_the_prs_commit() -> None:
    history = [
        main_run(40, passed=True),
        main_run(
            38, passed=True, passed_on_retry=True, signature=SERVER_SIGNATURE, commit=PR_COMMIT
        ),
    ]
    verdict = classify(failure(log("server_timeout_a")), history=history, pr_commit=PR_COMMIT)
    assert verdict.failure_class is NEW


def test_a_failure_that_was_not_retried_on_main_is_not_flakiness() -> None:
    history = [
        main_run(40, passed=True),
        main_run(38, passed=False, signature=SERVER_SIGNATURE),
    ]
    assert classify(failure(log("server_timeout_a")), history=history).failure_class is NEW


@pytest.mark.parametrize("main_signature", [None, NO_SIGNATURE])
def test_no_signature_matches_nothing(main_signature: Signature | None) -> None:
    # This log has neither a failed test nor an error line.
    assert failure_signature(log("agent_lost")) == NO_SIGNATURE
    failing = [main_run(50, passed=False, signature=main_signature)]
    verdict = classify(failure(log("agent_lost")), history=failing)
    assert verdict.failure_class is NEW
    flaky = [
        main_run(51, passed=True),
        main_run(50, passed=True, passed_on_retry=True, signature=main_signature),
    ]
    assert classify(failure(log("agent_lost")), history=flaky).failure_class is NEW
    # And a real signature does not match main's unknown one.
    assert classify(failure(log("pytest_failures")), history=failing).failure_class is NEW


def test_retry_classes() -> None:
    assert {FailureClass.INFRA, FailureClass.KNOWN_FLAKY, FailureClass.FLAKY_BY_HISTORY} == RETRY
    for failure_class in FailureClass:
        assert Verdict(failure_class, "x").retry is (failure_class in RETRY)
    assert [c.value for c in FailureClass] == [
        "image-missing",
        "infra",
        "known-flaky",
        "broken-trunk",
        "flaky-by-history",
        "new-failure",
        "canceled",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "(" + "a." * 30_000,
        "host='huggingface.co' " * 3_000,
        "FAILED a.py::t[" * 5_000,
        " " + "a.py" * 15_000,
    ],
    ids=["dotted", "hosts", "open-params", "py-paths"],
)
def test_hostile_long_lines_are_classified(line: str) -> None:
    # Quadratic patterns would take seconds per line here; a 64 KiB tail can
    # hold one such line.
    verdict = classify(failure(line.encode()), history=[main_run(1, passed=True)])
    assert verdict.failure_class is NEW


# --- image missing -----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "manifest for vllm/vllm-openai:nightly not found",
        "Error response from daemon: manifest unknown: Requested image not found",
    ],
)
def test_a_missing_image_is_its_own_class_and_never_retried(line: str) -> None:
    # Even on an agent-lost exit status: the registry said the tag does not exist.
    verdict = classify(failure(bk(["$ docker pull x", line]), exit_status=-1), history=[])
    assert verdict.failure_class is FailureClass.IMAGE_MISSING
    assert verdict.rule == "image-missing"
    assert verdict.evidence.startswith("image missing: ")
    assert not verdict.retry


def test_a_docker_pull_log_of_a_missing_tag() -> None:
    verdict = classify(failure(log("image_pull_docker")), history=[])
    assert verdict.failure_class is FailureClass.IMAGE_MISSING
    assert "manifest unknown" in verdict.evidence


def test_a_test_named_after_a_missing_manifest_is_not_a_missing_image() -> None:
    line = "FAILED tests/registry/test_pull.py::test_manifest_unknown - assert 0"
    assert classify(failure(bk([line])), history=[]).failure_class is NEW


@pytest.mark.parametrize(
    ("state", "expected"), [("canceled", FailureClass.CANCELED), ("failed", NEW)]
)
def test_a_canceled_pull_of_a_missing_image_is_not_judged_missing(
    state: str, expected: FailureClass
) -> None:
    raw = bk(["manifest unknown"])
    verdict = classify(failure(raw, state=state, signal_reason="cancel"), history=[])
    assert verdict.failure_class is expected
