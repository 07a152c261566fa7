// Portable scalar grouped GEMMs for the sorted pipeline (moe_pipeline.h): v2's kernels and v3's
// path on builds without mma.sync. A block stages one 64-value K chunk of its BT activation rows and
// 64 weight rows (raw layout) in shared memory as dequantized fp32, then each thread accumulates a
// few outputs in fp32. Works for any warp size.
#pragma once
#include "problems/moe_mxfp4/moe_pipeline.h"

namespace moe_scalar_gemm {
// Unnamed: each variant file gets its own copy of these kernels (no cross-file symbol clashes).
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

constexpr int kThreads = 256;
constexpr int kChunk = 64;  // K values per staged chunk: two scale blocks
constexpr int kRows = 64;   // weight rows per block

// 64 weight rows x 64 K values of a raw [rows, K/2] MXFP4 matrix -> dequantized fp32 in shared memory.
// rows[r] is the matrix row of tile row r.
__device__ inline void stage_weights(const uint8_t* w, const uint8_t* w_scale, int K, const int64_t* rows, int k0,
                                     float (*dst)[kChunk + 1]) {
  for (int i = threadIdx.x; i < kRows * 4; i += blockDim.x) {
    const int r = i / 4, q = i % 4;  // q: 8-byte quarter of the row's 32 bytes
    const uint2 v = *reinterpret_cast<const uint2*>(w + rows[r] * (K / 2) + k0 / 2 + q * 8);
    const float s = mxfp4::e8m0_value(w_scale[rows[r] * (K / 32) + k0 / 32 + q / 2]);
    for (int b = 0; b < 8; ++b) {
      const uint32_t byte = ((b < 4 ? v.x : v.y) >> (8 * (b % 4))) & 0xFFu;
      dst[r][q * 16 + 2 * b] = mxfp4::e2m1_value(byte) * s;
      dst[r][q * 16 + 2 * b + 1] = mxfp4::e2m1_value(byte >> 4) * s;
    }
  }
}

// BT activation rows (e4m3 bytes + e8m0 scales, row stride K) -> dequantized fp32 in shared memory.
template <int BT>
__device__ inline void stage_activations(const uint8_t* x8, const uint8_t* xs, int K, const int64_t* rows, int k0,
                                         float (*dst)[kChunk]) {
  for (int i = threadIdx.x; i < BT * kChunk; i += blockDim.x) {
    const int t = i / kChunk, k = i % kChunk;
    dst[t][k] = mxfp4::e4m3_small_value(x8[rows[t] * K + k0 + k]) * mxfp4::e8m0_value(xs[rows[t] * (K / 32) + (k0 + k) / 32]);
  }
}

// Stage 1. grid (tiles_max, I / 32): gate rows n0..n0+31 and up rows I+n0.. for BT sorted rows.
template <int BT>
__global__ __launch_bounds__(kThreads) void gate_up(MoeArgs a, Workspace ws) {
  __shared__ float xt[BT][kChunk];
  __shared__ float wt[kRows][kChunk + 1];
  __shared__ float at[BT][32];
  __shared__ int64_t tokens[BT], wrows[kRows];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k;
  const int n0 = blockIdx.y * 32;
  for (int i = threadIdx.x; i < BT; i += blockDim.x) {
    const int p = ws.sorted_pair[tile.row0 + i];
    tokens[i] = p >= 0 ? p / T : 0;  // padding rows borrow token 0 and are never used
  }
  for (int r = threadIdx.x; r < kRows; r += blockDim.x)
    wrows[r] = int64_t(tile.expert) * 2 * I + (r < 32 ? n0 + r : I + n0 + r - 32);
  __syncthreads();

  constexpr int kGroups = kThreads / 32, kPer = BT / kGroups > 0 ? BT / kGroups : 1;
  const int n = threadIdx.x % 32, tq = threadIdx.x / 32;
  float gacc[kPer] = {}, uacc[kPer] = {};
  for (int k0 = 0; k0 < H; k0 += kChunk) {
    stage_weights(a.gate_up_weight, a.gate_up_weight_scale, H, wrows, k0, wt);
    stage_activations<BT>(ws.x8, ws.xs, H, tokens, k0, xt);
    __syncthreads();
    for (int q = 0; q < kPer; ++q) {
      const int t = tq + kGroups * q;
      if (t >= BT) break;
      for (int k = 0; k < kChunk; ++k) {
        gacc[q] += xt[t][k] * wt[n][k];
        uacc[q] += xt[t][k] * wt[32 + n][k];
      }
    }
    __syncthreads();
  }
  for (int q = 0; q < kPer; ++q) {
    const int t = tq + kGroups * q;
    if (t >= BT) break;
    const float silu = gacc[q] / (1.0f + expf(-gacc[q]));
    at[t][n] = numerics::bf16_to_f32(numerics::f32_to_bf16(silu * uacc[q]));
  }
  __syncthreads();
  // Dynamic MXFP4 of each row's 32 values.
  for (int i = threadIdx.x; i < BT * 32; i += blockDim.x) {
    const int t = i / 32, c = i % 32;
    float amax = 0.0f;
    for (int k = 0; k < 32; ++k) amax = fmaxf(amax, mxfp4::abs_for_amax(at[t][k]));
    const int s = numerics::mxfp4_dynamic_scale_exp(amax);
    const int64_t row = tile.row0 + t;
    ws.a8[row * I + n0 + c] = uint8_t(mxfp4::e2m1_to_e4m3(mxfp4::quantize_dynamic_code(at[t][c], s)));
    if (c == 0) ws.as[row * (I / 32) + n0 / 32] = uint8_t(s + 127);
  }
}

// Stage 2. grid (tiles_max, H / 64): y[pair, n0..n0+63] = weight * (a_q W_down^T).
template <int BT>
__global__ __launch_bounds__(kThreads) void down(MoeArgs a, Workspace ws) {
  __shared__ float xt[BT][kChunk];
  __shared__ float wt[kRows][kChunk + 1];
  __shared__ int64_t arows[BT], wrows[kRows];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert;
  const int n0 = blockIdx.y * kRows;
  for (int i = threadIdx.x; i < BT; i += blockDim.x) arows[i] = tile.row0 + i;
  for (int r = threadIdx.x; r < kRows; r += blockDim.x) wrows[r] = int64_t(tile.expert) * H + n0 + r;
  __syncthreads();

  constexpr int kGroups = kThreads / kRows, kPer = BT / kGroups;
  const int n = threadIdx.x % kRows, tq = threadIdx.x / kRows;
  float acc[kPer] = {};
  for (int k0 = 0; k0 < I; k0 += kChunk) {
    stage_weights(a.down_weight, a.down_weight_scale, I, wrows, k0, wt);
    stage_activations<BT>(ws.a8, ws.as, I, arows, k0, xt);
    __syncthreads();
    for (int q = 0; q < kPer; ++q) {
      const int t = tq + kGroups * q;
      for (int k = 0; k < kChunk; ++k) acc[q] += xt[t][k] * wt[n][k];
    }
    __syncthreads();
  }
  for (int q = 0; q < kPer; ++q) {
    const int t = tq + kGroups * q;
    const int p = ws.sorted_pair[tile.row0 + t];
    if (p >= 0) ws.y[int64_t(p) * H + n0 + n] = a.topk_weights[p] * acc[q];
  }
}

template <int BT>
void launch(const MoeArgs& a, const Workspace& ws) {
  static_assert(BT % 8 == 0 && BT >= 8, "tile rows");
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BT);
  gate_up<BT><<<dim3(unsigned(s.tiles_max), unsigned(s.I / 32)), kThreads>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "scalar gate_up");
  down<BT><<<dim3(unsigned(s.tiles_max), unsigned(s.H / kRows)), kThreads>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "scalar down");
}

}  // namespace
}  // namespace moe_scalar_gemm
