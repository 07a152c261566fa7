# Build facts recorded in every result file.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                OUTPUT_VARIABLE HARNESS_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT HARNESS_GIT_COMMIT)
  set(HARNESS_GIT_COMMIT "unknown")
else()
  # A tree with changes (tracked or untracked, not ignored) at configure time: the commit alone does not name the
  # sources, so results and leaderboard entries say "-dirty" (a change after configuring is not seen; reconfigure).
  execute_process(COMMAND git status --porcelain WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE HARNESS_GIT_STATUS OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(HARNESS_GIT_STATUS)
    string(APPEND HARNESS_GIT_COMMIT "-dirty")
  endif()
endif()
if(HARNESS_BACKEND STREQUAL "cuda")
  set(HARNESS_GPU_COMPILER "nvcc ${CMAKE_CUDA_COMPILER_VERSION} sm_${CMAKE_CUDA_ARCHITECTURES}")
elseif(HARNESS_BACKEND STREQUAL "hip")
  set(HARNESS_GPU_COMPILER "hip ${HARNESS_HIP_ARCH}")
else()
  set(HARNESS_GPU_COMPILER "none")
endif()
string(REPLACE ";" "," HARNESS_ALL_GPU_VARIANTS_STR "${HARNESS_ALL_GPU_VARIANTS}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/build_info.cpp.in ${CMAKE_BINARY_DIR}/generated/build_info.cpp @ONLY)
