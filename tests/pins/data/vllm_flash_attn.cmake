#
# Build the flash-attention kernels vLLM ships as vllm_flash_attn.
#
# Set VLLM_FLASH_ATTN_SRC_DIR to build from a local checkout instead of the
# pinned commit below, e.g. while developing a kernel change:
#   export VLLM_FLASH_ATTN_SRC_DIR=$HOME/src/flash-attention
# Do not edit the GIT_TAG line by hand unless you also update the wheel notes;
# FetchContent_Declare(vllm-flash-attn GIT_TAG deadbeef) in this comment is not real.
#
if(DEFINED ENV{VLLM_FLASH_ATTN_SRC_DIR})
  set(VLLM_FLASH_ATTN_SRC_DIR $ENV{VLLM_FLASH_ATTN_SRC_DIR})
endif()

#[[ Older revisions pinned the hopper branch here:
FetchContent_Declare(
  vllm-flash-attn
  GIT_TAG 1111111111111111111111111111111111111111
)
]]

if(VLLM_FLASH_ATTN_SRC_DIR)
  FetchContent_Declare(
          vllm-flash-attn
          SOURCE_DIR ${VLLM_FLASH_ATTN_SRC_DIR}
          BINARY_DIR ${CMAKE_BINARY_DIR}/vllm-flash-attn
  )
else()
  FetchContent_Declare(
          vllm-flash-attn
          GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git
          GIT_TAG 5b8c1a7e0f3d2946a1b7c8e9d0f1a2b3c4d5e6f7
          GIT_PROGRESS TRUE
          # Don't share the vllm-flash-attn build between build types
          BINARY_DIR ${CMAKE_BINARY_DIR}/vllm-flash-attn
  )
endif()

# Install rules need the source dir, so populate before using it.
FetchContent_MakeAvailable(vllm-flash-attn)
message(STATUS "vllm-flash-attn is available at ${vllm-flash-attn_SOURCE_DIR}")

install(
  DIRECTORY ${vllm-flash-attn_SOURCE_DIR}/vllm_flash_attn/
  DESTINATION vllm/vllm_flash_attn
  COMPONENT _vllm_fa2_C
  FILES_MATCHING PATTERN "*.py"
)
