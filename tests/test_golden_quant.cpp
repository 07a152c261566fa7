// End-to-end quantization against the official code's outputs (tests/data/golden/mla_*, moe_*):
// the MLA per-tensor fp8 (bf16 arithmetic, see numerics::fp8_per_tensor_code) and dynamic MXFP4
// KV formats, and the MoE weight/scale shuffles.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/mxfp4.hpp"
#include "reference/numerics.hpp"
#include "tests/catch.hpp"
#include "tests/golden_io.hpp"

using namespace numerics;

namespace {

const char* const kMlaCases[] = {"mla_bs2_kv64", "mla_bs3_kv300"};
const char* const kMoeCases[] = {"moe_h512_e256_r4_k2_bs5", "moe_h256_e256_r6_k3_bs9"};

std::vector<float> bf16_tensor_to_f32(const golden::GoldenTensor& t) {
  std::vector<float> out;
  for (uint16_t b : t.as<uint16_t>()) out.push_back(bf16_to_f32(b));
  return out;
}

float amax_of(const std::vector<float>& x) {
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  return amax;
}

void quantize_fp8_per_tensor(const std::vector<float>& x, std::vector<uint8_t>& codes, float& scale) {
  scale = fp8_per_tensor_scale(amax_of(x));
  codes.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) codes[i] = fp8_per_tensor_code(x[i], scale);
}

// The spec's literal fp32 wording (no bf16 roundings), kept to show that the golden data tells them apart.
void quantize_fp8_per_tensor_fp32(const std::vector<float>& x, std::vector<uint8_t>& codes) {
  const float scale = std::max(amax_of(x), 1e-12f) / 448.0f;
  codes.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) codes[i] = f32_to_fp8_e4m3fn(std::clamp(x[i] / scale, -448.0f, 448.0f));
}

int count_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return -1;
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

TEST_CASE("golden MLA: per-tensor fp8 KV and its scale are bit-exact") {
  for (const char* name : kMlaCases) {
    const golden::GoldenCase c = golden::load_golden(golden::golden_path(name));
    const std::vector<float> kv = bf16_tensor_to_f32(c.at("kv_bf16"));
    REQUIRE(kv.size() > 0);
    std::vector<uint8_t> codes;
    float scale = 0.0f;
    quantize_fp8_per_tensor(kv, codes, scale);
    const float want_scale = c.at("kv_fp8_scale").as<float>().at(0);
    CHECK(f32_bits(scale) == f32_bits(want_scale));
    CHECK(std::string(name) + " fp8 mismatches " + std::to_string(count_diff(codes, c.at("kv_fp8").bytes)) ==
          std::string(name) + " fp8 mismatches 0");
    CHECK(f32_bits(scale) == f32_bits(c.meta.at("kv_fp8_scale_f32").get<float>()));
    // Without the bf16 roundings many codes differ: the golden data discriminates the two readings.
    std::vector<uint8_t> fp32_codes;
    quantize_fp8_per_tensor_fp32(kv, fp32_codes);
    CHECK(count_diff(fp32_codes, c.at("kv_fp8").bytes) > static_cast<int>(kv.size() / 100));
  }
}

TEST_CASE("golden MLA: the fp8 q of the official reference follows the same per-tensor rule") {
  for (const char* name : kMlaCases) {
    const golden::GoldenCase c = golden::load_golden(golden::golden_path(name));
    std::vector<uint8_t> codes;
    float scale = 0.0f;
    quantize_fp8_per_tensor(bf16_tensor_to_f32(c.at("q")), codes, scale);
    CHECK(f32_bits(scale) == f32_bits(c.meta.at("q_fp8_scale_f32").get<float>()));
    CHECK(count_diff(codes, c.at("q_fp8").bytes) == 0);
  }
}

TEST_CASE("golden MLA: dynamic MXFP4 KV (576 columns) and padded 256-row x 24 scales are bit-exact") {
  for (const char* name : kMlaCases) {
    const golden::GoldenCase c = golden::load_golden(golden::golden_path(name));
    const std::vector<float> kv = bf16_tensor_to_f32(c.at("kv_bf16"));
    const int64_t cols = 576, rows = static_cast<int64_t>(kv.size()) / cols;
    const golden::GoldenTensor& want_scale = c.at("kv_mxfp4_scale");
    REQUIRE(want_scale.shape.size() == 2);
    const int64_t stride = want_scale.shape[1];
    CHECK(stride == 24);
    CHECK(want_scale.shape[0] == pad_to(rows, 256));
    std::vector<uint8_t> packed(static_cast<size_t>(rows * cols / 2));
    std::vector<uint8_t> scales(static_cast<size_t>(want_scale.shape[0] * stride), 0);
    quantize_mxfp4_dynamic_rows(kv.data(), rows, cols, packed.data(), scales.data(), stride);
    CHECK(std::string(name) + " packed mismatches " + std::to_string(count_diff(packed, c.at("kv_mxfp4").bytes)) ==
          std::string(name) + " packed mismatches 0");
    CHECK(std::string(name) + " scale mismatches " + std::to_string(count_diff(scales, want_scale.bytes)) ==
          std::string(name) + " scale mismatches 0");
  }
}

TEST_CASE("golden MoE: weight and scale shuffles match the official shuffled tensors; inverses round-trip") {
  for (const char* name : kMoeCases) {
    const golden::GoldenCase c = golden::load_golden(golden::golden_path(name));
    for (const std::string w : {"gate_up_weight", "down_weight"}) {
      const golden::GoldenTensor& raw = c.at(w);
      REQUIRE(raw.shape.size() == 3);
      const int64_t batch = raw.shape[0], n = raw.shape[1], kb = raw.shape[2];
      std::vector<uint8_t> sh(raw.bytes.size()), back(raw.bytes.size());
      shuffle_weight_16x16(raw.bytes.data(), sh.data(), batch, n, kb);
      CHECK(std::string(name) + " " + w + " mismatches " + std::to_string(count_diff(sh, c.at(w + "_shuffled").bytes)) ==
            std::string(name) + " " + w + " mismatches 0");
      CHECK(sh != raw.bytes);  // the shuffle is not the identity on this data
      unshuffle_weight_16x16(c.at(w + "_shuffled").bytes.data(), back.data(), batch, n, kb);
      CHECK(back == raw.bytes);

      const golden::GoldenTensor& s = c.at(w + "_scale");
      REQUIRE(s.shape.size() == 2);
      const int64_t m = s.shape[0], cols = s.shape[1];
      const golden::GoldenTensor& s_sh = c.at(w + "_scale_shuffled");
      REQUIRE(static_cast<int64_t>(s_sh.bytes.size()) == pad_to(m, 256) * pad_to(cols, 8));
      std::vector<uint8_t> ssh(s_sh.bytes.size()), sback(s.bytes.size());
      shuffle_scales(s.bytes.data(), m, cols, ssh.data());
      CHECK(std::string(name) + " " + w + " scale mismatches " + std::to_string(count_diff(ssh, s_sh.bytes)) ==
            std::string(name) + " " + w + " scale mismatches 0");
      CHECK(ssh != s.bytes);
      unshuffle_scales(s_sh.bytes.data(), m, cols, sback.data());
      CHECK(sback == s.bytes);
    }
  }
}
