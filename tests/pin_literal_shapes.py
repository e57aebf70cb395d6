"""vLLM's files that hold a pin's value more than once, in our own words, real shapes kept.

- ``cutlass_cmakelists``: ``CMakeLists.txt`` as vLLM wrote it in early 2025, cutlass's
  tag both in ``set(CUTLASS_REVISION "<tag>" CACHE STRING ...)`` (2-space indent, under
  ``if(VLLM_GPU_LANG STREQUAL "CUDA")``) and as a bare ``GIT_TAG <tag>`` (8-space indent)
  in the else() branch of the ``VLLM_CUTLASS_SRC_DIR`` if/else pair, each with a comment
  asking to keep it in sync with the other; ``GIT_SHALLOW TRUE``; a flash-attention pin
  by sha further down.
- ``deepgemm_cmake``: ``cmake/external_projects/deepgemm.cmake``, the if/else pair, a
  bare sha, ``GIT_SUBMODULES`` and the comment naming the install script.
- ``install_deepgemm``: ``tools/install_deepgemm.sh``, which assigns
  ``DEEPGEMM_GIT_REF`` twice: the default (``DEEPGEMM_GIT_REF="<sha>"`` at column 0,
  under a "keep in sync" comment) and, 12 spaces deep in the ``while``/``case`` option
  parser, ``DEEPGEMM_GIT_REF="$2"`` in the ``--ref)`` branch; the help text and the
  checkout read ``$DEEPGEMM_GIT_REF``.
"""

from __future__ import annotations

from sandbox import vllm_shapes as shapes

CUTLASS_FILE = "CMakeLists.txt"
DEEPGEMM_CMAKE_FILE = "cmake/external_projects/deepgemm.cmake"
DEEPGEMM_SCRIPT_FILE = "tools/install_deepgemm.sh"
FLASH_ATTN_SHA = "5b8c1a7e0f3d2946a1b7c8e9d0f1a2b3c4d5e6f7"

_CUTLASS_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.26)
project(vllm_extensions LANGUAGES CXX)
include(FetchContent)

if(VLLM_GPU_LANG STREQUAL "CUDA")
  SET(CUTLASS_ENABLE_HEADERS_ONLY ON CACHE BOOL "Headers are all we use")

  # CUTLASS cannot find its own revision here, so it is given by hand.
  # Please keep this in sync with the FetchContent_Declare line below.
  set(CUTLASS_REVISION "{tag}" CACHE STRING "The CUTLASS revision to build with")

  # A local CUTLASS checkout wins when VLLM_CUTLASS_SRC_DIR is set.
  if (DEFINED ENV{{VLLM_CUTLASS_SRC_DIR}})
    set(VLLM_CUTLASS_SRC_DIR $ENV{{VLLM_CUTLASS_SRC_DIR}})
  endif()

  if(VLLM_CUTLASS_SRC_DIR)
    if(NOT IS_ABSOLUTE VLLM_CUTLASS_SRC_DIR)
      get_filename_component(VLLM_CUTLASS_SRC_DIR "${{VLLM_CUTLASS_SRC_DIR}}" ABSOLUTE)
    endif()
    message(STATUS "Building with the CUTLASS in ${{VLLM_CUTLASS_SRC_DIR}}")
    FetchContent_Declare(cutlass SOURCE_DIR ${{VLLM_CUTLASS_SRC_DIR}})
  else()
    FetchContent_Declare(
        cutlass
        GIT_REPOSITORY https://github.com/nvidia/cutlass.git
        # Please keep this in sync with the CUTLASS_REVISION line above.
        GIT_TAG {tag}
        GIT_PROGRESS TRUE

        # A shallow clone fetches the tag alone rather than the whole history.
        # GIT_SHALLOW needs a tag or a branch: set it to FALSE to pin a commit.
        GIT_SHALLOW TRUE
    )
  endif()
  FetchContent_MakeAvailable(cutlass)

  list(APPEND VLLM_EXT_SRC
    "csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu"
    "csrc/sparse/cutlass/sparse_scaled_mm_entry.cu")
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
          GIT_TAG {flash_attn}
          GIT_PROGRESS TRUE
          # Not shallow: the pin is a commit.
          GIT_SHALLOW FALSE
  )
endif()
"""


def cutlass_cmakelists(tag: str, *, revision: str | None = None) -> str:
    """The CMakeLists.txt pinning cutlass at ``tag`` (``revision``: a stale set())."""
    return _CUTLASS_CMAKELISTS.format(tag=tag, flash_attn=FLASH_ATTN_SHA).replace(
        f'set(CUTLASS_REVISION "{tag}"', f'set(CUTLASS_REVISION "{revision or tag}"'
    )


def deepgemm_cmake(sha: str) -> str:
    return shapes.DEEPGEMM_CMAKE_TEMPLATE.format(sha=sha)


def install_deepgemm(sha: str) -> str:
    return shapes.DEEPGEMM_SCRIPT_TEMPLATE.format(sha=sha)


def default_ref_line(script: str) -> int:
    """The 1-based line of the script's default ``DEEPGEMM_GIT_REF="<sha>"`` (column 0)."""
    lines = script.splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith('DEEPGEMM_GIT_REF="'))
