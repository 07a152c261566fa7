// Where inputs live and variants run: the host (cpu build) or a GPU (cuda / hip builds).
// The runner (harness/runner.*) is written once against this interface.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "harness/problem.hpp"

namespace harness {

struct DeviceInfo {
  std::string name;     // "NVIDIA H200", "host CPU (x86_64, 2 threads)"
  std::string backend;  // "cpu" | "cuda" | "hip"
  std::string arch;     // "sm_90", "gfx950", "x86_64"
  int compute_units = 0;
  std::size_t l2_bytes = 0;
  std::size_t memory_bytes = 0;
  double bandwidth_bytes_per_s = 0;  // measured ceiling (large copy, read + write bytes)
  double matrix_flops_per_s = 0;     // dense rate for a run's floors, at the variant's operand width
                                     // (set by the runner; 0 if unknown: harness/matrix_rate.hpp)
  std::string matrix_flops_source;
  std::string bandwidth_source;      // "measured: 2 GiB copy" / "datasheet"
  // Official-method time of one launch of an empty kernel over every compute unit (cold caches, host
  // hidden): no one-launch call can measure less, whatever its bytes. 0 where not measured (cpu).
  double empty_call_s = 0;
  std::string empty_call_source;
};

struct TimingOptions {
  bool flush = true;                        // official: flush caches before every timed call
  std::size_t flush_bytes = 1ull << 30;     // at least 2x the last-level cache
  bool clean_flush = false;                 // then read a clean buffer: the flush's dirty lines written back
                                            // before the start event (a diagnostic, not the official method)
  bool hide_host = true;                    // GPU-side wait between flush and start event
  bool graph = false;                       // replay a captured graph (not the official method)
};

// The escaped-work check: output hashes taken when the end event recorded after the call has fired
// (read on a separate non-blocking queue) and after a full device synchronize. They differ when the
// call left work running outside the default queue, which timing events cannot see.
struct SettleHashes {
  bool supported = false;  // false on the cpu device
  uint64_t at_end_event = 0;
  uint64_t after_full_sync = 0;
  bool escaped() const { return supported && at_end_event != after_full_sync; }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual Backend kind() const = 0;
  virtual const DeviceInfo& info() const = 0;
  virtual void* alloc(std::size_t bytes) = 0;  // throws on failure
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill(void* dst, uint8_t byte, std::size_t bytes) = 0;
  virtual uint64_t hash(const void* p, std::size_t bytes) = 0;  // content hash, for input-mutation checks
  virtual void synchronize() = 0;
  // Writes the problem's inputs for (shape, seed) into the buffers, bit-identical to
  // Problem::generate. The cpu device calls generate(); GPU devices run the generator on the device.
  virtual void generate_inputs(const Problem& p, const ShapeCase& s, uint64_t seed, const TensorPtrs& dst) = 0;
  // One timed call with the official semantics; returns seconds.
  virtual double time_call(const std::function<void()>& call, const TimingOptions& opt) = 0;
  // Checks for an error left by the last launch(es); throws with the message.
  virtual void check_last_error(const char* what) = 0;
  // Fills [out, out+bytes) with `poison`, runs the call, and returns the two settle hashes.
  virtual SettleHashes hash_at_end_event(const std::function<void()>& call, void* out, std::size_t bytes,
                                         uint8_t poison) {
    (void)call; (void)out; (void)bytes; (void)poison;
    return {};
  }
  // Timed calls so far whose start event had already fired when the call returned to the host (the
  // GPU-side wait did not hide the host; such a time may include launch overhead).
  virtual int host_exposed_timings() const { return 0; }
  // Opens / closes the profiler's capture range (cudaProfilerStart / hipProfilerStart); no-op on the cpu.
  virtual void profiler_capture(bool on) { (void)on; }
  // One line describing how time_call measures, for results files.
  virtual std::string timing_method(const TimingOptions& opt) const { (void)opt; return "host clock"; }
};

std::unique_ptr<Device> make_cpu_device();
#if defined(HARNESS_WITH_GPU)
std::unique_ptr<Device> make_gpu_device(int index);
#endif

// RAII for one device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& d, std::size_t bytes) : dev_(&d), bytes_(bytes), p_(bytes ? d.alloc(bytes) : nullptr) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    reset();
    dev_ = o.dev_; bytes_ = o.bytes_; p_ = o.p_;
    o.p_ = nullptr; o.bytes_ = 0;
    return *this;
  }
  ~DeviceBuffer() { reset(); }
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  // Never throws: it runs in destructors, also while a device error unwinds the stack (a sticky
  // GPU error makes every later free fail; throwing then would terminate before results are written).
  void reset() noexcept {
    if (p_ && dev_) {
      try { dev_->release(p_); } catch (...) {}
    }
    p_ = nullptr;
    bytes_ = 0;
  }

 private:
  Device* dev_ = nullptr;
  std::size_t bytes_ = 0;
  void* p_ = nullptr;
};

}  // namespace harness
