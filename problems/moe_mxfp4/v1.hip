// v1: one block per (token, selected expert) pair and 32 columns: the hidden row is quantized into
// shared memory, a warp per weight row dots it with the MXFP4 row (16-byte loads, decoded in
// registers), SwiGLU + bf16 rounding + dynamic requantization of the 32 columns; then one block per
// pair and 64 output columns for down, times the routing weight; a deterministic combine.
#include "problems/common/mxfp4_decode.h"
#include "problems/moe_mxfp4/moe_pipeline.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxHidden = 8192;  // shared-memory row of the quantized hidden state
constexpr int kMaxExpert = 4096;
constexpr int kDownRows = 64;

size_t workspace_bytes(const MoeConfig& c) {
  const size_t P = size_t(c.bs) * c.total_top_k;
  return moe_pipeline::align256(P * c.d_expert * sizeof(float)) + moe_pipeline::align256(P * c.d_hidden * sizeof(float));
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

// grid (P, I / 32)
__global__ __launch_bounds__(kThreads) void gate_up(MoeArgs a, float* act) {
  __shared__ __align__(16) float x[kMaxHidden];
  __shared__ float h[mxfp4::kBlock];  // one requantization block of gate_up outputs
  const MoeConfig& c = a.cfg;
  const int H = c.d_hidden, I = c.d_expert;
  const int64_t p = blockIdx.x, token = p / c.total_top_k, e = a.topk_ids[p];
  const int n0 = blockIdx.y * mxfp4::kBlock;
  for (int b = threadIdx.x; b < H / 32; b += blockDim.x) {
    float v[32];
    for (int i = 0; i < 32; ++i) v[i] = numerics::bf16_to_f32(a.hidden_states[token * H + b * 32 + i]);
    uint8_t packed[16], scale;
    numerics::quantize_block32_dynamic(v, packed, &scale);
    const float s = mxfp4::e8m0_value(scale);
    for (int i = 0; i < 32; ++i) x[b * 32 + i] = mxfp4::e2m1_value(packed[i / 2] >> (4 * (i % 2))) * s;
  }
  __syncthreads();
  const int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize;
  for (int r = warp; r < mxfp4::kBlock; r += warps) {
    const int64_t gate_row = e * 2 * I + n0 + r, up_row = gate_row + I;
    const float g = dot_row(x, a.gate_up_weight + gate_row * (H / 2), a.gate_up_weight_scale + gate_row * (H / 32), H);
    const float u = dot_row(x, a.gate_up_weight + up_row * (H / 2), a.gate_up_weight_scale + up_row * (H / 32), H);
    if (threadIdx.x % warpSize == 0)
      h[r] = numerics::bf16_to_f32(numerics::f32_to_bf16(g / (1.0f + expf(-g)) * u));
  }
  __syncthreads();
  if (threadIdx.x < mxfp4::kBlock) {  // one thread per value of the block
    float amax = 0.0f;
    for (int i = 0; i < mxfp4::kBlock; ++i) amax = fmaxf(amax, mxfp4::abs_for_amax(h[i]));
    const int s = numerics::mxfp4_dynamic_scale_exp(amax);
    const float q = mxfp4::e2m1_value(mxfp4::quantize_dynamic_code(h[threadIdx.x], s)) * numerics::exp2_f32(s);
    act[p * I + n0 + threadIdx.x] = q;
  }
}

// grid (P, H / kDownRows)
__global__ __launch_bounds__(kThreads) void down(MoeArgs a, const float* act, float* y) {
  __shared__ __align__(16) float x[kMaxExpert];
  const MoeConfig& c = a.cfg;
  const int H = c.d_hidden, I = c.d_expert;
  const int64_t p = blockIdx.x, e = a.topk_ids[p];
  for (int i = threadIdx.x; i < I; i += blockDim.x) x[i] = act[p * I + i];
  __syncthreads();
  const float weight = a.topk_weights[p];
  const int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize;
  for (int r = warp; r < kDownRows; r += warps) {
    const int64_t n = int64_t(blockIdx.y) * kDownRows + r, row = e * H + n;
    const float d = dot_row(x, a.down_weight + row * (I / 2), a.down_weight_scale + row * (I / 32), I);
    if (threadIdx.x % warpSize == 0) y[p * H + n] = weight * d;
  }
}

void launch(const MoeArgs& a) {
  const MoeConfig& c = a.cfg;
  if (c.d_hidden > kMaxHidden || c.d_expert > kMaxExpert || c.d_hidden % kDownRows || c.d_expert % 32)
    throw std::invalid_argument("moe v1: unsupported shape");
  if (a.workspace_size < workspace_bytes(c)) throw std::invalid_argument("moe v1: workspace too small");
  const int64_t P = int64_t(c.bs) * c.total_top_k;
  float* act = static_cast<float*>(a.workspace);
  float* y = reinterpret_cast<float*>(static_cast<char*>(a.workspace) +
                                      moe_pipeline::align256(P * c.d_expert * sizeof(float)));
  gate_up<<<dim3(unsigned(P), unsigned(c.d_expert / 32)), kThreads>>>(a, act);
  moe_pipeline::check(hipGetLastError(), "v1 gate_up");
  down<<<dim3(unsigned(P), unsigned(c.d_hidden / kDownRows)), kThreads>>>(a, act, y);
  moe_pipeline::check(hipGetLastError(), "v1 down");
  const int64_t n = int64_t(c.bs) * c.d_hidden;
  moe_pipeline::combine<<<unsigned((n + kThreads - 1) / kThreads), kThreads>>>(y, c.bs, c.d_hidden, c.total_top_k, a.out);
  moe_pipeline::check(hipGetLastError(), "v1 combine");
}

}  // namespace

MOE_MXFP4_VARIANT("v1", gpu,
                  "per (token, expert) pair: in-kernel MXFP4 dequant, SwiGLU + requant, down, weighted fp32 "
                  "partials, deterministic combine",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_scale,down_weight_scale,topk_weights,"
                  "topk_ids",
                  0);
