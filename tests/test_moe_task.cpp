// moe_mxfp4 problem definition: shapes, specs, generation (determinism, statistics, routing,
// quantization, shuffles), cost, and the cpu variant against the float64 oracle on small shapes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "harness/problem.hpp"
#include "problems/moe_mxfp4/generate.h"
#include "problems/moe_mxfp4/oracle.hpp"
#include "problems/moe_mxfp4/task.hpp"
#include "reference/mxfp4.hpp"
#include "reference/numerics.hpp"
#include "reference/philox.hpp"
#include "tests/catch.hpp"

namespace {

// Small shapes like the golden configs (d_hidden 256/512, d_expert 256).
harness::ShapeCase small_a() { return moe_task::make_shape(256, 256, 6, 3, 9, 404); }
harness::ShapeCase small_b() { return moe_task::make_shape(512, 256, 8, 2, 5, 2291); }

const harness::Problem& problem() {
  const auto* p = harness::find_problem("moe_mxfp4");
  REQUIRE(p != nullptr);
  return *p;
}

// Independent float64 routing of one token, from the draws themselves.
std::vector<double> reference_logits(const MoeConfig& c, uint64_t seed, const uint16_t* hidden_row) {
  const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d_hidden)));
  std::vector<double> logits(c.n_routed_experts, 0.0);
  for (int e = 0; e < c.n_routed_experts; ++e)
    for (int d = 0; d < c.d_hidden; ++d) {
      const float r = numerics::bf16_to_f32(numerics::normal_bf16(seed, 1, static_cast<uint64_t>(e) * c.d_hidden + d));
      logits[e] += double(numerics::bf16_to_f32(hidden_row[d])) * numerics::bf16_to_f32(numerics::f32_to_bf16(r * inv));
    }
  return logits;
}

struct Err { double rel_l2 = 0, max_abs = 0; int64_t mismatches = 0; };

Err compare_to_oracle(const std::vector<double>& oracle, const std::vector<uint16_t>& out) {
  Err r;
  double num = 0, den = 0;
  for (size_t i = 0; i < oracle.size(); ++i) {
    const double x = numerics::bf16_to_f32(out[i]), y = oracle[i], d = std::fabs(x - y);
    if (!(d <= 5e-2 + 5e-2 * std::fabs(y))) ++r.mismatches;
    num += d * d;
    den += y * y;
    r.max_abs = std::max(r.max_abs, d);
  }
  r.rel_l2 = std::sqrt(num / den);
  return r;
}

std::vector<uint16_t> run_cpu(const harness::ShapeCase& s, harness::HostInputs& in) {
  const auto* v = harness::find_variant("moe_mxfp4", "cpu");
  REQUIRE(v != nullptr);
  const auto& p = problem();
  std::vector<uint16_t> out(p.output_spec(s).numel(), 0x7FC0);
  std::vector<uint8_t> ws(p.workspace_bytes(*v, s));
  p.invoke(*v, s, moe_task::pointers_of(in), out.data(), ws.data(), ws.size());
  return out;
}

}  // namespace

TEST_CASE("moe task: shapes, tolerance and input specs follow the spec") {
  const auto& p = problem();
  const auto tests = p.test_shapes();
  const auto benches = p.benchmark_shapes();
  REQUIRE(tests.size() == 3);
  REQUIRE(benches.size() == 7);
  CHECK(tests[2].label() == "d_hidden=4096 d_expert=1536 n_routed=64 k=6 bs=128");
  CHECK(tests[2].seed == 81934);
  for (const auto& b : benches) {
    CHECK(b.get("d_hidden") == 7168);
    CHECK(b.official_reference_us.has_value());
  }
  CHECK(benches[6].get("d_expert") == 2048);
  CHECK(*benches[6].official_reference_us == 380.4);
  const auto tol = p.tolerance();
  CHECK(tol.rtol == 5e-2);
  CHECK(tol.atol == 5e-2);
  CHECK(tol.max_mismatch_fraction == 0.0);

  const auto specs = p.input_specs(benches[0]);
  const std::vector<std::string> names = {"hidden_states", "gate_up_weight", "down_weight", "gate_up_weight_scale",
                                          "down_weight_scale", "gate_up_weight_shuffled", "down_weight_shuffled",
                                          "gate_up_weight_scale_shuffled", "down_weight_scale_shuffled",
                                          "topk_weights", "topk_ids"};
  REQUIRE(specs.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) CHECK(specs[i].name == names[i]);
  CHECK(specs[1].shape == std::vector<int64_t>{257, 512, 3584});
  CHECK(specs[3].shape == std::vector<int64_t>{257 * 512, 224});
  CHECK(specs[8].shape == std::vector<int64_t>{257 * 7168, 8});
  CHECK(specs[10].shape == std::vector<int64_t>{16, 9});
  CHECK(p.output_spec(benches[0]).shape == std::vector<int64_t>{16, 7168});
}

TEST_CASE("moe task: command-line shapes are checked, the spec's always pass") {
  const auto& p = problem();
  for (const auto& s : p.test_shapes()) CHECK(p.shape_error(s).empty());
  for (const auto& s : p.benchmark_shapes()) CHECK(p.shape_error(s).empty());
  CHECK(p.shape_error(small_a()).empty());
  CHECK(p.shape_error(moe_task::make_shape(7168, 300, 32, 8, 16, 1)) == "d_hidden and d_expert must be multiples of 256");
  CHECK(p.shape_error(moe_task::make_shape(0, 256, 32, 8, 16, 1)) == "d_hidden and d_expert must be multiples of 256");
  CHECK(p.shape_error(moe_task::make_shape(7168, 256, 4, 8, 16, 1)) == "k must be in 1..n_routed");
  CHECK(p.shape_error(moe_task::make_shape(7168, 256, 32, 8, 0, 1)) == "bs must be in 1..65536");
  CHECK(p.shape_error(moe_task::make_shape(7168, 2048, 1024, 8, 16, 1)).find("40 GB") != std::string::npos);
}

TEST_CASE("moe task: cost model follows roofline.md") {
  const auto& p = problem();
  const auto b = p.benchmark_shapes()[3];  // d_expert 512, E 33, bs 16
  const MoeConfig c = moe_task::config_of(b);
  const double touched = 1 + 32 * (1 - std::pow(1 - 8.0 / 32, 16));
  CHECK(std::fabs(moe_task::expected_touched_experts(c) - touched) < 1e-12);
  const auto cost = p.cost(b, {});
  const double weights = touched * 1.59375 * 512 * 7168;
  CHECK(cost.bytes > weights);
  CHECK(cost.bytes < weights * 1.01);
  CHECK(cost.flops == 2.0 * 16 * 9 * 3 * 512 * 7168);
}

TEST_CASE("moe task: generation is deterministic and seed-dependent") {
  const auto& p = problem();
  const auto s = small_a();
  const auto a = p.generate(s, 11), b = p.generate(s, 11), c = p.generate(s, 12);
  REQUIRE(a.tensors.size() == 11);
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    INFO(a.tensors[i].spec.name);
    CHECK(a.tensors[i].data == b.tensors[i].data);
    CHECK(a.tensors[i].spec.bytes() == a.tensors[i].data.size());
  }
  for (const char* name : {"hidden_states", "gate_up_weight", "down_weight", "topk_weights"}) {
    INFO(name);
    CHECK(a.at(name).data != c.at(name).data);
  }
}

TEST_CASE("moe task: hidden states are standard normal bf16") {
  const auto s = moe_task::make_shape(512, 256, 6, 3, 64, 7);
  const auto in = problem().generate(s, 7);
  const auto& h = in.at("hidden_states");
  const int64_t n = h.spec.numel();
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = numerics::bf16_to_f32(h.as<uint16_t>()[i]);
    REQUIRE(std::isfinite(x));
    sum += x;
    sq += x * x;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  CHECK(std::fabs(mean) < 0.03);
  CHECK(std::fabs(sd - 1.0) < 0.03);
}

TEST_CASE("moe task: routing is top-k of softmax(hidden @ router^T), shared expert last") {
  for (const auto& s : {small_a(), small_b()}) {
    const MoeConfig c = moe_task::config_of(s);
    const auto in = problem().generate(s, s.seed);
    const auto* w = in.at("topk_weights").as<float>();
    const auto* ids = in.at("topk_ids").as<int32_t>();
    const auto* hidden = in.at("hidden_states").as<uint16_t>();
    const int T = c.total_top_k, k = c.n_experts_per_token;
    for (int t = 0; t < c.bs; ++t) {
      const auto logits = reference_logits(c, s.seed, hidden + t * c.d_hidden);
      double mx = *std::max_element(logits.begin(), logits.end()), denom = 0;
      for (double l : logits) denom += std::exp(l - mx);
      std::vector<int> order(c.n_routed_experts);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
      std::set<int> seen;
      double routed_sum = 0;
      for (int j = 0; j < k; ++j) {
        CHECK(ids[t * T + j] == order[j]);
        seen.insert(ids[t * T + j]);
        const double expect = std::exp(logits[order[j]] - mx) / denom;
        CHECK(std::fabs(w[t * T + j] - expect) <= 2e-7 * expect);
        CHECK(w[t * T + j] > 0.0f);
        routed_sum += w[t * T + j];
      }
      CHECK(seen.size() == static_cast<size_t>(k));
      CHECK(routed_sum < 1.0);
      CHECK(ids[t * T + k] == c.n_routed_experts);
      CHECK(w[t * T + k] == 1.0f);
    }
  }
}

TEST_CASE("moe task: exp used by the routing softmax is accurate") {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const double x = std::max(-700.0, -700.0 * i / 200000.0 - 1e-3 * (i % 7));
    const double ref = std::exp(x);
    worst = std::max(worst, std::fabs(moe_gen::exp_nonpositive(x) - ref) / ref);
  }
  CHECK(worst < 1e-15);
  CHECK(moe_gen::exp_nonpositive(0.0) == 1.0);
  CHECK(moe_gen::exp_nonpositive(-800.0) == 0.0);
}

TEST_CASE("moe task: weights are the per-1x32 quantization of the scaled draws") {
  const auto s = small_b();
  const MoeConfig c = moe_task::config_of(s);
  const auto in = problem().generate(s, s.seed);
  const int64_t E = moe_task::num_experts(c), H = c.d_hidden, I = c.d_expert;
  struct W { const char* name; uint32_t id; int64_t n, k; };
  for (const W& w : {W{"gate_up_weight", 2, 2 * I, H}, W{"down_weight", 3, H, I}}) {
    const std::string name = w.name;
    INFO(name);
    const int64_t count = E * w.n * w.k;
    const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(w.k)));
    std::vector<float> x(count);
    for (int64_t i = 0; i < count; ++i) x[i] = numerics::bf16_to_f32(numerics::normal_bf16(s.seed, w.id, i)) * inv;
    std::vector<uint8_t> packed(count / 2), scales(count / 32);
    numerics::quantize_mxfp4_per1x32_rows(x.data(), E * w.n, w.k, packed.data(), scales.data(), w.k / 32);
    CHECK(packed == in.at(name).data);
    CHECK(scales == in.at(name + "_scale").data);

    // Dequantized weights stay close to the draws (MXFP4 error, not garbage).
    double num = 0, den = 0;
    for (int64_t i = 0; i < count; ++i) {
      const uint8_t byte = packed[i / 2];
      const double q = numerics::e2m1_to_f32(i % 2 ? byte >> 4 : byte & 0xF) * numerics::e8m0_to_f32(scales[i / 32]);
      num += (q - x[i]) * (q - x[i]);
      den += double(x[i]) * x[i];
    }
    CHECK(std::sqrt(num / den) < 0.2);
    CHECK(std::sqrt(num / den) > 0.01);

    std::vector<uint8_t> unshuffled(packed.size()), unshuffled_s(scales.size());
    numerics::unshuffle_weight_16x16(in.at(name + "_shuffled").as<uint8_t>(), unshuffled.data(), E, w.n, w.k / 2);
    CHECK(unshuffled == packed);
    numerics::unshuffle_scales(in.at(name + "_scale_shuffled").as<uint8_t>(), E * w.n, w.k / 32, unshuffled_s.data());
    CHECK(unshuffled_s == scales);
  }
}

TEST_CASE("moe task: cpu variant matches the float64 oracle on generated inputs") {
  const auto& p = problem();
  for (const auto& s : {small_a(), small_b()}) {
    auto in = p.generate(s, s.seed);
    const auto oracle = p.oracle(s, in);
    const auto out = run_cpu(s, in);
    const Err e = compare_to_oracle(oracle, out);
    std::printf("moe generated %s: cpu vs oracle rel_l2 %.3e max_abs %.3e mismatches %lld\n", s.label().c_str(),
                e.rel_l2, e.max_abs, static_cast<long long>(e.mismatches));
    CHECK(e.mismatches == 0);
    CHECK(e.rel_l2 < p.strict_rel_l2_limit({}));
    double norm = 0;
    for (double v : oracle) norm += v * v;
    CHECK(std::sqrt(norm / oracle.size()) > 0.01);  // a real signal, not zeros
  }
}

TEST_CASE("moe task: the check catches a variant that skips the shared expert") {
  const auto& p = problem();
  const auto s = small_a();
  auto in = p.generate(s, s.seed);
  const auto oracle = p.oracle(s, in);
  const MoeConfig c = moe_task::config_of(s);
  auto* w = in.at("topk_weights").as<float>();
  for (int t = 0; t < c.bs; ++t) w[t * c.total_top_k + c.n_experts_per_token] = 0.0f;
  const Err e = compare_to_oracle(oracle, run_cpu(s, in));
  CHECK(e.mismatches > 0);
  CHECK(e.rel_l2 > p.strict_rel_l2_limit({}));
}

#if defined(HARNESS_WITH_GPU)
#include <chrono>

#include "harness/device.hpp"

namespace {

harness::Device& moe_gpu() {
  static std::unique_ptr<harness::Device> d = harness::make_gpu_device(0);
  return *d;
}

struct DeviceInputs {
  std::vector<harness::DeviceBuffer> buffers;
  harness::TensorPtrs ptrs;
  DeviceInputs(const harness::Problem& p, const harness::ShapeCase& s) {
    for (const auto& spec : p.input_specs(s)) {
      buffers.emplace_back(moe_gpu(), spec.bytes());
      moe_gpu().fill(buffers.back().get(), 0xa5, spec.bytes());
      ptrs[spec.name] = buffers.back().get();
    }
  }
};

}  // namespace

TEST_CASE("moe task: GPU generation of the largest benchmark shapes takes well under a second") {
  const auto& p = problem();
  const auto benches = p.benchmark_shapes();
  for (const auto& s : {benches[2], benches[6]}) {  // E 257 / d_expert 256 and E 33 / d_expert 2048, bs 512
    DeviceInputs d(p, s);
    moe_gpu().generate_inputs(p, s, s.seed, d.ptrs);  // warm-up (module load)
    const auto t0 = std::chrono::steady_clock::now();
    moe_gpu().generate_inputs(p, s, s.seed + 1, d.ptrs);
    moe_gpu().synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("moe GPU generation %s: %.1f ms\n", s.label().c_str(), seconds * 1e3);
    CHECK(seconds < 0.5);
    // Routing sanity on the device output: shared expert last with weight 1, routed ids distinct.
    const MoeConfig c = moe_task::config_of(s);
    std::vector<int32_t> ids(int64_t{c.bs} * c.total_top_k);
    std::vector<float> w(ids.size());
    moe_gpu().download(ids.data(), d.ptrs.at("topk_ids"), ids.size() * 4);
    moe_gpu().download(w.data(), d.ptrs.at("topk_weights"), w.size() * 4);
    for (int t = 0; t < c.bs; ++t) {
      std::set<int> seen(ids.begin() + t * c.total_top_k, ids.begin() + t * c.total_top_k + c.n_experts_per_token);
      CHECK(seen.size() == static_cast<size_t>(c.n_experts_per_token));
      CHECK(*seen.rbegin() < c.n_routed_experts);
      CHECK(ids[t * c.total_top_k + c.n_experts_per_token] == c.n_routed_experts);
      CHECK(w[t * c.total_top_k + c.n_experts_per_token] == 1.0f);
    }
  }
}

// Slow on the host (1.5e9 weight draws): run explicitly with "[moe-gpu-slow]".
TEST_CASE("moe task: GPU generation equals host generation on an official test shape", "[.][moe-gpu-slow]") {
  const auto& p = problem();
  const auto s = p.test_shapes()[1];  // d_hidden 7168, d_expert 2048, E 33, bs 32
  const auto host = p.generate(s, s.seed);
  DeviceInputs d(p, s);
  moe_gpu().generate_inputs(p, s, s.seed, d.ptrs);
  for (const auto& t : host.tensors) {
    std::vector<uint8_t> dev(t.data.size());
    moe_gpu().download(dev.data(), d.ptrs.at(t.spec.name), dev.size());
    size_t differing = 0;
    for (size_t i = 0; i < dev.size(); ++i) differing += dev[i] != t.data[i];
    INFO(t.spec.name << ": " << differing << " of " << dev.size() << " bytes differ");
    CHECK(differing == 0);
  }
}
#endif

TEST_CASE("moe task: the strict limit catches a variant that drops each token's weakest routed expert") {
  const auto& p = problem();
  const auto s = moe_task::make_shape(256, 256, 64, 6, 8, 81934);  // routing like test shape 3
  auto in = p.generate(s, s.seed);
  const auto oracle = p.oracle(s, in);
  const MoeConfig c = moe_task::config_of(s);
  auto* w = in.at("topk_weights").as<float>();
  double dropped = 0;
  for (int t = 0; t < c.bs; ++t) {
    dropped = std::max<double>(dropped, w[t * c.total_top_k + c.n_experts_per_token - 1]);
    w[t * c.total_top_k + c.n_experts_per_token - 1] = 0.0f;
  }
  const Err e = compare_to_oracle(oracle, run_cpu(s, in));
  std::printf("moe: dropping the weakest routed expert (weight <= %.3f): rel_l2 %.3e, official mismatches %lld\n",
              dropped, e.rel_l2, static_cast<long long>(e.mismatches));
  CHECK(e.rel_l2 > p.strict_rel_l2_limit({}));
}
