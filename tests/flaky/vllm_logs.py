"""Job logs shaped like vLLM's Buildkite logs, around any command's output.

A job on vLLM's CI runs the agent's hooks, checks out the commit, then the docker
plugin's command hook pulls the CI image and runs the step's script in it; after the
command fails Buildkite prints its verdict, and the pre-exit hook runs. ``job_log``
puts a command's output inside that frame, with what differs from one build to the
next (the job id, the commit, the agent, the times) as parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from .helpers import bk

GREY = "\x1b[90m"
RED = "\x1b[31m"
RESET = "\x1b[0m"
REPO = "public.ecr.aws/q9t5s3a7/vllm-ci-test-repo"
VERDICT = f"{RED}🚨 Error: The command exited with status 1{RESET}"
USER_ERROR = "user command error: exit status 1"


@dataclass(frozen=True)
class Build:
    """What changes from one build of the same step to the next."""

    job_id: str
    commit: str
    agent: str
    start_ms: int


BUILD_A = Build(
    job_id="0198a3c1-5e2f-4b7d-9c10-6f2e8d4a7b31",
    commit="3f9c2a7e41d05b8c6a1f0e2d9b7c4a5e6f708192",
    agent="bk-cpu-queue-ci-i-0a1b2c3d4e5f60718",
    start_ms=1_723_456_789_012,
)
BUILD_B = Build(
    job_id="0198a7f4-0c3d-4e8a-8b52-1d9e7c6b5a40",
    commit="9d4e1b0c7a6f5e3d2c1b0a9f8e7d6c5b4a392817",
    agent="bk-cpu-queue-ci-i-0f9e8d7c6b5a43210",
    start_ms=1_723_470_001_337,
)


def environment_hooks(build: Build) -> list[str]:
    return [
        "~~~ Running global environment hook",
        f"{GREY}$ /etc/buildkite-agent/hooks/environment{RESET}",
        '# Executing "/etc/buildkite-agent/hooks/environment"',
        f"Agent {build.agent} on queue cpu_queue_postmerge",  # the hook's own output
        "~~~ Running plugin docker environment hook",
        f"{GREY}$ /var/lib/buildkite-agent/plugins/docker-buildkite-plugin/hooks/environment"
        f"{RESET}",
    ]


def checkout(build: Build) -> list[str]:
    return [
        "~~~ Preparing working directory",
        f"{GREY}$ cd /var/lib/buildkite-agent/builds/{build.agent}/vllm/ci{RESET}",
        f"{GREY}$ git fetch -v --prune -- origin {build.commit}{RESET}",
        f"HEAD is now at {build.commit[:7]} Move the torch ABI audit to the CPU queue (#41999)",
    ]


def docker_run(build: Build, script: str) -> list[str]:
    """The docker plugin's command hook up to the script's first line of output."""
    image = f"{REPO}:{build.commit}-cpu"
    return [
        "~~~ Running plugin docker command hook",
        f"{GREY}$ /var/lib/buildkite-agent/plugins/docker-buildkite-plugin/hooks/command{RESET}",
        f":docker: Pulling {image}",
        f"{GREY}$ docker run -t -i --rm --init --volume /dev/shm:/dev/shm "
        f"--label com.buildkite.job-id={build.job_id} {image} /bin/sh -e -c '{script}'{RESET}",
        f"Unable to find image '{image}' locally",
        f"{build.commit}-cpu: Pulling from q9t5s3a7/vllm-ci-test-repo",
        f"{build.commit[:12]}: Pulling fs layer",
        f"{build.commit[-12:]}: Pull complete",
        f"Digest: sha256:{build.commit}{build.commit[:24]}",
        f"Status: Downloaded newer image for {image}",
        f"+ {script}",
    ]


def epilogue(status: int = 1) -> list[str]:
    """Buildkite's verdict, then the pre-exit hook (whose output says nothing about the
    command, even when it says "error")."""
    return [
        f"{RED}🚨 Error: The command exited with status {status}{RESET}",
        "^^^ +++",
        f"user command error: exit status {status}",
        "~~~ Running global pre-exit hook",
        f"{GREY}$ /etc/buildkite-agent/hooks/pre-exit{RESET}",
        "error: could not remove network vllm-ci: it has active endpoints",
        "Exited with status 1",
    ]


def job_lines(
    output: list[str], build: Build = BUILD_A, *, script: str = "bash run.sh"
) -> list[str]:
    return [
        *environment_hooks(build),
        *checkout(build),
        *docker_run(build, script),
        *output,
        *epilogue(),
    ]


def job_log(output: list[str], build: Build = BUILD_A, *, script: str = "bash run.sh") -> bytes:
    """``output`` as the script's lines in a whole raw job log (markers, CRLF, colours)."""
    return bk(job_lines(output, build, script=script), start_ms=build.start_ms)


# The torch ABI audit on the CPU image (the incident): its stdout line, its verdict on
# stderr, nothing else of its own.
AUDIT_SCRIPT = "python3 .buildkite/check-torch-abi.py"
AUDIT_STDOUT = ">>> Auditing vLLM extension modules for PyTorch stable ABI compliance"
AUDIT_OUTSIDE = (
    "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: "
    "_C_AVX2.abi3.so, _C_AVX512.abi3.so"
)
AUDIT_STALE = "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: vllm_flash_attn/*.so"
