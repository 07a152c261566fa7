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

// U (1, 2 or 4) consecutive e8m0 bytes packed in a word; one 16- or 32-bit load when aligned.
template <int U>
__device__ inline uint32_t load_scale_bytes(const uint8_t* p) {
  if (U == 4 && (reinterpret_cast<uintptr_t>(p) & 3) == 0) return *reinterpret_cast<const uint32_t*>(p);
  if (U == 2 && (reinterpret_cast<uintptr_t>(p) & 1) == 0) return *reinterpret_cast<const uint16_t*>(p);
  uint32_t bits = 0;
#pragma unroll
  for (int u = 0; u < U; ++u) bits |= uint32_t(p[u]) << (8 * u);
  return bits;
}

__device__ inline float scale_of(uint32_t bytes, int u) { return mxfp4::e8m0_value((bytes >> (8 * u)) & 0xFFu); }

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

  // Everything one group of U k-blocks needs from memory, loaded before it is used so that the next
  // group's loads are in flight while this one computes.
  template <int U>
  struct Stage {
    uint32_t a_words[U][MT][2];  // e2m1 codes of rows g and g+8
    uint32_t w_scales[MT][2];    // U scale bytes each
    uint32_t x_scales[NG][2];
    uint2 b[U][NG];              // e4m3 activation bytes
  };

  template <int U>
  __device__ void load(Stage<U>& st, int kb0, int lane) const {
    const int g = lane / 4;
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      const int64_t r = int64_t(row16[m]) * 16 + g;
      st.w_scales[m][0] = load_scale_bytes<U>(w_scale + r * KB + kb0);
      st.w_scales[m][1] = load_scale_bytes<U>(w_scale + (r + 8) * KB + kb0);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint8_t* blk = moe_mma::shuffled_kblock(w, k_bytes, row16[m], kb0 + u);
        st.a_words[u][m][0] = *reinterpret_cast<const uint32_t*>(blk + 4 * lane);
        st.a_words[u][m][1] = *reinterpret_cast<const uint32_t*>(blk + 128 + 4 * lane);
      }
    }
#pragma unroll
    for (int j = 0; j < NG; ++j) {
      st.x_scales[j][0] = load_scale_bytes<U>(a_scale[j][0] + kb0);
      st.x_scales[j][1] = load_scale_bytes<U>(a_scale[j][1] + kb0);
#pragma unroll
      for (int u = 0; u < U; ++u)
        st.b[u][j] = *reinterpret_cast<const uint2*>(b_row[j] + (kb0 + u) * 32 + 8 * (lane % 4));
    }
  }

  template <int U>
  __device__ void compute(const Stage<U>& st) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      uint32_t a[MT][4];
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        mxfp4::e2m1x8_to_e4m3x8(st.a_words[u][m][0], a[m][0], a[m][2]);
        mxfp4::e2m1x8_to_e4m3x8(st.a_words[u][m][1], a[m][1], a[m][3]);
      }
#pragma unroll
      for (int j = 0; j < NG; ++j) {
        const uint32_t b[2] = {st.b[u][j].x, st.b[u][j].y};
        const float s0 = scale_of(st.x_scales[j][0], u), s1 = scale_of(st.x_scales[j][1], u);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          const float w0 = scale_of(st.w_scales[m][0], u), w1 = scale_of(st.w_scales[m][1], u);
          float d[4];
          moe_mma::mma_e4m3_16x8x32(d, a[m], b);
          acc[m][j][0] += d[0] * (w0 * s0);
          acc[m][j][1] += d[1] * (w0 * s1);
          acc[m][j][2] += d[2] * (w1 * s0);
          acc[m][j][3] += d[3] * (w1 * s1);
        }
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
    constexpr int U = MT * NG >= 16 ? 2 : 4;  // k-blocks per stage
    int kb = kb_begin;
    if (kb + 2 * U <= kb_end) {  // two stages in registers, alternating
      Stage<U> s0, s1;
      load(s0, kb, lane);
      for (; kb + 2 * U <= kb_end; kb += 2 * U) {
        load(s1, kb + U, lane);
        compute(s0);
        if (kb + 3 * U <= kb_end) load(s0, kb + 2 * U, lane);
        compute(s1);
      }
      if (kb + U <= kb_end) {  // s0 holds the stage at kb
        compute(s0);
        kb += U;
      }
    }
    for (; kb < kb_end; ++kb) {
      Stage<1> st;
      load(st, kb, lane);
      compute(st);
    }
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

// Stage 2. grid (tiles_max, H / (32 * kWarps)); each warp owns 32 rows n0..n0+31 and the whole K
// (K = d_expert is short): y[pair, n] = weight * (a_q W_down^T).
template <int BT>
__global__ __launch_bounds__(kWarps * kMmaLanes) void down_mma(MoeArgs a, Workspace ws) {
  constexpr int NG = BT / 8, MT = 2;
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert;
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, g = lane / 4, t = lane % 4;
  const int n0 = (blockIdx.y * kWarps + warp) * 32;

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
  gemm.run(0, gemm.KB, lane);

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
  down_mma<BT><<<dim3(unsigned(s.tiles_max), unsigned(s.H / (32 * kWarps))), kWarps * kMmaLanes>>>(a, ws);
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
                  ::harness::kVariantMatrix8bit);
