"""A checkout shaped like vLLM's: its six FetchContent pins in the forms vLLM writes them.

``write_vllm_tree`` writes these files (paths relative to the root) and returns
``{path: text}``; each pin's value is a keyword argument:

- ``CMakeLists.txt``: cutlass, ``GIT_TAG ${CUTLASS_REVISION}`` with
  ``set(CUTLASS_REVISION "v4.4.2")`` above, ``GIT_SHALLOW TRUE``, and a
  ``SOURCE_DIR`` declaration in the ``if()`` branch, a "keep ... in sync with" comment
  naming a variable rather than a file; it includes the others.
- ``cmake/external_projects/vllm_flash_attn.cmake``: ``sandbox.vllm_shapes.PIN_TEMPLATE``
  (a bare sha indented 10 spaces, the if/else ``SOURCE_DIR`` double declaration).
- ``cmake/external_projects/deepgemm.cmake``: ``sandbox.vllm_shapes.DEEPGEMM_CMAKE_TEMPLATE``
  (the if/else pair, a bare sha, ``GIT_SUBMODULES``, and just above the GIT_TAG
  declaration a comment: the ref is kept in sync with the script below).
- ``tools/install_deepgemm.sh``: ``sandbox.vllm_shapes.DEEPGEMM_SCRIPT_TEMPLATE``, which
  assigns ``DEEPGEMM_GIT_REF="<sha>"`` as its default and ``DEEPGEMM_GIT_REF="$2"`` in
  its ``--ref)`` option (``deepgemm_script``: the default's sha, the same unless a test
  wants it out of sync).
- ``cmake/external_projects/flashmla.cmake``: the if/else pair, ``GIT_REPOSITORY``
  without ``.git``.
- ``cmake/external_projects/qutlass.cmake``: one declaration, a sha.
- ``cmake/external_projects/triton_kernels.cmake``: ``GIT_TAG ${DEFAULT_TRITON_KERNELS_TAG}``
  with ``set(DEFAULT_TRITON_KERNELS_TAG "v3.6.0")``.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.vllm_shapes import (
    DEEPGEMM_CMAKE_TEMPLATE,
    DEEPGEMM_SCRIPT_FILE,
    DEEPGEMM_SCRIPT_TEMPLATE,
    PIN_TEMPLATE,
)

FLASH_ATTN_SHA = "f3e1a4f74c99145c0717709860bf765de1703779"
DEEPGEMM_SHA = "5a8c0f2e9b7d1c3a4e6f8091b2d3c4e5f6a7b8c9"
FLASHMLA_SHA = "0c4b3d2a1f9e8d7c6b5a49382716a5b4c3d2e1f0"
QUTLASS_SHA = "9d8c7b6a5f4e3d2c1b0a99887766554433221100"
CUTLASS_TAG = "v4.4.2"
TRITON_KERNELS_TAG = "v3.6.0"

EXTERNAL = "cmake/external_projects"
DEEPGEMM_SCRIPT = DEEPGEMM_SCRIPT_FILE

_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.26)
project(vllm_extensions LANGUAGES CXX CUDA)

include(FetchContent)

# The CUTLASS release the kernels are written against.
set(CUTLASS_REVISION "{cutlass}")

if (DEFINED ENV{{VLLM_CUTLASS_SRC_DIR}})
  set(VLLM_CUTLASS_SRC_DIR $ENV{{VLLM_CUTLASS_SRC_DIR}})
endif()

if(VLLM_CUTLASS_SRC_DIR)
  FetchContent_Declare(cutlass SOURCE_DIR ${{VLLM_CUTLASS_SRC_DIR}})
else()
  FetchContent_Declare(
        cutlass
        GIT_REPOSITORY https://github.com/nvidia/cutlass.git
        # Keep the tag in sync with CUTLASS_REVISION above (a variable, not a file).
        GIT_TAG ${{CUTLASS_REVISION}}
        GIT_PROGRESS TRUE
        # A tag can be cloned without history; a commit sha could not.
        GIT_SHALLOW TRUE
  )
endif()
FetchContent_MakeAvailable(cutlass)

include(cmake/external_projects/vllm_flash_attn.cmake)
include(cmake/external_projects/deepgemm.cmake)
include(cmake/external_projects/flashmla.cmake)
include(cmake/external_projects/qutlass.cmake)
include(cmake/external_projects/triton_kernels.cmake)
"""

_FLASHMLA = """\
include(FetchContent)

if(FLASH_MLA_SRC_DIR)
  FetchContent_Declare(flashmla SOURCE_DIR ${{FLASH_MLA_SRC_DIR}})
else()
  FetchContent_Declare(
    flashmla
    GIT_REPOSITORY https://github.com/vllm-project/FlashMLA
    GIT_TAG {sha}
    GIT_PROGRESS TRUE
    CONFIGURE_COMMAND ""
    BUILD_COMMAND ""
  )
endif()

FetchContent_MakeAvailable(flashmla)
"""

_QUTLASS = """\
include(FetchContent)

FetchContent_Declare(
  qutlass
  GIT_REPOSITORY https://github.com/IST-DASLab/qutlass.git
  GIT_TAG {sha}
  GIT_PROGRESS TRUE
)

FetchContent_MakeAvailable(qutlass)
"""

_TRITON_KERNELS = """\
# The triton_kernels package ships inside the triton repository, by release tag.
set(DEFAULT_TRITON_KERNELS_TAG "{tag}")

include(FetchContent)
FetchContent_Declare(
  triton_kernels
  GIT_REPOSITORY https://github.com/triton-lang/triton.git
  GIT_TAG ${{DEFAULT_TRITON_KERNELS_TAG}}
  SOURCE_SUBDIR python/triton_kernels/triton_kernels
)
FetchContent_MakeAvailable(triton_kernels)
"""

TREE_CONFIG = f"""\
pins:
  - name: vllm-flash-attn
    upstream: vllm-project/flash-attention
    file: {EXTERNAL}/vllm_flash_attn.cmake
    dependency: vllm-flash-attn
  - name: deepgemm
    upstream: deepseek-ai/DeepGEMM
    file: {EXTERNAL}/deepgemm.cmake
    dependency: deepgemm
    also:
      - file: {DEEPGEMM_SCRIPT}
        variable: DEEPGEMM_GIT_REF
  - name: cutlass
    upstream: nvidia/cutlass
    track: tags
    file: CMakeLists.txt
    dependency: cutlass
"""
"""A config following three of the tree's pins, one with its companion script."""


def vllm_tree_files(
    *,
    flash_attn: str = FLASH_ATTN_SHA,
    deepgemm: str = DEEPGEMM_SHA,
    deepgemm_script: str | None = None,
    flashmla: str = FLASHMLA_SHA,
    qutlass: str = QUTLASS_SHA,
    cutlass: str = CUTLASS_TAG,
    triton_kernels: str = TRITON_KERNELS_TAG,
) -> dict[str, str]:
    """The tree's files, ``{relative path: text}``, each pin at the value given."""
    return {
        "CMakeLists.txt": _CMAKELISTS.format(cutlass=cutlass),
        f"{EXTERNAL}/vllm_flash_attn.cmake": PIN_TEMPLATE.format(sha=flash_attn),
        f"{EXTERNAL}/deepgemm.cmake": DEEPGEMM_CMAKE_TEMPLATE.format(sha=deepgemm),
        DEEPGEMM_SCRIPT: DEEPGEMM_SCRIPT_TEMPLATE.format(sha=deepgemm_script or deepgemm),
        f"{EXTERNAL}/flashmla.cmake": _FLASHMLA.format(sha=flashmla),
        f"{EXTERNAL}/qutlass.cmake": _QUTLASS.format(sha=qutlass),
        f"{EXTERNAL}/triton_kernels.cmake": _TRITON_KERNELS.format(tag=triton_kernels),
    }


def write_vllm_tree(root: Path, **values: str) -> dict[str, str]:
    """Write the tree under ``root`` (created if needed); ``{relative path: text}``.
    ``values`` are ``vllm_tree_files``'s."""
    files = vllm_tree_files(**values)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return files
