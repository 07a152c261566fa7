// GPU reference for moe_mxfp4: the official a4w4 function computed as plainly as possible, one
// kernel per step, raw (unshuffled) layouts, fp32 accumulation. Timed outputs are checked against it.
//   1. x_q   = dequant(dynamic MXFP4(hidden))                  [M, H] fp32
//   2. a     = bf16(SiLU(x_q W_gate^T) * (x_q W_up^T))         [P, I] (P = M * total_top_k pairs)
//   3. a_q   = dequant(dynamic MXFP4(a))                       (in place)
//   4. y     = routing weight * (a_q W_down^T)                 [P, H] fp32
//   5. out   = bf16(sum over the token's pairs of y, in slot order)
#include <stdexcept>
#include <string>

#include "problems/moe_mxfp4/moe_api.h"
#include "problems/common/mxfp4_decode.h"
#include "reference/numerics.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = 64;  // weight rows per block in the two dot-product kernels

void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw std::runtime_error(std::string("moe reference: ") + what + ": " + hipGetErrorString(e));
}

size_t align256(size_t b) { return (b + 255) & ~size_t{255}; }

struct Workspace {
  float* xq;   // [M, H]
  float* act;  // [P, I]
  float* y;    // [P, H]
};

Workspace carve(const MoeConfig& c, void* base) {
  const size_t M = c.bs, P = size_t(c.bs) * c.total_top_k, H = c.d_hidden, I = c.d_expert;
  char* p = static_cast<char*>(base);
  Workspace w;
  w.xq = reinterpret_cast<float*>(p);
  p += align256(M * H * sizeof(float));
  w.act = reinterpret_cast<float*>(p);
  p += align256(P * I * sizeof(float));
  w.y = reinterpret_cast<float*>(p);
  return w;
}

size_t workspace_bytes(const MoeConfig& c) {
  const size_t M = c.bs, P = size_t(c.bs) * c.total_top_k, H = c.d_hidden, I = c.d_expert;
  return align256(M * H * sizeof(float)) + align256(P * I * sizeof(float)) + align256(P * H * sizeof(float));
}

// Dynamic MXFP4 quantize-dequantize of rows of 32-blocks in place (reads bf16_in instead when given).
__global__ void quant_dequant_blocks(const uint16_t* bf16_in, float* x, int64_t n_blocks) {
  const int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  float v[32];
  for (int i = 0; i < 32; ++i) v[i] = bf16_in ? numerics::bf16_to_f32(bf16_in[b * 32 + i]) : x[b * 32 + i];
  uint8_t packed[16], scale;
  numerics::quantize_block32_dynamic(v, packed, &scale);
  const float s = numerics::e8m0_to_f32(scale);
  for (int i = 0; i < 16; ++i) {
    x[b * 32 + 2 * i] = numerics::e2m1_to_f32(packed[i] & 0xF) * s;
    x[b * 32 + 2 * i + 1] = numerics::e2m1_to_f32(packed[i] >> 4) * s;
  }
}

__device__ float warp_sum(float v) {
  for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
  return v;
}

// Dot product of a dense fp32 vector with one MXFP4 weight row (k_len elements), split over a warp:
// lane l takes 32-bit words l, l + warpSize, ... (8 values each; coalesced weight and x reads); the
// word's partial sum is scaled by its block's e8m0 scale (a power of two: exact).
__device__ float dot_row(const float* x, const uint8_t* w_row, const uint8_t* s_row, int k_len) {
  float acc = 0.0f;
  for (int w = threadIdx.x % warpSize; w < k_len / 8; w += warpSize) {
    const uint32_t word = *reinterpret_cast<const uint32_t*>(w_row + 4 * w);
    const float4 x0 = *reinterpret_cast<const float4*>(x + 8 * w);
    const float4 x1 = *reinterpret_cast<const float4*>(x + 8 * w + 4);
    const float xs[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
    float part = 0.0f;
    for (int i = 0; i < 8; ++i) part += xs[i] * mxfp4::e2m1_value(word >> (4 * i));
    acc += part * mxfp4::e8m0_value(s_row[w / 4]);
  }
  return warp_sum(acc);
}

// grid (P, I / kRowsPerBlock): one warp per output column n of the pair's expert.
__global__ void gate_up_swiglu(MoeArgs a, const float* xq, float* act) {
  const MoeConfig& c = a.cfg;
  const int64_t p = blockIdx.x;
  const int64_t token = p / c.total_top_k;
  const int64_t e = a.topk_ids[p];
  const int H = c.d_hidden, I = c.d_expert;
  const int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize;
  for (int r = warp; r < kRowsPerBlock; r += warps) {
    const int64_t n = int64_t(blockIdx.y) * kRowsPerBlock + r;
    const int64_t gate_row = e * 2 * I + n, up_row = gate_row + I;
    const float g = dot_row(xq + token * H, a.gate_up_weight + gate_row * (H / 2),
                            a.gate_up_weight_scale + gate_row * (H / 32), H);
    const float u = dot_row(xq + token * H, a.gate_up_weight + up_row * (H / 2),
                            a.gate_up_weight_scale + up_row * (H / 32), H);
    if (threadIdx.x % warpSize == 0) {
      const float silu = g / (1.0f + expf(-g));
      act[p * I + n] = numerics::bf16_to_f32(numerics::f32_to_bf16(silu * u));
    }
  }
}

// grid (P, H / kRowsPerBlock): one warp per output column n of d_hidden.
__global__ void down_weighted(MoeArgs a, const float* act, float* y) {
  const MoeConfig& c = a.cfg;
  const int64_t p = blockIdx.x;
  const int64_t e = a.topk_ids[p];
  const float weight = a.topk_weights[p];
  const int H = c.d_hidden, I = c.d_expert;
  const int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize;
  for (int r = warp; r < kRowsPerBlock; r += warps) {
    const int64_t n = int64_t(blockIdx.y) * kRowsPerBlock + r;
    const int64_t row = e * H + n;
    const float d = dot_row(act + p * I, a.down_weight + row * (I / 2), a.down_weight_scale + row * (I / 32), I);
    if (threadIdx.x % warpSize == 0) y[p * H + n] = weight * d;
  }
}

__global__ void combine(MoeArgs a, const float* y) {
  const MoeConfig& c = a.cfg;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(c.bs) * c.d_hidden) return;
  const int64_t token = i / c.d_hidden, n = i % c.d_hidden;
  float sum = 0.0f;
  for (int j = 0; j < c.total_top_k; ++j) sum += y[(token * c.total_top_k + j) * c.d_hidden + n];
  a.out[i] = numerics::f32_to_bf16(sum);
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void launch(const MoeArgs& a) {
  const MoeConfig& c = a.cfg;
  if (c.d_hidden % kRowsPerBlock || c.d_expert % kRowsPerBlock) throw std::invalid_argument("moe reference: shape");
  if (a.workspace_size < workspace_bytes(c)) throw std::invalid_argument("moe reference: workspace too small");
  const Workspace w = carve(c, a.workspace);
  const int64_t M = c.bs, P = int64_t(c.bs) * c.total_top_k, H = c.d_hidden, I = c.d_expert;

  quant_dequant_blocks<<<blocks_for(M * H / 32), kThreads>>>(a.hidden_states, w.xq, M * H / 32);
  check(hipGetLastError(), "quantize hidden");
  gate_up_swiglu<<<dim3(unsigned(P), unsigned(I / kRowsPerBlock)), kThreads>>>(a, w.xq, w.act);
  check(hipGetLastError(), "gate_up");
  quant_dequant_blocks<<<blocks_for(P * I / 32), kThreads>>>(nullptr, w.act, P * I / 32);
  check(hipGetLastError(), "quantize activations");
  down_weighted<<<dim3(unsigned(P), unsigned(H / kRowsPerBlock)), kThreads>>>(a, w.act, w.y);
  check(hipGetLastError(), "down");
  combine<<<blocks_for(M * H), kThreads>>>(a, w.y);
  check(hipGetLastError(), "combine");
}

}  // namespace

MOE_MXFP4_VARIANT("reference", gpu, "plain a4w4 reference: one kernel per step, fp32 accumulation, raw layouts",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantReference);
