// Plain C++ entry points into the GPU engine's kernels, for host-compiled tests (GPU builds only).
#pragma once
#include <cstddef>

namespace harness::gpu {

// dst <- src on the default queue (asynchronous, like a variant's launch).
void copy_on_default_queue(void* dst, const void* src, std::size_t bytes);

}  // namespace harness::gpu
