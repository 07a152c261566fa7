// Checked GPU runtime calls: HARNESS_GPU_CHECK(hipMalloc(&p, n)) throws std::runtime_error naming
// the call, the file and the line. For GPU-compiled (.hip) sources only.
#pragma once
#include <stdexcept>
#include <string>

#include "problems/common/portability.h"

namespace harness::gpu {

[[noreturn]] inline void throw_gpu_error(hipError_t e, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string("GPU call failed: ") + call + " -> " + hipGetErrorString(e) +
                           " (error " + std::to_string(static_cast<int>(e)) + ") at " + file + ":" +
                           std::to_string(line));
}

inline void check_gpu_result(hipError_t e, const char* call, const char* file, int line) {
  if (e != hipSuccess) throw_gpu_error(e, call, file, line);
}

}  // namespace harness::gpu

#define HARNESS_GPU_CHECK(expr) ::harness::gpu::check_gpu_result((expr), #expr, __FILE__, __LINE__)

// After a <<<...>>> launch: reports a bad launch configuration at the launch site.
#define HARNESS_GPU_CHECK_LAUNCH(what) ::harness::gpu::check_gpu_result(hipGetLastError(), what, __FILE__, __LINE__)
