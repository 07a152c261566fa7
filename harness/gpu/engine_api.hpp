// Plain C++ entry points into the GPU engine's kernels, for host-compiled tests (GPU builds only).
#pragma once
#include <cstddef>

namespace harness::gpu {

// dst <- src on the default queue (asynchronous, like a variant's launch).
void copy_on_default_queue(void* dst, const void* src, std::size_t bytes);

}  // namespace harness::gpu

namespace harness::gpu::test_hooks {

// Fault injector for the escaped-work check: on a separate non-blocking queue that nothing joins,
// waits about delay_seconds and then copies src to dst. Returns at once.
void delayed_copy_on_unjoined_queue(void* dst, const void* src, std::size_t bytes, double delay_seconds);

}  // namespace harness::gpu::test_hooks
