# Triton kernels are fetched by tag; CI overrides the tag through
# TRITON_KERNELS_TAG when testing a release candidate.
set(DEFAULT_TRITON_KERNELS_TAG "v3.6.0")

if(DEFINED ENV{TRITON_KERNELS_TAG})
  set(TRITON_KERNELS_TAG_FROM_ENV $ENV{TRITON_KERNELS_TAG})
endif()

include(FetchContent)
FetchContent_Declare(
  triton_kernels
  GIT_REPOSITORY https://github.com/triton-lang/triton.git
  GIT_TAG ${DEFAULT_TRITON_KERNELS_TAG}
  GIT_SHALLOW TRUE
  SOURCE_SUBDIR python/triton_kernels/triton_kernels
)
FetchContent_MakeAvailable(triton_kernels)
