// GPU device: selection, properties, memory, hashing, generation, and the escaped-work check.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "harness/gpu/check.hpp"
#include "harness/gpu/device_generators.hpp"
#include "harness/gpu/gpu_device.hpp"

namespace harness {

std::unique_ptr<Device> make_gpu_device(int index) { return std::make_unique<gpu::GpuDevice>(index); }

}  // namespace harness

namespace harness::gpu {

GpuDevice::GpuDevice(int index) : index_(index) {
  int count = 0;
  HARNESS_GPU_CHECK(hipGetDeviceCount(&count));
  if (index < 0 || index >= count)
    throw std::runtime_error("GPU index " + std::to_string(index) + " out of range (" + std::to_string(count) +
                             " devices)");
  HARNESS_GPU_CHECK(hipSetDevice(index));
  HARNESS_GPU_CHECK(hipStreamCreateWithFlags(&side_queue_, hipStreamNonBlocking));
  HARNESS_GPU_CHECK(hipEventCreate(&start_));
  HARNESS_GPU_CHECK(hipEventCreate(&end_));
  read_properties();
  calibrate_spin();
  measure_bandwidth();
  measure_empty_call();
}

GpuDevice::~GpuDevice() {
  // Best effort: after a device fault every call fails, and a destructor must not throw.
  if (flush_buffer_) (void)hipFree(flush_buffer_);
  if (clean_buffer_) (void)hipFree(clean_buffer_);
  if (start_) (void)hipEventDestroy(start_);
  if (end_) (void)hipEventDestroy(end_);
  if (side_queue_) (void)hipStreamDestroy(side_queue_);
}

void GpuDevice::read_properties() {
  hipDeviceProp_t prop{};
  HARNESS_GPU_CHECK(hipGetDeviceProperties(&prop, index_));
  info_.name = prop.name;
#if defined(HARNESS_BACKEND_CUDA)
  info_.backend = "cuda";
  info_.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
#else
  info_.backend = "hip";
  info_.arch = prop.gcnArchName;
  info_.arch = info_.arch.substr(0, info_.arch.find(':'));  // "gfx942:sramecc+:xnack-" -> "gfx942"
#endif
  info_.compute_units = prop.multiProcessorCount;
  info_.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info_.memory_bytes = prop.totalGlobalMem;
}

// Bandwidth ceiling: best of several 1 GiB device copies, read + write bytes counted.
void GpuDevice::measure_bandwidth() {
  std::size_t free_bytes = 0, total_bytes = 0;
  HARNESS_GPU_CHECK(hipMemGetInfo(&free_bytes, &total_bytes));
  std::size_t copy_bytes = 1ull << 30;
  while (copy_bytes > (64ull << 20) && 2 * copy_bytes > free_bytes / 2) copy_bytes /= 2;
  DeviceBuffer src(*this, copy_bytes), dst(*this, copy_bytes);
  fill(src.get(), 0x5a, copy_bytes);
  const hipStream_t q = default_queue();
  double best = 0;
  constexpr int kRuns = 10;
  for (int run = 0; run <= kRuns; ++run) {  // run 0 warms up
    HARNESS_GPU_CHECK(hipEventRecord(start_, q));
    launch_copy(q, dst.get(), src.get(), copy_bytes);
    HARNESS_GPU_CHECK(hipEventRecord(end_, q));
    HARNESS_GPU_CHECK(hipEventSynchronize(end_));
    const double t = elapsed_seconds();
    if (run > 0 && (best == 0 || t < best)) best = t;
  }
  synchronize();
  info_.bandwidth_bytes_per_s = 2.0 * static_cast<double>(copy_bytes) / best;
  info_.bandwidth_source = "measured: " + std::to_string(copy_bytes >> 20) + " MiB device copy (" +
                           std::to_string((2 * copy_bytes) >> 20) + " MiB read + write), best of " +
                           std::to_string(kRuns);
}

void* GpuDevice::alloc(std::size_t bytes) {
  void* p = nullptr;
  HARNESS_GPU_CHECK(hipMalloc(&p, bytes));
  return p;
}

// Never throws: it runs from DeviceBuffer destructors, also while an exception from a device fault
// unwinds, and after a fault every free fails with the fault's (already reported) error.
void GpuDevice::release(void* p) {
  if (!p) return;
  const hipError_t e = hipFree(p);
  if (e != hipSuccess && !release_failed_) {
    release_failed_ = true;
    std::fprintf(stderr, "harness: hipFree failed: %s (later failures not shown)\n", hipGetErrorString(e));
  }
}

void GpuDevice::upload(void* dst, const void* src, std::size_t bytes) {
  if (bytes) HARNESS_GPU_CHECK(hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice));
}

void GpuDevice::download(void* dst, const void* src, std::size_t bytes) {
  if (bytes) HARNESS_GPU_CHECK(hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost));
}

void GpuDevice::fill(void* dst, uint8_t byte, std::size_t bytes) {
  if (bytes) HARNESS_GPU_CHECK(hipMemsetAsync(dst, byte, bytes, default_queue()));
}

uint64_t GpuDevice::hash(const void* p, std::size_t bytes) { return hasher_.hash(default_queue(), p, bytes); }

void GpuDevice::profiler_capture(bool on) {
  synchronize();  // the range holds exactly the work queued between the two calls
#if defined(HARNESS_BACKEND_CUDA)
  HARNESS_GPU_CHECK(on ? hipProfilerStart() : hipProfilerStop());
#else
  // ROCm deprecates hipProfilerStart/Stop (rocprofv3 filters by kernel name instead): no range there.
  (void)on;
#endif
}

void GpuDevice::synchronize() { HARNESS_GPU_CHECK(hipDeviceSynchronize()); }

void GpuDevice::check_last_error(const char* what) {
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    throw std::runtime_error(std::string(what) + ": " + hipGetErrorString(e) + " (error " +
                             std::to_string(static_cast<int>(e)) + ")");
}

void GpuDevice::generate_inputs(const Problem& p, const ShapeCase& s, uint64_t seed, const TensorPtrs& dst) {
  if (const DeviceGenerateFn fn = find_device_generator(p.name())) {
    fn(s, seed, dst);
    check_last_error(("device generator for " + p.name()).c_str());
    synchronize();
    return;
  }
  const HostInputs in = p.generate(s, seed);
  for (const auto& t : in.tensors) {
    const auto it = dst.find(t.spec.name);
    if (it == dst.end()) throw std::runtime_error("generate_inputs: no buffer for input '" + t.spec.name + "'");
    upload(it->second, t.data.data(), t.data.size());
  }
}

// Poison, call, wait for the end event only, hash on the side queue; then synchronize and hash again.
// Limitation: escaped work that still occupies every compute unit delays the first hash until it
// finishes, so only escaped work that is still pending (or slow) is caught, which is the usual case.
SettleHashes GpuDevice::hash_at_end_event(const std::function<void()>& call, void* out, std::size_t bytes,
                                          uint8_t poison) {
  synchronize();
  fill(out, poison, bytes);
  synchronize();
  // Hash once now so the hasher's scratch exists: allocating (or freeing) it after the call would
  // synchronize the device and hide escaped work.
  (void)hasher_.hash(side_queue_, out, bytes);
  call();
  check_last_error("call under the settle check");
  HARNESS_GPU_CHECK(hipEventRecord(end_, default_queue()));
  HARNESS_GPU_CHECK(hipEventSynchronize(end_));
  SettleHashes r;
  r.supported = true;
  r.at_end_event = hasher_.hash(side_queue_, out, bytes);
  synchronize();
  r.after_full_sync = hasher_.hash(side_queue_, out, bytes);
  return r;
}

}  // namespace harness::gpu
