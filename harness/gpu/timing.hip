// One timed call with the official semantics (spec evaluation.md): synchronize; flush the caches; a
// GPU-side wait so the host's launches are queued before the start event fires; start event on the
// default queue, the call, end event, synchronize; elapsed time between the events.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/gpu/check.hpp"
#include "harness/gpu/gpu_device.hpp"

namespace harness::gpu {

double GpuDevice::elapsed_seconds() {
  float ms = 0;
  HARNESS_GPU_CHECK(hipEventElapsedTime(&ms, start_, end_));
  return static_cast<double>(ms) * 1e-3;
}

// The spin kernel counts ticks of a constant-rate device timer; measure its rate with events.
void GpuDevice::calibrate_spin() {
  const hipStream_t q = default_queue();
  auto timed_spin = [&](uint64_t ticks) {
    HARNESS_GPU_CHECK(hipEventRecord(start_, q));
    launch_spin(q, ticks);
    HARNESS_GPU_CHECK(hipEventRecord(end_, q));
    HARNESS_GPU_CHECK(hipEventSynchronize(end_));
    return elapsed_seconds();
  };
  timed_spin(1000);  // warm-up (module load)
  const uint64_t probe = 100000;
  const double rough = static_cast<double>(probe) / std::max(timed_spin(probe), 1e-6);
  const uint64_t ticks = static_cast<uint64_t>(rough * 0.005);  // about 5 ms
  spin_ticks_per_s_ = static_cast<double>(ticks) / timed_spin(ticks);
  if (!(spin_ticks_per_s_ > 0) || !std::isfinite(spin_ticks_per_s_))
    throw std::runtime_error("spin calibration failed: device timer does not advance");
}

// The latency floor of a one-launch call: an empty kernel over every compute unit, timed like a
// candidate (flush, host hidden). The median of several calls; the first warms the module up.
void GpuDevice::measure_empty_call() {
  constexpr int kRuns = 15;
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(std::max(info_.compute_units, 1));
  const TimingOptions official{};
  auto call = [&] { launch_empty(default_queue(), blocks, kThreads); };
  time_call(call, official);
  std::vector<double> t;
  for (int i = 0; i < kRuns; ++i) t.push_back(time_call(call, official));
  std::sort(t.begin(), t.end());
  info_.empty_call_s = t[t.size() / 2];
  host_exposed_ = 0;  // the count is about candidates' calls
  info_.empty_call_source = "median of " + std::to_string(kRuns) + " official-method calls of one empty kernel (" +
                            std::to_string(blocks) + " x " + std::to_string(kThreads) + " threads)";
}

std::size_t GpuDevice::flush_size(std::size_t requested_bytes) const {
  return std::max({requested_bytes, 2 * info_.l2_bytes, std::size_t{1} << 30});
}

// Writes a buffer of at least 2x L2 and 1 GiB (allocated once, grown on demand), a new byte each time.
void GpuDevice::flush_caches(std::size_t requested_bytes) {
  const std::size_t bytes = flush_size(requested_bytes);
  if (bytes > flush_buffer_bytes_) {
    if (flush_buffer_) release(flush_buffer_);
    flush_buffer_ = nullptr;
    flush_buffer_bytes_ = 0;
    flush_buffer_ = alloc(bytes);
    flush_buffer_bytes_ = bytes;
  }
  HARNESS_GPU_CHECK(hipMemsetAsync(flush_buffer_, ++flush_value_, bytes, default_queue()));
}

std::size_t GpuDevice::clean_sweep_size() const {
  return (std::max(2 * info_.l2_bytes, std::size_t{64} << 20) + 15) / 16 * 16;
}

// --clean-flush: reading twice the L2 of a clean buffer evicts the flush's dirty lines (written back now, before
// the start event) and leaves only clean lines behind. The buffer holds zeros, so the sweep's store never happens.
void GpuDevice::write_back_dirty_lines() {
  if (!clean_buffer_) {
    clean_buffer_ = alloc(clean_sweep_size());
    HARNESS_GPU_CHECK(hipMemsetAsync(clean_buffer_, 0, clean_sweep_size(), default_queue()));
  }
  launch_read_sweep(default_queue(), clean_buffer_, clean_sweep_size());
}

void GpuDevice::enqueue_host_hiding_wait() {
  launch_spin(default_queue(), static_cast<uint64_t>(spin_seconds_ * spin_ticks_per_s_));
}

// If the start event has already fired when the call returns, the GPU sat idle waiting for the host
// at some point of the timed region: count it and lengthen the wait for later calls.
void GpuDevice::note_whether_host_was_hidden() {
  const hipError_t q = hipEventQuery(start_);
  if (q == hipErrorNotReady) {
    (void)hipGetLastError();  // some runtimes record "not ready" as the last error; it is not one
    return;
  }
  HARNESS_GPU_CHECK(q);
  ++host_exposed_;
  spin_seconds_ = std::min(spin_seconds_ * 2, 0.064);
}

double GpuDevice::time_call(const std::function<void()>& call, const TimingOptions& opt) {
  if (opt.graph) return time_graph_replay(call, opt);
  const hipStream_t q = default_queue();
  synchronize();
  if (opt.flush) flush_caches(opt.flush_bytes);
  if (opt.flush && opt.clean_flush) write_back_dirty_lines();
  if (opt.hide_host) enqueue_host_hiding_wait();
  HARNESS_GPU_CHECK(hipEventRecord(start_, q));
  call();
  HARNESS_GPU_CHECK(hipEventRecord(end_, q));
  check_last_error("timed call");
  if (opt.hide_host) note_whether_host_was_hidden();
  HARNESS_GPU_CHECK(hipEventSynchronize(end_));
  synchronize();
  return elapsed_seconds();
}

// Not the official method: the call is captured into a graph (every time_call, so a changing call is
// never replayed stale), replayed once untimed, then one replay is timed like a normal call.
double GpuDevice::time_graph_replay(const std::function<void()>& call, const TimingOptions& opt) {
#if defined(HARNESS_PER_THREAD_DEFAULT_QUEUE)
  const hipStream_t q = default_queue();
  synchronize();
  hipGraph_t graph = nullptr;
  hipGraphExec_t exec = nullptr;
  HARNESS_GPU_CHECK(hipStreamBeginCapture(q, hipStreamCaptureModeThreadLocal));
  call();
  const hipError_t launch_error = hipGetLastError();
  const hipError_t end_error = hipStreamEndCapture(q, &graph);
  HARNESS_GPU_CHECK(launch_error);
  HARNESS_GPU_CHECK(end_error);
  double seconds = 0;
  try {
    HARNESS_GPU_CHECK(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
    HARNESS_GPU_CHECK(hipGraphLaunch(exec, q));
    synchronize();
    if (opt.flush) flush_caches(opt.flush_bytes);
    if (opt.flush && opt.clean_flush) write_back_dirty_lines();
    if (opt.hide_host) enqueue_host_hiding_wait();
    HARNESS_GPU_CHECK(hipEventRecord(start_, q));
    HARNESS_GPU_CHECK(hipGraphLaunch(exec, q));
    HARNESS_GPU_CHECK(hipEventRecord(end_, q));
    HARNESS_GPU_CHECK(hipEventSynchronize(end_));
    synchronize();
    seconds = elapsed_seconds();
  } catch (...) {
    if (exec) (void)hipGraphExecDestroy(exec);
    (void)hipGraphDestroy(graph);
    throw;
  }
  HARNESS_GPU_CHECK(hipGraphExecDestroy(exec));
  HARNESS_GPU_CHECK(hipGraphDestroy(graph));
  return seconds;
#else
  (void)call;
  (void)opt;
  throw std::runtime_error(
      "graph replay needs a build whose <<<...>>> launches go to the per-thread default queue "
      "(nvcc --default-stream per-thread, clang -fgpu-default-stream=per-thread); this build uses the legacy one");
#endif
}

std::string GpuDevice::timing_method(const TimingOptions& opt) const {
#if defined(HARNESS_PER_THREAD_DEFAULT_QUEUE)
  const std::string queue = "events on the (per-thread) default queue";
#else
  const std::string queue = "events on the (legacy) default queue";
#endif
  if (opt.graph) return "graph replay (not the official method), " + queue;
  std::string m = queue;
  if (!opt.flush) {
    m += "; no flush (hot caches)";
  } else {
    m += "; " + std::to_string(flush_size(opt.flush_bytes) >> 20) + " MiB memset flush before each call";
    if (opt.clean_flush)
      m += ", then a read of " + std::to_string(clean_sweep_size() >> 20) +
           " MiB of clean lines (dirty lines written back before the start event)";
  }
  if (opt.hide_host) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "; GPU-side wait of %.1f ms between flush and start event (host hidden by construction; %d calls found exposed)",
                  spin_seconds_ * 1e3, host_exposed_);
    m += buf;
  } else {
    m += "; no GPU-side wait (host launch overhead may be measured)";
  }
  return m;
}

}  // namespace harness::gpu
