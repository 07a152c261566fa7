// The Device implementation for GPUs (CUDA through hip_to_cuda.h, or HIP on AMD).
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/device.hpp"
#include "harness/gpu/engine_kernels.hpp"
#include "harness/gpu/runtime_api.hpp"

namespace harness::gpu {

class GpuDevice final : public Device {
 public:
  explicit GpuDevice(int index);
  ~GpuDevice() override;
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  Backend kind() const override { return Backend::gpu; }
  const DeviceInfo& info() const override { return info_; }
  void* alloc(std::size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* src, std::size_t bytes) override;
  void download(void* dst, const void* src, std::size_t bytes) override;
  void fill(void* dst, uint8_t byte, std::size_t bytes) override;
  uint64_t hash(const void* p, std::size_t bytes) override;
  void synchronize() override;
  void generate_inputs(const Problem& p, const ShapeCase& s, uint64_t seed, const TensorPtrs& dst) override;
  double time_call(const std::function<void()>& call, const TimingOptions& opt) override;
  void check_last_error(const char* what) override;
  SettleHashes hash_at_end_event(const std::function<void()>& call, void* out, std::size_t bytes,
                                 uint8_t poison) override;
  int host_exposed_timings() const override { return host_exposed_; }
  void profiler_capture(bool on) override;
  std::string timing_method(const TimingOptions& opt) const override;

 private:
  // gpu_device.hip
  void read_properties();
  void measure_bandwidth();
  void measure_empty_call();
  // timing.hip
  void calibrate_spin();
  void flush_caches(std::size_t requested_bytes);
  void write_back_dirty_lines();
  std::size_t clean_sweep_size() const;
  std::size_t flush_size(std::size_t requested_bytes) const;
  void enqueue_host_hiding_wait();
  void note_whether_host_was_hidden();
  double elapsed_seconds();
  double time_graph_replay(const std::function<void()>& call, const TimingOptions& opt);

  int index_;
  DeviceInfo info_;
  DeviceHasher hasher_;
  hipStream_t side_queue_ = nullptr;  // non-blocking: waits for no other queue
  hipEvent_t start_ = nullptr, end_ = nullptr;
  void* flush_buffer_ = nullptr;
  std::size_t flush_buffer_bytes_ = 0;
  uint8_t flush_value_ = 0;
  void* clean_buffer_ = nullptr;  // clean_sweep_size() bytes of zeros, read after the flush by --clean-flush
  double spin_ticks_per_s_ = 0;
  double spin_seconds_ = 0.002;  // grows when a call is found not hidden
  int host_exposed_ = 0;
  bool release_failed_ = false;
};

}  // namespace harness::gpu
