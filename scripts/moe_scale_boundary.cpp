// Which SwiGLU blocks of one moe_mxfp4 token sit on the requantization's scale boundary?
//
// The reference rounds silu(g) * u to bf16 and requantizes each block of 32 to MXFP4 with the dynamic
// scale rule (numerics::mxfp4_dynamic_scale_exp): a block whose largest value is 1.75 * 2^e gets scale
// 2^(e - 1), one whose largest value is the bf16 just below gets 2^(e - 2), and the whole block's codes
// change with it (the largest value goes from 4 * 2^(e - 1) to the saturated 6 * 2^(e - 2)). A kernel whose
// fp32 g or u differs from the reference's by a few units in the last place can round that one value to
// the other side and change the block's scale: an output error of ~0.1 on the token, enough to fail the
// official check. This tool recomputes one token's SwiGLU values exactly (double) from the generator and
// lists the blocks whose largest value lies within `rel` (relative) of the bf16 rounding midpoint that
// decides the scale. docs/perf.md, section "Session 10, fresh-seed failures", has the measurements.
//
// Build and run on the CPU (a minute for d_expert 2048):
//   g++ -O2 -std=c++20 -I. scripts/moe_scale_boundary.cpp -o /tmp/moe_scale_boundary
//   /tmp/moe_scale_boundary <d_hidden> <d_expert> <n_routed> <k> <shape seed> <secret seed or 0> <token> [rel]
// e.g. benchmark shape 6 with --secret-seed 2147483647, token 11: 7168 2048 32 8 81934 2147483647 11
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "problems/moe_mxfp4/generate.h"

namespace {
using namespace numerics;

uint64_t cantor_pair(uint64_t a, uint64_t b) {  // as harness/seeds.cpp
  const uint64_t n = a + b;
  const uint64_t tri = (n % 2 == 0) ? (n / 2) * (n + 1) : n * ((n + 1) / 2);
  return a + tri;
}

// The hidden row after the reference's MXFP4 quantize-dequantize.
std::vector<float> quantized_hidden(uint64_t seed, int H, int token) {
  std::vector<float> x(H), xq(H);
  for (int k = 0; k < H; ++k) x[k] = bf16_to_f32(moe_gen::hidden_bits(seed, uint64_t(token) * H + k));
  for (int b = 0; b < H / 32; ++b) {
    uint8_t packed[16], scale;
    quantize_block32_dynamic(&x[b * 32], packed, &scale);
    const float s = e8m0_to_f32(scale);
    for (int i = 0; i < 16; ++i) {
      xq[b * 32 + 2 * i] = e2m1_to_f32(packed[i] & 15) * s;
      xq[b * 32 + 2 * i + 1] = e2m1_to_f32(packed[i] >> 4) * s;
    }
  }
  return xq;
}

// The two bf16 values around a positive x (bf16 bit patterns order like the values) and x's distance from their
// midpoint, relative.
struct Around {
  float below, above;
  double mid, dist;
};
Around around(double x) {
  const float f = static_cast<float>(x);
  const uint16_t r = f32_to_bf16(f);
  const float below = bf16_to_f32(r) <= f ? bf16_to_f32(r) : bf16_to_f32(uint16_t(r - 1));
  const float above = bf16_to_f32(uint16_t(f32_to_bf16(below) + 1));
  const double mid = 0.5 * (double(below) + double(above));
  return {below, above, mid, (x - mid) / mid};
}

// Exact dot product of xq with gate_up row `row` (MXFP4 as generated).
double gate_up_dot(uint64_t seed, const std::vector<float>& xq, int64_t row, int H) {
  const float inv = moe_gen::inv_sqrt_f32(H);
  double acc = 0.0;
  for (int b = 0; b < H / 32; ++b) {
    uint8_t packed[16], scale;
    moe_gen::weight_block(seed, moe_gen::kGateUp, uint64_t(row * H) / 32 + b, inv, packed, &scale);
    const double s = e8m0_to_f32(scale);
    for (int i = 0; i < 16; ++i)
      acc += (double(xq[b * 32 + 2 * i]) * e2m1_to_f32(packed[i] & 15) +
              double(xq[b * 32 + 2 * i + 1]) * e2m1_to_f32(packed[i] >> 4)) * s;
  }
  return acc;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s d_hidden d_expert n_routed k shape_seed secret_seed(0: none) token [rel]\n", argv[0]);
    return 2;
  }
  const int H = std::atoi(argv[1]), I = std::atoi(argv[2]), E = std::atoi(argv[3]), K = std::atoi(argv[4]);
  const uint64_t shape_seed = std::strtoull(argv[5], nullptr, 10), secret = std::strtoull(argv[6], nullptr, 10);
  const int token = std::atoi(argv[7]);
  const double rel = argc > 8 ? std::atof(argv[8]) : 2e-4;
  if (H <= 0 || H % 32 || I <= 0 || I % 32 || E <= 0 || K <= 0 || K > E || token < 0 || !(rel > 0)) {
    std::fprintf(stderr, "moe_scale_boundary: need d_hidden, d_expert > 0 multiples of 32, 1 <= k <= n_routed, "
                         "token >= 0, rel > 0\n");
    return 2;
  }
  const uint64_t seed = secret ? cantor_pair(shape_seed, secret) : shape_seed;

  const std::vector<float> xq = quantized_hidden(seed, H, token);
  std::vector<uint16_t> hidden(H), router(H);
  for (int k = 0; k < H; ++k) hidden[k] = moe_gen::hidden_bits(seed, uint64_t(token) * H + k);
  std::vector<double> logits(E);
  for (int e = 0; e < E; ++e) {
    for (int k = 0; k < H; ++k) router[k] = moe_gen::router_bits(seed, uint64_t(e) * H + k, moe_gen::inv_sqrt_f32(H));
    logits[e] = moe_gen::routing_logit(hidden.data(), router.data(), H);
  }
  std::vector<float> weights(K + 1);
  std::vector<int32_t> ids(K + 1);
  moe_gen::route_token(logits.data(), E, K, weights.data(), ids.data());

  int found = 0;
  for (int j = 0; j <= K; ++j) {
    const int64_t e = ids[j];
    std::printf("slot %d: expert %lld, weight %.5f\n", j, static_cast<long long>(e), weights[j]);
    for (int b = 0; b < I / 32; ++b) {
      double v[32], top = 0.0;  // the block's silu(g) u, exact, and its largest |value|
      for (int i = 0; i < 32; ++i) {
        const int64_t n = b * 32 + i;
        const double g = gate_up_dot(seed, xq, e * 2 * I + n, H), u = gate_up_dot(seed, xq, e * 2 * I + I + n, H);
        v[i] = g / (1.0 + std::exp(-g)) * u;
        top = std::max(top, std::fabs(v[i]));
      }
      // The block's scale: decided by the rounding of its largest value when the two bf16 values around it give
      // different scales.
      const Around t = around(top);
      if (std::fabs(t.dist) <= rel && mxfp4_dynamic_scale_exp(t.below) != mxfp4_dynamic_scale_exp(t.above)) {
        ++found;
        std::printf("  block %d: SCALE, largest |value| %.9g is %+.2e from the bf16 midpoint %.9g (scale 2^%d below, "
                    "2^%d above)\n", b, top, t.dist, t.mid, mxfp4_dynamic_scale_exp(t.below),
                    mxfp4_dynamic_scale_exp(t.above));
      }
      // One value's e2m1 code: decided by its bf16 rounding when the two bf16 values around it give different codes.
      const float scale = exp2_f32(mxfp4_dynamic_scale_exp(bf16_to_f32(f32_to_bf16(static_cast<float>(top)))));
      for (int i = 0; i < 32; ++i) {
        const Around a = around(std::fabs(v[i]));
        const float lo = e2m1_to_f32(f32_to_e2m1_ties_away(a.below / scale));
        const float hi = e2m1_to_f32(f32_to_e2m1_ties_away(a.above / scale));
        if (std::fabs(a.dist) > rel || lo == hi) continue;
        ++found;
        std::printf("  block %d, value %d: CODE, |value| %.9g is %+.2e from the bf16 midpoint %.9g (%g or %g x %g: "
                    "%.3g on the output scale of this slot)\n", b, i, std::fabs(v[i]), a.dist, a.mid, lo, hi, scale,
                    (hi - lo) * scale * weights[j]);
      }
    }
  }
  std::printf("%d decision(s) within %.1e of a bf16 rounding midpoint\n", found, rel);
  return 0;
}
