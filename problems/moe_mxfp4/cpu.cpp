// Variant "cpu": the a4w4 MoE on the host with fp32 accumulation, multi-threaded. Reads the raw
// (unshuffled) weights and scales. Same quantization steps as the official reference.
#include <array>
#include <cmath>

#include "problems/moe_mxfp4/host_threads.hpp"
#include "problems/moe_mxfp4/moe_api.h"
#include "reference/mxfp4.hpp"
#include "reference/numerics.hpp"

namespace {

using ByteLutF32 = numerics::E2m1ByteLut<float>;

float dot_row(const ByteLutF32& lut, const float* x, const uint8_t* packed, const uint8_t* scales, int k_len) {
  float acc = 0.0f;
  for (int b = 0; b < k_len / 32; ++b) {
    float block = 0.0f;
    for (int i = 0; i < 16; ++i) {
      const uint8_t byte = packed[b * 16 + i];
      block += lut.lo[byte] * x[b * 32 + 2 * i] + lut.hi[byte] * x[b * 32 + 2 * i + 1];
    }
    acc += block * numerics::e8m0_to_f32(scales[b]);
  }
  return acc;
}

// In place: x -> dynamic MXFP4 -> dequantized, blocks of 32.
void quant_dequant_dynamic(float* x, int n) {
  for (int b = 0; b < n / 32; ++b) {
    uint8_t packed[16], scale;
    numerics::quantize_block32_dynamic(x + b * 32, packed, &scale);
    const float s = numerics::e8m0_to_f32(scale);
    for (int i = 0; i < 16; ++i) {
      x[b * 32 + 2 * i] = numerics::e2m1_to_f32(packed[i] & 0xF) * s;
      x[b * 32 + 2 * i + 1] = numerics::e2m1_to_f32(packed[i] >> 4) * s;
    }
  }
}

// Workspace: quantized hidden [M, H], activations [M*T, I], per-pair outputs [M*T, H], all fp32.
size_t workspace_bytes(const MoeConfig& c) {
  const size_t M = c.bs, T = c.total_top_k, H = c.d_hidden, I = c.d_expert;
  return (M * H + M * T * I + M * T * H) * sizeof(float);
}

void launch(const MoeArgs& a) {
  const MoeConfig& c = a.cfg;
  const int H = c.d_hidden, I = c.d_expert, T = c.total_top_k, M = c.bs;
  static const ByteLutF32 lut;
  float* xq = static_cast<float*>(a.workspace);
  float* act = xq + static_cast<size_t>(M) * H;
  float* pair_out = act + static_cast<size_t>(M) * T * I;

  moe_host::parallel_for(M, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      for (int k = 0; k < H; ++k) xq[t * H + k] = numerics::bf16_to_f32(a.hidden_states[t * H + k]);
      quant_dequant_dynamic(xq + t * H, H);
    }
  });
  moe_host::parallel_for(int64_t{M} * T, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t t = p / T, e = a.topk_ids[p];
      float* ap = act + p * I;
      for (int i = 0; i < I; ++i) {
        const int64_t gate_row = e * 2 * I + i, up_row = gate_row + I;
        const float g = dot_row(lut, xq + t * H, a.gate_up_weight + gate_row * (H / 2), a.gate_up_weight_scale + gate_row * (H / 32), H);
        const float u = dot_row(lut, xq + t * H, a.gate_up_weight + up_row * (H / 2), a.gate_up_weight_scale + up_row * (H / 32), H);
        ap[i] = numerics::bf16_to_f32(numerics::f32_to_bf16(g / (1.0f + std::exp(-g)) * u));
      }
      quant_dequant_dynamic(ap, I);
      const float w = a.topk_weights[p];
      for (int d = 0; d < H; ++d) {
        const int64_t row = e * H + d;
        pair_out[p * H + d] = w * dot_row(lut, ap, a.down_weight + row * (I / 2), a.down_weight_scale + row * (I / 32), I);
      }
    }
  });
  moe_host::parallel_for(M, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      for (int d = 0; d < H; ++d) {
        float sum = 0.0f;
        for (int j = 0; j < T; ++j) sum += pair_out[(t * T + j) * H + d];
        a.out[t * H + d] = numerics::f32_to_bf16(sum);
      }
  });
}

}  // namespace

MOE_MXFP4_VARIANT("cpu", cpu, "host fp32 accumulation, raw weights, multi-threaded",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantNone);
