// Per-element generation of the moe_mxfp4 inputs, shared by the host generator (task.cpp) and the
// GPU generator (gpu/generate.hip) so that both produce the same bits.
//
// Draws (normal_bf16(seed, tensor_id, flat_index)):
//   hidden   = draw(0, i)                                        bf16 [M, d_hidden]
//   router   = bf16(f32(draw(1, i)) * inv_sqrt(d_hidden))        bf16 [n_routed, d_hidden]
//   gate_up  = f32(draw(2, i)) * inv_sqrt(d_hidden)              fp32 [E, 2*d_expert, d_hidden], then MXFP4
//   down     = f32(draw(3, i)) * inv_sqrt(d_expert)              fp32 [E, d_hidden, d_expert], then MXFP4
// inv_sqrt(d) is the fp32 rounding of 1/sqrt(d) computed in double (correctly rounded everywhere).
//
// Routing: logits = hidden @ router^T summed in double in index order (products of two bf16 values
// are exact in double, so a fused multiply-add gives the same sum); top-k by logit (= top-k by
// softmax), ties to the lower expert id; weights = softmax in double with the exp below (basic
// IEEE operations and explicit fma only, so host and device agree bit for bit), rounded to fp32.
// The shared expert (id n_routed, weight 1.0) is the last column.
#pragma once
#include <math.h>

#include "problems/common/portability.h"
#include "reference/numerics.hpp"
#include "reference/philox.hpp"

namespace moe_gen {

enum TensorId : uint32_t { kHidden = 0, kRouter = 1, kGateUp = 2, kDown = 3 };

inline float inv_sqrt_f32(int d) { return static_cast<float>(1.0 / sqrt(static_cast<double>(d))); }

HD inline uint16_t hidden_bits(uint64_t seed, uint64_t i) { return numerics::normal_bf16(seed, kHidden, i); }

HD inline uint16_t router_bits(uint64_t seed, uint64_t i, float inv_sqrt_dh) {
  return numerics::f32_to_bf16(numerics::bf16_to_f32(numerics::normal_bf16(seed, kRouter, i)) * inv_sqrt_dh);
}

HD inline float weight_value(uint64_t seed, uint32_t tensor_id, uint64_t i, float inv_sqrt_k) {
  return numerics::bf16_to_f32(numerics::normal_bf16(seed, tensor_id, i)) * inv_sqrt_k;
}

// Quantizes the 32-element block `block` (flat element index block*32 .. +31, along K) of a weight
// tensor with the per-1x32 weight rule.
HD inline void weight_block(uint64_t seed, uint32_t tensor_id, uint64_t block, float inv_sqrt_k,
                            uint8_t* packed16, uint8_t* scale) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = weight_value(seed, tensor_id, block * 32 + j, inv_sqrt_k);
  numerics::quantize_block32_per1x32(x, packed16, scale);
}

// Offset within one expert's shuffled weight bytes of byte `kb` of row `n` ([N, k_bytes] view).
// Each 16-row x 32-byte tile is stored as its two 16x16 k-halves, each row-major.
HD inline int64_t shuffled_weight_offset(int64_t n, int64_t kb, int64_t k_bytes) {
  const int64_t tile = (n / 16) * (k_bytes / 32) + kb / 32;
  const int64_t half = (kb / 16) % 2;
  return ((tile * 2 + half) * 16 + n % 16) * 16 + kb % 16;
}

// Offset of scale (row, col) in the shuffled [pad256(rows), padded_cols] scale array.
HD inline int64_t shuffled_scale_offset(int64_t row, int64_t col, int64_t padded_cols) {
  const int64_t block = (row / 32) * (padded_cols / 8) + col / 8;
  const int64_t h = (row / 16) % 2, i = row % 16, k = (col / 4) % 2, j = col % 4;
  return block * 256 + ((j * 16 + i) * 2 + k) * 2 + h;
}

HD inline double routing_logit(const uint16_t* hidden_row, const uint16_t* router_row, int d_hidden) {
  double acc = 0.0;
  for (int d = 0; d < d_hidden; ++d)
    acc += static_cast<double>(numerics::bf16_to_f32(hidden_row[d])) *
           static_cast<double>(numerics::bf16_to_f32(router_row[d]));
  return acc;
}

// exp(x) for x <= 0 from IEEE basic operations and fma only: x = k*ln2 + r, |r| <= ln2/2,
// degree-13 Taylor polynomial (relative error < 1e-16), times 2^k.
HD inline double exp_nonpositive(double x) {
  if (x < -700.0) return 0.0;
  const double k = floor(x * 1.4426950408889634 + 0.5);
  double r = fma(-k, 6.93147180369123816490e-01, x);   // ln2 high part (exact product with k)
  r = fma(-k, 1.90821492927058770002e-10, r);          // ln2 low part
  double p = 1.0 / 6227020800.0;                       // 1/13!
  const double inv_fact[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                               1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
                               1.0 / 6.0, 0.5, 1.0, 1.0};
  for (int j = 0; j < 13; ++j) p = fma(p, r, inv_fact[j]);
  return ldexp(p, static_cast<int>(k));
}

// True if expert a ranks above expert b (higher logit, ties to the lower id).
HD inline bool ranks_above(double la, int a, double lb, int b) { return la > lb || (la == lb && a < b); }

// Routes one token from its n_routed logits: writes k routed (id, weight) pairs in rank order and
// the shared expert last (k + 1 entries each).
HD inline void route_token(const double* logits, int n_routed, int k, float* weights, int32_t* ids) {
  double max_logit = logits[0];
  for (int e = 1; e < n_routed; ++e) max_logit = logits[e] > max_logit ? logits[e] : max_logit;
  double denom = 0.0;
  for (int e = 0; e < n_routed; ++e) denom += exp_nonpositive(logits[e] - max_logit);
  int prev = -1;
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int e = 0; e < n_routed; ++e) {
      if (prev >= 0 && !ranks_above(logits[prev], prev, logits[e], e)) continue;  // already taken
      if (best < 0 || ranks_above(logits[e], e, logits[best], best)) best = e;
    }
    ids[j] = best;
    weights[j] = static_cast<float>(exp_nonpositive(logits[best] - max_logit) / denom);
    prev = best;
  }
  ids[k] = n_routed;
  weights[k] = 1.0f;
}

}  // namespace moe_gen
