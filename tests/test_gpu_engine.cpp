// The GPU engine on a real device: hashing, generation parity with the host, timing semantics and
// the escaped-work check. GPU builds only (the cpu build compiles this file to nothing).
#if defined(HARNESS_WITH_GPU)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "harness/device.hpp"
#include "harness/gpu/device_generators.hpp"
#include "harness/gpu/engine_api.hpp"
#include "harness/problem.hpp"
#include "tests/catch.hpp"

namespace {

harness::Device& gpu() {
  static std::unique_ptr<harness::Device> d = harness::make_gpu_device(0);
  return *d;
}

std::vector<uint8_t> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

uint64_t hash_of_bytes(const std::vector<uint8_t>& bytes, std::size_t offset = 0) {
  harness::DeviceBuffer b(gpu(), bytes.size() + offset + 8);
  gpu().fill(b.get(), 0xee, b.bytes());
  gpu().upload(static_cast<uint8_t*>(b.get()) + offset, bytes.data(), bytes.size());
  return gpu().hash(static_cast<uint8_t*>(b.get()) + offset, bytes.size());
}

harness::ShapeCase shape(std::vector<std::pair<std::string, int64_t>> params, uint64_t seed) {
  harness::ShapeCase s;
  s.params = std::move(params);
  s.seed = seed;
  return s;
}

// Device generation into poisoned buffers, downloaded and compared with host generation byte for byte.
void require_device_generation_matches_host(const std::string& problem_name, const harness::ShapeCase& s) {
  const harness::Problem* p = harness::find_problem(problem_name);
  REQUIRE(p != nullptr);
  REQUIRE(harness::gpu::find_device_generator(problem_name) != nullptr);  // else this compares host to host
  const harness::HostInputs host = p->generate(s, s.seed);
  std::vector<harness::DeviceBuffer> buffers;
  harness::TensorPtrs ptrs;
  for (const auto& spec : p->input_specs(s)) {
    buffers.emplace_back(gpu(), spec.bytes());
    gpu().fill(buffers.back().get(), 0xa5, spec.bytes());
    ptrs[spec.name] = buffers.back().get();
  }
  gpu().generate_inputs(*p, s, s.seed, ptrs);
  for (const auto& t : host.tensors) {
    std::vector<uint8_t> dev(t.data.size());
    gpu().download(dev.data(), ptrs.at(t.spec.name), dev.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < dev.size(); ++i) differing += dev[i] != t.data[i];
    INFO(problem_name << " " << s.label() << " tensor " << t.spec.name << ": " << differing << " of "
                      << dev.size() << " bytes differ");
    CHECK(differing == 0);
  }
}

double copy_seconds(const harness::TimingOptions& opt, void* dst, const void* src, std::size_t bytes) {
  return gpu().time_call([&] { harness::gpu::copy_on_default_queue(dst, src, bytes); }, opt);
}

}  // namespace

TEST_CASE("gpu engine: device info is read and the bandwidth ceiling is measured") {
  const auto& info = gpu().info();
  INFO(info.name << " " << info.arch << " CUs " << info.compute_units << " L2 " << info.l2_bytes << " bw "
                 << info.bandwidth_bytes_per_s << " (" << info.bandwidth_source << ")");
  CHECK(!info.name.empty());
  CHECK((info.backend == "cuda" || info.backend == "hip"));
  CHECK((info.arch.rfind("sm_", 0) == 0 || info.arch.rfind("gfx", 0) == 0));
  CHECK(info.compute_units > 0);
  CHECK(info.l2_bytes > 0);
  CHECK(info.memory_bytes > (1ull << 30));
  CHECK(info.bandwidth_bytes_per_s > 100e9);
  CHECK(info.bandwidth_bytes_per_s < 20e12);
  CHECK(info.bandwidth_source.rfind("measured:", 0) == 0);
  // One empty launch, timed like a candidate: microseconds, not zero and not milliseconds.
  CHECK(info.empty_call_s > 0.5e-6);
  CHECK(info.empty_call_s < 200e-6);
  CHECK(info.empty_call_source.find("empty kernel") != std::string::npos);
}

TEST_CASE("gpu engine: hash depends on content and position only") {
  const auto a = random_bytes((1 << 20) + 13, 1);
  const uint64_t h = hash_of_bytes(a);
  CHECK(hash_of_bytes(a) == h);     // deterministic, another buffer
  CHECK(hash_of_bytes(a, 3) == h);  // unaligned start reads the same bytes
  auto one_bit = a;
  one_bit[a.size() / 2] ^= 1;
  CHECK(hash_of_bytes(one_bit) != h);
  auto last_byte = a;
  last_byte.back() ^= 0x80;
  CHECK(hash_of_bytes(last_byte) != h);  // the ragged tail counts
  auto swapped = a;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8 * 300);
  CHECK(hash_of_bytes(swapped) != h);  // same words, other places
  auto shorter = a;
  shorter.pop_back();
  CHECK(hash_of_bytes(shorter) != h);
  const std::vector<uint8_t> zeros(4096, 0), zeros_longer(4104, 0);
  CHECK(hash_of_bytes(zeros) != hash_of_bytes(zeros_longer));  // length is part of the hash
}

TEST_CASE("gpu engine: device generation equals host generation bit for bit (mla_decode)") {
  require_device_generation_matches_host("mla_decode", shape({{"bs", 2}, {"kv", 300}}, 7));
  require_device_generation_matches_host("mla_decode", shape({{"bs", 3}, {"kv", 64}}, 12345));
  const harness::Problem* p = harness::find_problem("mla_decode");
  REQUIRE(p != nullptr);
  require_device_generation_matches_host("mla_decode", p->test_shapes().front());  // bs 4, kv 1024
}

TEST_CASE("gpu engine: device generation equals host generation bit for bit (moe_mxfp4)") {
  require_device_generation_matches_host(
      "moe_mxfp4", shape({{"d_hidden", 256}, {"d_expert", 256}, {"n_routed", 6}, {"k", 3}, {"bs", 9}}, 404));
  require_device_generation_matches_host(
      "moe_mxfp4", shape({{"d_hidden", 512}, {"d_expert", 256}, {"n_routed", 8}, {"k", 2}, {"bs", 5}}, 2291));
}

TEST_CASE("gpu engine: the largest moe_mxfp4 benchmark input is generated in well under a second") {
  const harness::Problem* p = harness::find_problem("moe_mxfp4");
  REQUIRE(p != nullptr);
  auto input_bytes = [&](const harness::ShapeCase& s) {
    std::size_t n = 0;
    for (const auto& spec : p->input_specs(s)) n += spec.bytes();
    return n;
  };
  const auto shapes = p->benchmark_shapes();
  const harness::ShapeCase largest = *std::max_element(
      shapes.begin(), shapes.end(), [&](const auto& a, const auto& b) { return input_bytes(a) < input_bytes(b); });
  std::vector<harness::DeviceBuffer> buffers;
  harness::TensorPtrs ptrs;
  for (const auto& spec : p->input_specs(largest)) {
    buffers.emplace_back(gpu(), spec.bytes());
    ptrs[spec.name] = buffers.back().get();
  }
  gpu().generate_inputs(*p, largest, largest.seed, ptrs);  // first call loads the generator kernels
  gpu().synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  gpu().generate_inputs(*p, largest, largest.seed + 1, ptrs);
  gpu().synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("largest moe_mxfp4 benchmark input (%s, %.2f GB): generated in %.1f ms\n", largest.label().c_str(),
              input_bytes(largest) / 1e9, seconds * 1e3);
  CHECK(seconds < 0.5);
}

TEST_CASE("gpu engine: a profiler capture range around work needs no profiler attached") {
  const std::size_t bytes = 1 << 20;
  const auto a = random_bytes(bytes, 7);
  harness::DeviceBuffer src(gpu(), bytes), dst(gpu(), bytes);
  gpu().upload(src.get(), a.data(), bytes);
  gpu().fill(dst.get(), 0, bytes);
  CHECK_NOTHROW(gpu().profiler_capture(true));
  harness::gpu::copy_on_default_queue(dst.get(), src.get(), bytes);
  CHECK_NOTHROW(gpu().profiler_capture(false));
  CHECK(gpu().hash(dst.get(), bytes) == gpu().hash(src.get(), bytes));
}

TEST_CASE("gpu engine: a timed 1 GiB copy runs at the measured bandwidth and repeats") {
  const std::size_t bytes = 1ull << 30;
  harness::DeviceBuffer src(gpu(), bytes), dst(gpu(), bytes);
  gpu().fill(src.get(), 0x3c, bytes);
  gpu().fill(dst.get(), 0x00, bytes);
  const harness::TimingOptions official;  // flush + GPU-side wait
  const int exposed_before = gpu().host_exposed_timings();
  auto mean_of = [&](int n) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += copy_seconds(official, dst.get(), src.get(), bytes);
    return sum / n;
  };
  copy_seconds(official, dst.get(), src.get(), bytes);  // warm-up
  const double first = mean_of(20), second = mean_of(20);
  const double achieved = 2.0 * static_cast<double>(bytes) / first;
  INFO("copy " << first * 1e6 << " us then " << second * 1e6 << " us; " << achieved / 1e9 << " GB/s vs measured "
               << gpu().info().bandwidth_bytes_per_s / 1e9 << " GB/s; method: " << gpu().timing_method(official));
  std::printf("gpu-engine: %s, %s; timed 1 GiB copy %.1f us then %.1f us (%.0f GB/s, %.1f%% of measured); %s\n",
              gpu().info().name.c_str(), gpu().info().bandwidth_source.c_str(), first * 1e6, second * 1e6,
              achieved / 1e9, 100 * achieved / gpu().info().bandwidth_bytes_per_s, gpu().timing_method(official).c_str());
  CHECK(std::abs(achieved / gpu().info().bandwidth_bytes_per_s - 1.0) < 0.10);
  CHECK(std::abs(second / first - 1.0) < 0.02);
  CHECK(gpu().host_exposed_timings() == exposed_before);
  CHECK(gpu().hash(dst.get(), bytes) == gpu().hash(src.get(), bytes));  // the timed call did the copy
}

TEST_CASE("gpu engine: the clean flush evicts like the official one, without leaving dirty lines") {
  const std::size_t bytes = 16ull << 20;  // source and destination fit in the L2 together
  harness::DeviceBuffer src(gpu(), bytes), dst(gpu(), bytes);
  const auto content = random_bytes(bytes, 5);
  gpu().upload(src.get(), content.data(), bytes);
  harness::TimingOptions hot, clean, official;
  hot.flush = false;
  clean.clean_flush = true;
  auto best_of = [&](const harness::TimingOptions& o) {
    double best = 1e9;
    for (int i = 0; i < 7; ++i) best = std::min(best, copy_seconds(o, dst.get(), src.get(), bytes));
    return best;
  };
  best_of(clean);  // allocates the clean buffer
  const double t_hot = best_of(hot), t_clean = best_of(clean), t_official = best_of(official);
  INFO("method: " << gpu().timing_method(clean));
  std::printf("gpu-engine: 16 MiB copy, best of 7: %.2f us hot, %.2f us after the clean flush, %.2f us official\n",
              t_hot * 1e6, t_clean * 1e6, t_official * 1e6);
  CHECK(gpu().timing_method(clean).find("clean lines") != std::string::npos);
  CHECK(gpu().timing_method(official).find("memset flush") != std::string::npos);
  CHECK(gpu().timing_method(official).find("no flush") == std::string::npos);
  CHECK(gpu().timing_method(official).find("clean lines") == std::string::npos);
  CHECK(gpu().timing_method(hot).find("no flush (hot caches)") != std::string::npos);
  CHECK(t_clean > 1.2 * t_hot);  // the sweep evicted the source
  CHECK(gpu().hash(dst.get(), bytes) == gpu().hash(src.get(), bytes));
}

TEST_CASE("gpu engine: the GPU-side wait hides host time spent before the launches") {
  const std::size_t bytes = 64ull << 20;  // tens of microseconds
  harness::DeviceBuffer src(gpu(), bytes), dst(gpu(), bytes);
  gpu().fill(src.get(), 0x11, bytes);
  auto slow_host_call = [&] {
    std::this_thread::sleep_for(std::chrono::microseconds(800));  // host overhead before launching
    harness::gpu::copy_on_default_queue(dst.get(), src.get(), bytes);
  };
  harness::TimingOptions hidden;
  hidden.flush = false;
  harness::TimingOptions exposed = hidden;
  exposed.hide_host = false;
  double t_hidden = 1e9, t_exposed = 1e9;
  for (int i = 0; i < 5; ++i) {
    t_hidden = std::min(t_hidden, gpu().time_call(slow_host_call, hidden));
    t_exposed = std::min(t_exposed, gpu().time_call(slow_host_call, exposed));
  }
  INFO("hidden " << t_hidden * 1e6 << " us, exposed " << t_exposed * 1e6 << " us");
  std::printf("gpu-engine: 64 MiB copy after 800 us of host work: %.1f us with the GPU-side wait, %.1f us without\n",
              t_hidden * 1e6, t_exposed * 1e6);
  CHECK(t_hidden < 300e-6);
  CHECK(t_exposed > 700e-6);
}

TEST_CASE("gpu engine: the settle check sees work that escaped the default queue") {
  const std::size_t bytes = 4ull << 20;
  harness::DeviceBuffer src(gpu(), bytes), dst(gpu(), bytes);
  const auto content = random_bytes(bytes, 9);
  gpu().upload(src.get(), content.data(), bytes);

  const auto joined = gpu().hash_at_end_event(
      [&] { harness::gpu::copy_on_default_queue(dst.get(), src.get(), bytes); }, dst.get(), bytes, 0xff);
  REQUIRE(joined.supported);
  CHECK(!joined.escaped());
  CHECK(joined.after_full_sync == gpu().hash(src.get(), bytes));

  const auto escaped = gpu().hash_at_end_event(
      [&] { harness::gpu::test_hooks::delayed_copy_on_unjoined_queue(dst.get(), src.get(), bytes, 0.02); },
      dst.get(), bytes, 0xff);
  REQUIRE(escaped.supported);
  CHECK(escaped.escaped());
  CHECK(escaped.after_full_sync == gpu().hash(src.get(), bytes));  // the work did finish, too late
}

TEST_CASE("gpu engine: graph replay times the call, or says why this build cannot") {
  const std::size_t bytes = 16ull << 20;
  harness::DeviceBuffer src(gpu(), bytes), dst(gpu(), bytes);
  gpu().fill(src.get(), 0x22, bytes);
  harness::TimingOptions g;
  g.graph = true;
#if defined(HARNESS_PER_THREAD_DEFAULT_QUEUE)
  const double t = copy_seconds(g, dst.get(), src.get(), bytes);
  CHECK(t > 0);
  CHECK(gpu().hash(dst.get(), bytes) == gpu().hash(src.get(), bytes));
#else
  try {
    (void)copy_seconds(g, dst.get(), src.get(), bytes);
    FAIL("a legacy default-queue build must refuse graph replay");
  } catch (const std::runtime_error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("per-thread default queue") != std::string::npos);
  }
#endif
  gpu().synchronize();  // the device is still usable
}

#endif  // HARNESS_WITH_GPU
