"""vLLM-shaped files and names for the stand-ins: the flash-attention pin, DeepGEMM's
CMake file and install script, the ABI audit script with its allowlist, a Buildkite log
as Buildkite stores it.

The vLLM files are written in our own words with the shapes of vLLM's own (which an
editor must cope with): the same statements, nesting, indentation, quoting and
comments where they matter, never copied text.

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


# cmake/external_projects/vllm_flash_attn.cmake, in our own words with the real file's
# shape: no include(FetchContent) of its own (CMakeLists.txt has it), the environment
# read with "if (DEFINED" (a space), two FetchContent_Declare calls with arguments
# indented 10 spaces: the SOURCE_DIR one in the if() branch (its value on the next line),
# the GIT_TAG one in else(), after a nested if() choosing the submodules; install(CODE)
# strings with escaped quotes and "\${...}" around FetchContent_MakeAvailable.
PIN_TEMPLATE = """\
# flash-attention is built with vLLM's own CMake functions, which it redefines: keep
# this file the last one CMakeLists.txt includes.
#
# VLLM_FLASH_ATTN_SRC_DIR (a cmake argument, or from the environment, which wins)
# builds a local checkout of flash-attention instead of the pinned commit.
if (DEFINED ENV{{VLLM_FLASH_ATTN_SRC_DIR}})
  set(VLLM_FLASH_ATTN_SRC_DIR $ENV{{VLLM_FLASH_ATTN_SRC_DIR}})
endif()

if(VLLM_FLASH_ATTN_SRC_DIR)
  FetchContent_Declare(
          vllm-flash-attn SOURCE_DIR
          ${{VLLM_FLASH_ATTN_SRC_DIR}}
          BINARY_DIR ${{CMAKE_BINARY_DIR}}/vllm-flash-attn
  )
else()
  set(VLLM_FLASH_ATTN_GIT_SUBMODULES "")
  if(VLLM_GPU_LANG STREQUAL "CUDA")
    set(VLLM_FLASH_ATTN_GIT_SUBMODULES "csrc/cutlass")
  endif()
  FetchContent_Declare(
          vllm-flash-attn
          GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git
          GIT_TAG {sha}
          GIT_SUBMODULES ${{VLLM_FLASH_ATTN_GIT_SUBMODULES}}
          GIT_PROGRESS TRUE
          # One build directory per build type: they must not share it
          BINARY_DIR ${{CMAKE_BINARY_DIR}}/vllm-flash-attn
  )
endif()

# Its install rules go under vllm/, then the prefix is put back.
install(CODE "set(OLD_CMAKE_INSTALL_PREFIX \\"\\${{CMAKE_INSTALL_PREFIX}}\\")" ALL_COMPONENTS)
install(CODE "set(CMAKE_INSTALL_PREFIX \\"\\${{CMAKE_INSTALL_PREFIX}}/vllm/\\")" ALL_COMPONENTS)

FetchContent_MakeAvailable(vllm-flash-attn)
message(STATUS "vllm-flash-attn sources: ${{vllm-flash-attn_SOURCE_DIR}}")

install(CODE "set(CMAKE_INSTALL_PREFIX \\"\\${{OLD_CMAKE_INSTALL_PREFIX}}\\")" ALL_COMPONENTS)
"""

DEEPGEMM_CMAKE_FILE = "cmake/external_projects/deepgemm.cmake"
DEEPGEMM_SCRIPT_FILE = "tools/install_deepgemm.sh"

# cmake/external_projects/deepgemm.cmake, in our own words with the real file's shape:
# "if (DEFINED" reading the environment, the SOURCE_DIR and GIT_TAG declarations (4-space
# arguments) in if/else, the comment naming the install script just above the GIT_TAG
# declaration (outside it), a bare sha, two quoted GIT_SUBMODULES, and
# FetchContent_Populate behind FetchContent_GetProperties rather than MakeAvailable.
DEEPGEMM_CMAKE_TEMPLATE = """\
include(FetchContent)

# DEEPGEMM_SRC_DIR (a cmake argument, or from the environment, which wins) builds a
# local DeepGEMM checkout instead of downloading the pinned commit.
if (DEFINED ENV{{DEEPGEMM_SRC_DIR}})
  set(DEEPGEMM_SRC_DIR $ENV{{DEEPGEMM_SRC_DIR}})
endif()

if(DEEPGEMM_SRC_DIR)
  FetchContent_Declare(
    deepgemm
    SOURCE_DIR ${{DEEPGEMM_SRC_DIR}}
    CONFIGURE_COMMAND ""
    BUILD_COMMAND ""
  )
else()
  # This ref should be kept in sync with tools/install_deepgemm.sh
  FetchContent_Declare(
    deepgemm
    GIT_REPOSITORY https://github.com/deepseek-ai/DeepGEMM.git
    GIT_TAG {sha}
    GIT_SUBMODULES "third-party/cutlass" "third-party/fmt"
    GIT_PROGRESS TRUE
    CONFIGURE_COMMAND ""
    BUILD_COMMAND ""
  )
endif()

# Populated only: DeepGEMM's own CMakeLists.txt is not meant to be added to this build.
FetchContent_GetProperties(deepgemm)
if(NOT deepgemm_POPULATED)
  FetchContent_Populate(deepgemm)
endif()
message(STATUS "DeepGEMM sources: ${{deepgemm_SOURCE_DIR}}")
"""

# tools/install_deepgemm.sh, in our own words with the real script's shape: bash with
# "set -e"; DEEPGEMM_GIT_REF assigned twice, the default (double-quoted, column 0, under
# a comment naming the CMake file) and DEEPGEMM_GIT_REF="$2" 12 spaces deep in the
# --ref) branch of a while/case option loop, each option checking its argument first;
# the help text and the checkout read "$DEEPGEMM_GIT_REF"; "${VAR%%.*}" expansions.
DEEPGEMM_SCRIPT_TEMPLATE = """\
#!/bin/bash
# Build DeepGEMM from source and install it, or, with --wheel-dir, only build its
# wheel into a directory (for a later stage of a multi-stage image build).
set -e

# Defaults (the options below override them)
# Keep DEEPGEMM_GIT_REF in sync with cmake/external_projects/deepgemm.cmake
DEEPGEMM_GIT_REPO="https://github.com/deepseek-ai/DeepGEMM.git"
DEEPGEMM_GIT_REF="{sha}"
WHEEL_DIR=""

# Options
while [[ $# -gt 0 ]]; do
    case $1 in
        --ref)
            if [[ -z "$2" || "$2" =~ ^- ]]; then
                echo "Error: --ref needs a git ref." >&2
                exit 1
            fi
            DEEPGEMM_GIT_REF="$2"
            shift 2
            ;;
        --cuda-version)
            if [[ -z "$2" || "$2" =~ ^- ]]; then
                echo "Error: --cuda-version needs a version." >&2
                exit 1
            fi
            CUDA_VERSION="$2"
            shift 2
            ;;
        --wheel-dir)
            if [[ -z "$2" || "$2" =~ ^- ]]; then
                echo "Error: --wheel-dir needs a directory." >&2
                exit 1
            fi
            WHEEL_DIR="$2"
            shift 2
            ;;
        -h|--help)
            echo "Usage: $0 [OPTIONS]"
            echo "  --ref REF           DeepGEMM ref to build (default: $DEEPGEMM_GIT_REF)"
            echo "  --cuda-version VER  CUDA version (read from nvcc when absent)"
            echo "  --wheel-dir PATH    build the wheel into PATH, do not install it"
            exit 0
            ;;
        *)
            echo "Unknown option: $1" >&2
            exit 1
            ;;
    esac
done

if [ -z "$CUDA_VERSION" ]; then
    CUDA_VERSION=$(nvcc --version | grep -o "release [0-9.]*" | cut -d " " -f 2)
fi
CUDA_MAJOR="${{CUDA_VERSION%%.*}}"
CUDA_MINOR="${{CUDA_VERSION#*.}}"
CUDA_MINOR="${{CUDA_MINOR%%.*}}"
if [ "$CUDA_MAJOR" -lt 12 ] || {{ [ "$CUDA_MAJOR" -eq 12 ] && [ "$CUDA_MINOR" -lt 8 ]; }}; then
    echo "DeepGEMM needs CUDA 12.8 or newer; skipped for CUDA $CUDA_VERSION"
    exit 0
fi

WORK_DIR=$(mktemp -d)
trap 'rm -rf "$WORK_DIR"' EXIT

git clone --recursive --shallow-submodules "$DEEPGEMM_GIT_REPO" "$WORK_DIR/deepgemm"
pushd "$WORK_DIR/deepgemm"
git checkout "$DEEPGEMM_GIT_REF"

python3 setup.py bdist_wheel
if [ -n "$WHEEL_DIR" ]; then
    mkdir -p "$WHEEL_DIR"
    cp dist/*.whl "$WHEEL_DIR"/
    popd
    exit 0
fi

python3 -m pip install dist/*.whl
popd
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
