// moe_mxfp4 against the golden vectors produced by the official code: input layouts, shuffles, the
// float64 oracle and the cpu variant against the official a4w4 reference output.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/problem.hpp"
#include "problems/moe_mxfp4/generate.h"
#include "problems/moe_mxfp4/oracle.hpp"
#include "problems/moe_mxfp4/task.hpp"
#include "reference/mxfp4.hpp"
#include "reference/numerics.hpp"
#include "tests/catch.hpp"

namespace {

const char* kCases[] = {"moe_h256_e256_r6_k3_bs9", "moe_h512_e256_r4_k2_bs5"};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

struct GoldenCase {
  MoeConfig cfg{};
  harness::ShapeCase shape;
  harness::HostInputs in;
  std::vector<uint16_t> out_reference;
};

GoldenCase load_case(const std::string& name) {
  const std::string dir = std::string(HARNESS_TEST_DATA_DIR) + "/golden/" + name + "/";
  const auto manifest = nlohmann::json::parse(read_bytes(dir + "manifest.json"));
  const auto& c = manifest["meta"]["config"];
  REQUIRE(c["n_shared_experts"].get<int>() == 1);
  GoldenCase g;
  auto param = [&](const char* key) { return c[key].get<int64_t>(); };
  g.shape = moe_task::make_shape(param("d_hidden"), param("d_expert"), param("n_routed_experts"),
                                 param("n_experts_per_token"), param("bs"), 0);
  g.cfg = moe_task::config_of(g.shape);
  REQUIRE(g.cfg.total_top_k == c["total_top_k"].get<int>());
  // Our declared specs must match the official tensors' shapes and sizes.
  for (const auto& spec : moe_task::input_specs(g.cfg)) {
    const auto& t = manifest["tensors"][spec.name];
    REQUIRE(t["shape"].get<std::vector<int64_t>>() == spec.shape);
    harness::HostTensor h(spec);
    const auto bytes = read_bytes(dir + t["file"].get<std::string>());
    REQUIRE(bytes.size() == h.data.size());
    h.data = bytes;
    g.in.tensors.push_back(std::move(h));
  }
  const auto out = read_bytes(dir + "out_reference.bin");
  REQUIRE(out.size() == static_cast<size_t>(g.cfg.bs) * g.cfg.d_hidden * 2);
  g.out_reference.resize(out.size() / 2);
  std::memcpy(g.out_reference.data(), out.data(), out.size());
  return g;
}

struct Comparison {
  int64_t mismatches = 0, bf16_equal = 0;
  double rel_l2 = 0, max_abs = 0;
};

// Official check (|out - ref| <= 5e-2 + 5e-2 |ref|, NaN fails) plus relative L2 and max abs error.
template <class Get>
Comparison compare(const std::vector<uint16_t>& ref, Get out) {
  Comparison r;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double x = out(i), y = numerics::bf16_to_f32(ref[i]);
    const double d = std::fabs(x - y);
    if (!(d <= 5e-2 + 5e-2 * std::fabs(y))) ++r.mismatches;
    if (numerics::f64_to_bf16(x) == ref[i]) ++r.bf16_equal;
    num += d * d;
    den += y * y;
    r.max_abs = std::max(r.max_abs, d);
  }
  r.rel_l2 = std::sqrt(num / den);
  return r;
}

}  // namespace

TEST_CASE("moe golden: official shuffled layouts equal our shuffles of the raw tensors") {
  for (const char* name : kCases) {
    GoldenCase g = load_case(name);
    const int64_t E = moe_task::num_experts(g.cfg), H = g.cfg.d_hidden, I = g.cfg.d_expert;
    struct W { const char* name; int64_t n, k; };
    for (const W& w : {W{"gate_up_weight", 2 * I, H}, W{"down_weight", H, I}}) {
      const std::string base = w.name;
      const auto& raw = g.in.at(base);
      const auto& shuffled = g.in.at(base + "_shuffled");
      std::vector<uint8_t> ours(raw.data.size());
      numerics::shuffle_weight_16x16(raw.as<uint8_t>(), ours.data(), E, w.n, w.k / 2);
      CHECK(ours == shuffled.data);
      // The GPU generator's per-byte offsets give the same layout.
      std::vector<uint8_t> by_offset(raw.data.size());
      const int64_t kb = w.k / 2;
      for (int64_t e = 0; e < E; ++e)
        for (int64_t n = 0; n < w.n; ++n)
          for (int64_t b = 0; b < kb; ++b)
            by_offset[e * w.n * kb + moe_gen::shuffled_weight_offset(n, b, kb)] = raw.data[(e * w.n + n) * kb + b];
      CHECK(by_offset == shuffled.data);

      const auto& scales = g.in.at(base + "_scale");
      const auto& scales_sh = g.in.at(base + "_scale_shuffled");
      std::vector<uint8_t> ours_s(scales_sh.data.size());
      numerics::shuffle_scales(scales.as<uint8_t>(), E * w.n, w.k / 32, ours_s.data());
      CHECK(ours_s == scales_sh.data);
      std::vector<uint8_t> by_offset_s(scales_sh.data.size(), 0);
      const int64_t cols = w.k / 32, padded_cols = scales_sh.spec.shape[1];
      for (int64_t r = 0; r < E * w.n; ++r)
        for (int64_t c = 0; c < cols; ++c)
          by_offset_s[moe_gen::shuffled_scale_offset(r, c, padded_cols)] = scales.data[r * cols + c];
      CHECK(by_offset_s == scales_sh.data);
    }
  }
}

TEST_CASE("moe golden: float64 oracle matches the official a4w4 reference") {
  for (const char* name : kCases) {
    GoldenCase g = load_case(name);
    const auto* p = harness::find_problem("moe_mxfp4");
    REQUIRE(p != nullptr);
    const auto oracle = p->oracle(g.shape, g.in);
    REQUIRE(oracle.size() == g.out_reference.size());
    const Comparison r = compare(g.out_reference, [&](size_t i) { return oracle[i]; });
    std::printf("moe golden %s: oracle vs official: rel_l2 %.3e, max_abs %.3e, bf16-equal %lld/%zu, mismatches %lld\n",
                name, r.rel_l2, r.max_abs, static_cast<long long>(r.bf16_equal), g.out_reference.size(),
                static_cast<long long>(r.mismatches));
    CHECK(r.mismatches == 0);
    CHECK(r.rel_l2 < p->strict_rel_l2_limit({}));
  }
}

TEST_CASE("moe golden: cpu variant matches the official a4w4 reference") {
  const auto* p = harness::find_problem("moe_mxfp4");
  const auto* v = harness::find_variant("moe_mxfp4", "cpu");
  REQUIRE(p != nullptr);
  REQUIRE(v != nullptr);
  for (const char* name : kCases) {
    GoldenCase g = load_case(name);
    std::vector<uint16_t> out(g.out_reference.size(), 0x7FC0);  // NaN-filled: unwritten elements fail
    std::vector<uint8_t> ws(p->workspace_bytes(*v, g.shape));
    p->invoke(*v, g.shape, moe_task::pointers_of(g.in), out.data(), ws.data(), ws.size());
    const Comparison r = compare(g.out_reference, [&](size_t i) { return numerics::bf16_to_f32(out[i]); });
    std::printf("moe golden %s: cpu vs official: rel_l2 %.3e, max_abs %.3e, bf16-equal %lld/%zu, mismatches %lld\n",
                name, r.rel_l2, r.max_abs, static_cast<long long>(r.bf16_equal), g.out_reference.size(),
                static_cast<long long>(r.mismatches));
    CHECK(r.mismatches == 0);
    CHECK(r.rel_l2 < p->strict_rel_l2_limit({}));
  }
}
