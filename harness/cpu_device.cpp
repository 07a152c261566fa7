// The host as a Device: the cpu build's only device, and the device of `cpu` variants everywhere.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/device.hpp"

namespace harness {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    auto name = line.substr(colon + 1);
    name.erase(0, name.find_first_not_of(" \t"));
    return name;
  }
  return "unknown CPU";
}

std::string machine_arch() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.machine) : std::string("unknown");
}

std::size_t last_level_cache_bytes() {
  for (const char* idx : {"3", "2"}) {
    std::ifstream in(std::string("/sys/devices/system/cpu/cpu0/cache/index") + idx + "/size");
    std::size_t v = 0;
    char unit = 0;
    if (in >> v) {
      in >> unit;
      if (unit == 'K') v <<= 10;
      else if (unit == 'M') v <<= 20;
      if (v) return v;
    }
  }
  return 0;
}

void* aligned_host_alloc(std::size_t bytes) {
  constexpr std::size_t kAlign = 4096;
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded ? rounded : kAlign);
  if (!p) throw std::bad_alloc();
  return p;
}

// Copy bandwidth (read + write bytes per second) of a 256 MiB memcpy, best of 3.
double measure_copy_bandwidth() {
  constexpr std::size_t kBytes = 256ull << 20;
  std::vector<char> a(kBytes, 1), b(kBytes, 0);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), kBytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    a[rep] = b[kBytes - 1 - rep];  // keep the copy observable
    if (s > 0) best = std::max(best, 2.0 * kBytes / s);
  }
  return best;
}

const DeviceInfo& host_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    d.name = cpu_model_name() + " (" + std::to_string(threads) + " threads)";
    d.backend = "cpu";
    d.arch = machine_arch();
    d.compute_units = static_cast<int>(threads);
    d.l2_bytes = last_level_cache_bytes();
    d.memory_bytes = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    d.bandwidth_bytes_per_s = measure_copy_bandwidth();
    d.bandwidth_source = "measured: 256 MiB memcpy (read + write)";
    return d;
  }();
  return info;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

class CpuDevice final : public Device {
 public:
  ~CpuDevice() override { std::free(flush_buf_); }
  Backend kind() const override { return Backend::cpu; }
  const DeviceInfo& info() const override { return host_info(); }
  void* alloc(std::size_t bytes) override { return aligned_host_alloc(bytes); }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void download(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void fill(void* dst, uint8_t byte, std::size_t n) override { std::memset(dst, byte, n); }
  void synchronize() override {}
  void check_last_error(const char*) override {}

  uint64_t hash(const void* p, std::size_t n) override {
    const auto* b = static_cast<const unsigned char*>(p);
    uint64_t h = 0x6a09e667f3bcc908ull ^ n;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = mix(h, w);
    }
    for (; i < n; ++i) h = mix(h, b[i]);
    return h;
  }

  void generate_inputs(const Problem& p, const ShapeCase& s, uint64_t seed, const TensorPtrs& dst) override {
    const HostInputs in = p.generate(s, seed);
    for (const auto& t : in.tensors) {
      const auto it = dst.find(t.spec.name);
      if (it == dst.end()) throw std::invalid_argument("no buffer for input '" + t.spec.name + "'");
      std::memcpy(it->second, t.data.data(), t.data.size());
    }
  }

  std::string timing_method(const TimingOptions& opt) const override {
    std::string m = "host steady_clock around the call";
    if (opt.flush && opt.flush_bytes > 0) m += "; " + std::to_string(opt.flush_bytes >> 20) + " MiB written before each call";
    if (opt.flush && opt.flush_bytes > 0 && opt.clean_flush) m += ", then as many clean bytes read";
    return m;
  }

  double time_call(const std::function<void()>& call, const TimingOptions& opt) override {
    if (opt.flush && opt.flush_bytes > 0) flush(opt.flush_bytes, opt.clean_flush);
    const auto t0 = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  // Evicts the caches by writing every cache line of a buffer of the requested size; clean: then reading every
  // line of a second one (zeros, allocated on first use), which evicts the dirty lines.
  void flush(std::size_t bytes, bool clean) {
    if (bytes != flush_bytes_) {
      std::free(flush_buf_);
      flush_buf_ = static_cast<unsigned char*>(aligned_host_alloc(bytes));
      flush_bytes_ = bytes;
    }
    ++flush_tick_;
    for (std::size_t i = 0; i < bytes; i += 64) flush_buf_[i] = flush_tick_;
    if (!clean) return;
    if (clean_buf_.size() != bytes) clean_buf_.assign(bytes, 0);
    unsigned char x = 0;  // used below, so the reads stay
    for (std::size_t i = 0; i < bytes; i += 64) x |= clean_buf_[i];
    if (x != 0) throw std::logic_error("the clean flush buffer changed");
  }
  unsigned char* flush_buf_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned char flush_tick_ = 0;
  std::vector<unsigned char> clean_buf_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace harness
