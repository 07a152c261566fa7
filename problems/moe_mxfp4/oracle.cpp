// Float64 oracle of the official a4w4 MoE, multi-threaded over (token, expert) pairs.
#include "problems/moe_mxfp4/oracle.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "problems/moe_mxfp4/host_threads.hpp"
#include "reference/mxfp4.hpp"
#include "reference/numerics.hpp"

namespace moe_task {
namespace {

using ByteLut = numerics::E2m1ByteLut<double>;

double e8m0_scale(uint8_t s) { return std::ldexp(1.0, static_cast<int>(s) - 127); }

// sum_k x[k] * W[row, k] for one MXFP4 row of k_len elements (packed k_len/2 bytes, k_len/32 scales).
double dot_row(const ByteLut& lut, const double* x, const uint8_t* packed, const uint8_t* scales, int k_len) {
  double acc = 0.0;
  for (int b = 0; b < k_len / 32; ++b) {
    double block = 0.0;
    for (int i = 0; i < 16; ++i) {
      const uint8_t byte = packed[b * 16 + i];
      block += lut.lo[byte] * x[b * 32 + 2 * i] + lut.hi[byte] * x[b * 32 + 2 * i + 1];
    }
    acc += block * e8m0_scale(scales[b]);
  }
  return acc;
}

// x (fp32-representable values) -> dynamic MXFP4 -> dequantized, exactly, in blocks of 32.
void quant_dequant_dynamic(const float* x, int n, double* out) {
  for (int b = 0; b < n / 32; ++b) {
    uint8_t packed[16], scale;
    numerics::quantize_block32_dynamic(x + b * 32, packed, &scale);
    const double s = e8m0_scale(scale);
    for (int i = 0; i < 16; ++i) {
      out[b * 32 + 2 * i] = numerics::e2m1_to_f32(packed[i] & 0xF) * s;
      out[b * 32 + 2 * i + 1] = numerics::e2m1_to_f32(packed[i] >> 4) * s;
    }
  }
}

}  // namespace

std::vector<double> oracle(const MoeArgs& a) {
  const MoeConfig& c = a.cfg;
  const int H = c.d_hidden, I = c.d_expert, T = c.total_top_k, M = c.bs;
  const int E = c.n_routed_experts + c.n_shared_experts;
  static const ByteLut lut;

  // Step 1: hidden states through the dynamic MXFP4 quantizer.
  std::vector<double> xq(static_cast<size_t>(M) * H);
  moe_host::parallel_for(M, [&](int64_t t0, int64_t t1) {
    std::vector<float> row(H);
    for (int64_t t = t0; t < t1; ++t) {
      for (int k = 0; k < H; ++k) row[k] = numerics::bf16_to_f32(a.hidden_states[t * H + k]);
      quant_dequant_dynamic(row.data(), H, xq.data() + t * H);
    }
  });

  // Steps 2-4 per (token, slot): weighted expert output into its own row, summed afterwards in slot order.
  std::vector<double> pair_out(static_cast<size_t>(M) * T * H);
  moe_host::parallel_for(int64_t{M} * T, [&](int64_t p0, int64_t p1) {
    std::vector<double> h(2 * static_cast<size_t>(I)), aq(I);
    std::vector<float> act(I);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t t = p / T;
      const int e = a.topk_ids[p];
      if (e < 0 || e >= E) throw std::out_of_range("moe oracle: expert id " + std::to_string(e));
      for (int n = 0; n < 2 * I; ++n) {
        const int64_t row = int64_t{e} * 2 * I + n;
        h[n] = dot_row(lut, xq.data() + t * H, a.gate_up_weight + row * (H / 2), a.gate_up_weight_scale + row * (H / 32), H);
      }
      for (int i = 0; i < I; ++i) {
        const double g = h[i], silu = g / (1.0 + std::exp(-g));
        act[i] = numerics::bf16_to_f32(numerics::f64_to_bf16(silu * h[I + i]));
      }
      quant_dequant_dynamic(act.data(), I, aq.data());
      const double w = a.topk_weights[p];
      for (int d = 0; d < H; ++d) {
        const int64_t row = int64_t{e} * H + d;
        pair_out[p * H + d] = w * dot_row(lut, aq.data(), a.down_weight + row * (I / 2), a.down_weight_scale + row * (I / 32), I);
      }
    }
  });

  std::vector<double> out(static_cast<size_t>(M) * H, 0.0);
  for (int64_t t = 0; t < M; ++t)
    for (int j = 0; j < T; ++j)
      for (int d = 0; d < H; ++d) out[t * H + d] += pair_out[(t * T + j) * H + d];
  return out;
}

}  // namespace moe_task
