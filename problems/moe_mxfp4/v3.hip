// v3: the sorted grouped-GEMM pipeline (moe_pipeline.h) on fp8 e4m3 matrix instructions.
// Weights are read from the official shuffled layout, where one 16-row x 32-value k-block is 256
// contiguous bytes that a warp loads with one coalesced 32-bit load per lane per 8 rows. e2m1 codes
// are decoded in registers to e4m3 (exact); each k32 MMA step covers one scale block and its fp32
// product is multiplied by weight scale x activation scale. Tiles: 32 weight rows (stage 1: 32
// gate + 32 up rows, so SwiGLU and the 32-wide requantization stay in registers) x BT tokens; the 4
// warps of a block split K and are summed in a fixed order (deterministic).
// Builds without mma.sync (AMD) run the portable scalar kernels of v2 instead.
#include "problems/common/moe_mma.h"
#include "problems/moe_mxfp4/moe_pipeline.h"
#include "problems/moe_mxfp4/moe_scalar_gemm.h"

namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

constexpr int kWarps = 4;
constexpr int kMmaLanes = 32;  // lanes of an mma.sync fragment (PTX-defined); CUDA path only

int tile_rows_for(const MoeConfig& c) {
  const int per_expert = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return per_expert <= 8 ? 8 : (per_expert <= 16 ? 16 : 32);
}

size_t workspace_bytes(const MoeConfig& c) { return moe_pipeline::carve(c, tile_rows_for(c), nullptr, nullptr); }

#if defined(MOE_HAVE_MMA_SYNC)

// One warp's share of K for MT 16-row weight groups x NG 8-token groups.
template <int MT, int NG>
struct WarpGemm {
  const uint8_t* w;          // shuffled weights of the expert
  const uint8_t* w_scale;    // raw scales of the expert, [rows, KB]
  int k_bytes, KB;
  int row16[MT];
  const uint8_t* b_row[NG];  // activation row (e4m3 bytes) of token g of each group
  const uint8_t* a_scale[NG][2];  // activation scale rows of the two output columns
  float acc[MT][NG][4];

  template <int U>
  __device__ void steps(int kb0, int lane) {
    const int g = lane / 4;
    uint32_t a[U][MT][4];
    float ws[U][MT][2];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        moe_mma::load_a_fragment(moe_mma::shuffled_kblock(w, k_bytes, row16[m], kb0 + u), lane, a[u][m]);
        const int64_t r = int64_t(row16[m]) * 16 + g;
        ws[u][m][0] = mxfp4::e8m0_value(w_scale[r * KB + kb0 + u]);
        ws[u][m][1] = mxfp4::e8m0_value(w_scale[(r + 8) * KB + kb0 + u]);
      }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < NG; ++j) {
        uint32_t b[2];
        moe_mma::load_b_fragment(b_row[j] + (kb0 + u) * 32, lane, b);
        const float s0 = mxfp4::e8m0_value(a_scale[j][0][kb0 + u]);
        const float s1 = mxfp4::e8m0_value(a_scale[j][1][kb0 + u]);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          float d[4];
          moe_mma::mma_e4m3_16x8x32(d, a[u][m], b);
          acc[m][j][0] += d[0] * (ws[u][m][0] * s0);
          acc[m][j][1] += d[1] * (ws[u][m][0] * s1);
          acc[m][j][2] += d[2] * (ws[u][m][1] * s0);
          acc[m][j][3] += d[3] * (ws[u][m][1] * s1);
        }
      }
  }

  __device__ void run(int kb_begin, int kb_end, int lane) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
    constexpr int kUnroll = MT * NG >= 16 ? 2 : 4;  // k-blocks whose loads are issued together
    int kb = kb_begin;
    for (; kb + kUnroll <= kb_end; kb += kUnroll) steps<kUnroll>(kb, lane);
    for (; kb < kb_end; ++kb) steps<1>(kb, lane);
  }

  // Warps 1.. leave their sums in shared memory; warp 0 adds them in warp order.
  __device__ void reduce_into_warp0(float* red, int warp, int lane) {
    constexpr int kRegs = MT * NG * 4;
    if (warp > 0) {
      float* mine = red + (warp - 1) * kRegs * kMmaLanes;
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int j = 0; j < NG; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) mine[((m * NG + j) * 4 + i) * kMmaLanes + lane] = acc[m][j][i];
    }
    __syncthreads();
    if (warp == 0)
      for (int w2 = 1; w2 < kWarps; ++w2) {
        const float* other = red + (w2 - 1) * kRegs * kMmaLanes;
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int j = 0; j < NG; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[m][j][i] += other[((m * NG + j) * 4 + i) * kMmaLanes + lane];
      }
  }
};

// Token of a sorted row (padding rows borrow token 0; their results are never written back).
__device__ inline int64_t token_of(const Workspace& ws, int row, int total_top_k) {
  const int p = ws.sorted_pair[row];
  return p >= 0 ? p / total_top_k : 0;
}

// Stage 1. grid (tiles_max, I / 32); rows n0..n0+31 of gate and of up.
template <int BT>
__global__ __launch_bounds__(kWarps * kMmaLanes) void gate_up_mma(MoeArgs a, Workspace ws) {
  constexpr int NG = BT / 8, MT = 4;
  __shared__ float red[(kWarps - 1) * MT * NG * 4 * kMmaLanes];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k;
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.y * 32;

  WarpGemm<MT, NG> gemm;
  gemm.KB = H / 32;
  gemm.k_bytes = H / 2;
  gemm.w = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  gemm.w_scale = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * gemm.KB;
  gemm.row16[0] = n0 / 16;
  gemm.row16[1] = n0 / 16 + 1;
  gemm.row16[2] = (I + n0) / 16;
  gemm.row16[3] = (I + n0) / 16 + 1;
#pragma unroll
  for (int j = 0; j < NG; ++j) {
    const int r = tile.row0 + 8 * j;
    gemm.b_row[j] = ws.x8 + token_of(ws, r + g, T) * H;
    gemm.a_scale[j][0] = ws.xs + token_of(ws, r + 2 * t, T) * gemm.KB;
    gemm.a_scale[j][1] = ws.xs + token_of(ws, r + 2 * t + 1, T) * gemm.KB;
  }
  const int per_warp = gemm.KB / kWarps;
  gemm.run(warp * per_warp, (warp + 1) * per_warp, lane);
  gemm.reduce_into_warp0(red, warp, lane);
  if (warp != 0) return;

  // SwiGLU, bf16 rounding, dynamic MXFP4 over the 32 columns n0..n0+31 of each token.
  const int KBI = I / 32;
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float v[4];  // n = 16 * mt + 8 * h + g  at index 2 * mt + h
      float amax = 0.0f;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float gate = gemm.acc[mt][j][2 * h + c], up = gemm.acc[2 + mt][j][2 * h + c];
          const float silu = gate / (1.0f + expf(-gate));
          const float x = numerics::bf16_to_f32(numerics::f32_to_bf16(silu * up));
          v[2 * mt + h] = x;
          amax = fmaxf(amax, mxfp4::abs_for_amax(x));
        }
      for (int o = 4; o < kMmaLanes; o <<= 1) amax = fmaxf(amax, __shfl_xor(amax, o));
      const int s = numerics::mxfp4_dynamic_scale_exp(amax);
      const int64_t row = tile.row0 + 8 * j + 2 * t + c;
      uint8_t* dst = ws.a8 + row * I + n0;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          dst[16 * mt + 8 * h + g] = uint8_t(mxfp4::e2m1_to_e4m3(mxfp4::quantize_dynamic_code(v[2 * mt + h], s)));
      if (g == 0) ws.as[row * KBI + n0 / 32] = uint8_t(s + 127);
    }
}

// Stage 2. grid (tiles_max, H / 32); y[pair, n0..n0+31] = weight * (a_q W_down^T).
template <int BT>
__global__ __launch_bounds__(kWarps * kMmaLanes) void down_mma(MoeArgs a, Workspace ws) {
  constexpr int NG = BT / 8, MT = 2;
  __shared__ float red[(kWarps - 1) * MT * NG * 4 * kMmaLanes];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert;
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.y * 32;

  WarpGemm<MT, NG> gemm;
  gemm.KB = I / 32;
  gemm.k_bytes = I / 2;
  gemm.w = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  gemm.w_scale = a.down_weight_scale + int64_t(tile.expert) * H * gemm.KB;
  gemm.row16[0] = n0 / 16;
  gemm.row16[1] = n0 / 16 + 1;
#pragma unroll
  for (int j = 0; j < NG; ++j) {
    const int64_t r = tile.row0 + 8 * j;
    gemm.b_row[j] = ws.a8 + (r + g) * I;
    gemm.a_scale[j][0] = ws.as + (r + 2 * t) * gemm.KB;
    gemm.a_scale[j][1] = ws.as + (r + 2 * t + 1) * gemm.KB;
  }
  const int per_warp = gemm.KB / kWarps;
  gemm.run(warp * per_warp, (warp + 1) * per_warp, lane);
  gemm.reduce_into_warp0(red, warp, lane);
  if (warp != 0) return;

#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int p = ws.sorted_pair[tile.row0 + 8 * j + 2 * t + c];
      if (p < 0) continue;
      const float weight = a.topk_weights[p];
      float* dst = ws.y + int64_t(p) * H + n0;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) dst[16 * mt + 8 * h + g] = weight * gemm.acc[mt][j][2 * h + c];
    }
}

template <int BT>
void launch_gemms(const MoeArgs& a, const Workspace& ws) {
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BT);
  gate_up_mma<BT><<<dim3(unsigned(s.tiles_max), unsigned(s.I / 32)), kWarps * kMmaLanes>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "v3 gate_up");
  down_mma<BT><<<dim3(unsigned(s.tiles_max), unsigned(s.H / 32)), kWarps * kMmaLanes>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), "v3 down");
}

#else

template <int BT>
void launch_gemms(const MoeArgs& a, const Workspace& ws) {
  moe_scalar_gemm::launch<BT>(a, ws);
}

#endif

void launch(const MoeArgs& a) {
  const int bt = tile_rows_for(a.cfg);
  moe_pipeline::require_workspace(a, bt);
  Workspace ws;
  moe_pipeline::carve(a.cfg, bt, a.workspace, &ws);
  moe_pipeline::launch_prologue(a, ws, bt);
  if (bt == 8) launch_gemms<8>(a, ws);
  else if (bt == 16) launch_gemms<16>(a, ws);
  else launch_gemms<32>(a, ws);
  moe_pipeline::launch_combine(a, ws);
}

}  // namespace

MOE_MXFP4_VARIANT("v3", gpu,
                  "sorted grouped GEMMs on fp8 e4m3 mma.sync (e2m1 decoded in registers, per-k32 scales on the "
                  "fp32 products), shuffled weights, fused SwiGLU + requant, deterministic combine",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
