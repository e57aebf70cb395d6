"""vLLM-shaped files and names for the stand-ins: the flash-attention pin, the ABI audit
script with its allowlist, a Buildkite log as Buildkite stores it.

Shared by the scenario API, the demo, the benchmarks and the tests, so that a world
looks like vLLM the same way everywhere.
"""

from __future__ import annotations

UPSTREAM = "vllm-project/flash-attention"
DOWNSTREAM = "vllm-project/vllm"
PIN_FILE = "cmake/external_projects/vllm_flash_attn.cmake"
UPSTREAM_INSTALLATION = 7001
DOWNSTREAM_INSTALLATION = 7002


CONFIG = f"""\
handle: bot
pins:
  - name: flash-attention
    upstream: {UPSTREAM}
    branch: main
    file: {PIN_FILE}
    dependency: vllm-flash-attn
    owns: ["vllm_flash_attn/*"]
"""

ABI_CHECK_FILE = ".buildkite/check-torch-abi.py"
STATUS_CONTEXT = "buildkite/ci"
LANDING_CONFIG = "landing:\n  labels_on_approval: [ready]\n  merge_method: squash\n"
AUDIT_STEP = "torch-stable-abi-audit"
PIPELINE = "ci"
# The bot's config for red on main: the pipeline to watch, the routing model's inputs.
MAIN_RED_CONFIG = (
    CONFIG
    + f"""\
buildkite:
  organization: vllm
  pipelines: [{PIPELINE}]
routing:
  ci_config: .buildkite/ci_config.yaml
main_red:
  labels: [ci-red]
"""
)
FA3_ENTRY = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
ALLOWLIST = (FA3_ENTRY, "third_party/deep_gemm/_C*.so", "_rocm_C.abi3.so")
ALLOWLIST_CONFIG = f"""\
allowlist:
  file: {ABI_CHECK_FILE}
  audit_step: {AUDIT_STEP}
buildkite:
  organization: vllm
  pipelines: [{PIPELINE}]
"""
ABI_CHECK = '''"""Audit vLLM's compiled extensions for the PyTorch stable ABI."""

import sys

# Temporary allowlist of extensions not yet on the stable ABI.
# Shrink and remove over time.
ALLOWED_UNSTABLE_LIBRARIES: tuple[str, ...] = (
{entries})


def main() -> int:
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def abi_check(*entries: str) -> str:
    """The audit script with this allowlist, laid out as ruff formats it (one per line)."""
    return ABI_CHECK.format(entries="".join(f'    "{entry}",\n' for entry in entries))


def buildkite_log(*lines: str) -> bytes:
    """A raw Buildkite log: a timestamp marker before each line, colours, CRLF."""
    body = [
        "~~~ Running commands",
        f"$ python3 {ABI_CHECK_FILE}",
        *(f"\x1b[31m{line}\x1b[0m" for line in lines),
    ]
    return "".join(
        f"\x1b_bk;t={1_754_000_000_000 + i}\x07{line}\r\n" for i, line in enumerate(body)
    ).encode()


def stale_line(*patterns: str) -> str:
    return "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: " + ", ".join(patterns)


PIN_TEMPLATE = """\
include(FetchContent)

# To build against a local checkout, set VLLM_FLASH_ATTN_SRC_DIR.
if(DEFINED ENV{{VLLM_FLASH_ATTN_SRC_DIR}})
  set(VLLM_FLASH_ATTN_SRC_DIR $ENV{{VLLM_FLASH_ATTN_SRC_DIR}})
endif()

if(VLLM_FLASH_ATTN_SRC_DIR)
  FetchContent_Declare(
          vllm-flash-attn SOURCE_DIR
          ${{VLLM_FLASH_ATTN_SRC_DIR}}
          BINARY_DIR ${{CMAKE_BINARY_DIR}}/vllm-flash-attn
  )
else()
  FetchContent_Declare(
          vllm-flash-attn
          GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git
          GIT_TAG {sha}
          GIT_PROGRESS TRUE
          # Don't share the vllm-flash-attn build between build types
          BINARY_DIR ${{CMAKE_BINARY_DIR}}/vllm-flash-attn
  )
endif()

FetchContent_MakeAvailable(vllm-flash-attn)
"""


SMALL_PIN_TEMPLATE = """\
include(FetchContent)
FetchContent_Declare(
  {name}
  GIT_REPOSITORY https://github.com/{upstream}.git
  GIT_TAG {sha}
)
"""


def many_pins(pins: list[tuple[str, str, str]]) -> dict[str, str]:
    """A downstream's files for pins ``(name, upstream, pinned sha)``: one small CMake file
    each (``cmake/<name>.cmake``) and the config that follows them all, on ``main``."""
    files = {
        f"cmake/{name}.cmake": SMALL_PIN_TEMPLATE.format(name=name, upstream=upstream, sha=sha)
        for name, upstream, sha in pins
    }
    lines = ["handle: bot", "pins:"]
    for name, upstream, _ in pins:
        lines += [f"  - name: {name}", f"    upstream: {upstream}", "    branch: main"]
        lines += [f"    file: cmake/{name}.cmake", f"    dependency: {name}"]
    files[".github/followup-bot.yml"] = "\n".join(lines) + "\n"
    return files
