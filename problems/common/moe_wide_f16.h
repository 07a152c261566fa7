// 32-row MoE tiles (bs x k / routed experts in (8, 40]: E 257 bs 512, E 33 bs 128) on f16 mma.sync with
// v12's cheaper weight decode: moe_wide16.h's (v13's) kernels with the operands of moe_wgmma_f16.h.
//  - A: moe_wg8::decode_f16 (four f16 pairs of value x 2^-14 a word) and one exact mul.rn.f16x2 a pair by
//    the row's 2^(s + 14) (moe_wgf16::mult16_of), exact for scale bytes in [104, 128];
//  - B: f16 activations, value x 2^s of their block scale when s is in [-23, 13], else the raw e2m1 value
//    with the exponent byte s + 128 (ws.xs / ws.as, 0 = folded: moe_wgf16::act_f16 / act_exp_byte); inside
//    each group of 8 values a thread's pairs (j, j + 2) (decode_f16's) are adjacent: value k at
//    8 (k / 8) + moe_tile::F16Decode::position(k % 8), so one 16-byte load per (row, k-block, thread) is
//    the two k16 steps' B registers, as in moe_wide16;
//  - per stage each thread checks its weight-scale row and its activation-exponent row, or-reduced in the
//    stage barrier; a flagged stage decodes A with Bf16Folded::decode (any scale; pairs permuted to the f16
//    k order) and converts each B load to bf16-folded values (f16 -> fp32 x 2^s -> bf16), bf16 mma.sync:
//    exactly v13's products (no shared-memory writes).
// Copies, stage shapes, epilogues as moe_wide16.h; products exact, so the output is v13's.
// Measured (docs/perf-moe-f16w.md): bit-identical, ~14% fewer instructions than v13's gate_up but IPC 1.7
// instead of 2.0 (HMMA / HMUL2 pipe stalls): no faster (E33 bs128 109.7 vs 108.8 us; E257 bs512 +2%).
#pragma once
#include <utility>

#include "problems/common/moe_wgmma_f16.h"

namespace moe_widef16 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;

// Position of value k (0..31) of a 32-value block in the stored f16 activation row.
HD constexpr int position32(int k) { return (k & ~7) + moe_tile::F16Decode::position(k & 7); }

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// moe_wide16::Cfg plus the stage's activation exponent bytes (BN rows x KS); FORCE as moe_wgf16::Cfg.
template <int WM_, int MT_, int NG_, int KS_, int STAGES_, int MIN_BLOCKS_ = 1, int FORCE_ = 0>
struct Cfg {
  static constexpr int FORCE = FORCE_;
  static constexpr int WM = WM_, MT = MT_, NG = NG_, KS = KS_, STAGES = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16, BN = NG * 8;
  static constexpr int kXRow = KS * 32 * 2;
  static constexpr int kXStride = kXRow + 64;
  static constexpr int kXChunks = kXRow / 16;
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS * 16;
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kXe = kX + BN * kXStride;
  static constexpr int kStageBytes = kXe + moe_tile::align16(BN * KS);
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr int kWPer = BM * KS / kThreads;
  static constexpr int kSPer = BM / kThreads;
  static constexpr int kXPer = BN * kXChunks / kThreads;
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
  static_assert(BM * KS % kThreads == 0 && BM % kThreads == 0 && BN * kXChunks % kThreads == 0, "copy split");
  static_assert(kThreads % kXChunks == 0, "activation chunk column fixed per thread");
  static_assert(BN <= kThreads, "one exponent row a thread");
};

#if defined(MOE_WG8_DEVICE)
// bf16 pairs (j, j + 4) of Bf16Folded::decode -> the f16 layout's pairs (0, 2), (4, 6), (1, 3), (5, 7).
__device__ inline void bf16_to_f16_order(const uint32_t (&l)[4], uint32_t (&q)[4]) {
  q[0] = __byte_perm(l[0], l[2], 0x5410u);
  q[1] = __byte_perm(l[0], l[2], 0x7632u);
  q[2] = __byte_perm(l[1], l[3], 0x5410u);
  q[3] = __byte_perm(l[1], l[3], 0x7632u);
}
// Two f16 (x 2^s when eb = s + 128 is non-zero) -> bf16-folded pair.
__device__ inline uint32_t f16x2_to_bf16x2(uint32_t h, float mul) {
  const uint32_t b0 = numerics::f32_to_bf16(moe_wgf16::f16_to_f32(h & 0xFFFFu) * mul);
  const uint32_t b1 = numerics::f32_to_bf16(moe_wgf16::f16_to_f32(h >> 16) * mul);
  return b0 | (b1 << 16);
}
#endif

template <class C>
__device__ inline void mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, const uint8_t* xe, int KB,
                                const int* rg, const uint32_t* xoff_row, const uint32_t* eoff_row, uint8_t* smem,
                                float (&acc)[C::MT][C::NG][4]) {
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
#if defined(MOE_WG8_DEVICE)
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4, t = lane % 4;
  const int nk = KB / C::KS;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;

  uint32_t woff[C::kWPer], soff[C::kSPer], xoff[C::kXPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(rg[r]) * rg_bytes + uint32_t(ch) * 16u;
  }
#pragma unroll
  for (int n = 0; n < C::kSPer; ++n) {
    const int r = tid + n * C::kThreads;
    soff[n] = (uint32_t(rg[r / 16]) * 16u + uint32_t(r % 16)) * uint32_t(KB);
  }
  const int xch = tid % C::kXChunks, xc0 = tid / C::kXChunks;
  constexpr int kXRowsPer = C::kThreads / C::kXChunks;
#pragma unroll
  for (int n = 0; n < C::kXPer; ++n) xoff[n] = xoff_row[xc0 + n * kXRowsPer] + uint32_t(xch) * 16u;
  const uint32_t eoff = tid < C::BN ? eoff_row[tid] : 0u;

  auto load = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = w + uint32_t(kb0) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n) cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    const uint8_t* sb = wsc + kb0;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n) cp_async<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS, sb + soff[n]);
    const uint8_t* xb = x + uint32_t(kb0) * 64u;
    uint8_t* xd = st + C::kX + xc0 * C::kXStride + xch * 16;
#pragma unroll
    for (int n = 0; n < C::kXPer; ++n) cp_async<16>(xd + n * kXRowsPer * C::kXStride, xb + xoff[n]);
    if (tid < C::BN) cp_async<C::KS>(st + C::kXe + tid * C::KS, xe + eoff + kb0);
  };

  auto body = [&](const uint8_t* st, auto slow_tag) {
    constexpr bool kSlow = decltype(slow_tag)::value;
    uint32_t sw[C::MT][2][C::KS / 4];
#pragma unroll
    for (int m = 0; m < C::MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* p = st + C::kWs + ((wm * C::MT + m) * 16 + g + 8 * h) * C::KS;
        if constexpr (C::KS == 8) {
          const uint2 v = *reinterpret_cast<const uint2*>(p);
          sw[m][h][0] = v.x;
          sw[m][h][1] = v.y;
        } else {
          sw[m][h][0] = *reinterpret_cast<const uint32_t*>(p);
        }
      }
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      uint32_t a[C::MT][2][4];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
        uint32_t lo[4], hi[4];
        if constexpr (kSlow) {
          uint32_t l[4], h[4];
          Bf16Folded::decode(w0, (sw[m][0][u / 4] >> (8 * (u % 4))) & 0xFFu, l);
          Bf16Folded::decode(w1, (sw[m][1][u / 4] >> (8 * (u % 4))) & 0xFFu, h);
          bf16_to_f16_order(l, lo);
          bf16_to_f16_order(h, hi);
        } else {
          moe_wg8::decode_f16(w0, lo);
          moe_wg8::decode_f16(w1, hi);
          const uint32_t m0 = moe_wgf16::mult16_of<u>(sw[m][0][u / 4]), m1 = moe_wgf16::mult16_of<u>(sw[m][1][u / 4]);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            lo[k] = moe_wgf16::mul_f16x2(lo[k], m0);
            hi[k] = moe_wgf16::mul_f16x2(hi[k], m1);
          }
        }
        a[m][0][0] = lo[0];
        a[m][0][1] = hi[0];
        a[m][0][2] = lo[1];
        a[m][0][3] = hi[1];
        a[m][1][0] = lo[2];
        a[m][1][1] = hi[2];
        a[m][1][2] = lo[3];
        a[m][1][3] = hi[3];
      }
#pragma unroll
      for (int j = 0; j < C::NG; ++j) {
        const int c = j * 8 + g;
        uint4 v = *reinterpret_cast<const uint4*>(st + C::kX + c * C::kXStride + (u * 32 + 8 * t) * 2);
        if constexpr (kSlow) {
          const uint32_t eb = st[C::kXe + c * C::KS + u];
          const float mul = eb ? numerics::exp2_f32(int(eb) - 128) : 1.0f;
          v = make_uint4(f16x2_to_bf16x2(v.x, mul), f16x2_to_bf16x2(v.y, mul), f16x2_to_bf16x2(v.z, mul),
                         f16x2_to_bf16x2(v.w, mul));
        }
        const uint32_t b0[2] = {v.x, v.y}, b1[2] = {v.z, v.w};
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          if constexpr (kSlow) {
            moe_mma::mma_bf16_16x8x16(acc[m][j], a[m][0], b0, acc[m][j]);
            moe_mma::mma_bf16_16x8x16(acc[m][j], a[m][1], b1, acc[m][j]);
          } else {
            moe_mma::mma_f16_16x8x16(acc[m][j], a[m][0], b0, acc[m][j]);
            moe_mma::mma_f16_16x8x16(acc[m][j], a[m][1], b1, acc[m][j]);
          }
        }
      }
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nk) load(s, s * C::KS);
    cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    cp_wait<C::STAGES - 2>();
    const uint8_t* st = smem + (ks % C::STAGES) * C::kStageBytes;
    bool wide = C::FORCE > 0;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n) wide |= moe_wgf16::any_out_f16<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS);
    if (tid < C::BN) wide |= moe_wgf16::any_nonzero<C::KS>(st + C::kXe + tid * C::KS);
    const bool slow = __syncthreads_or(wide) != 0;
    const int next = ks + C::STAGES - 1;
    if (next < nk) load(next % C::STAGES, next * C::KS);
    cp_commit();
    if (slow) body(st, std::true_type{});
    else body(st, std::false_type{});
  }
  cp_wait<0>();
#else
  (void)w, (void)wsc, (void)x, (void)xe, (void)KB, (void)rg, (void)xoff_row, (void)eoff_row, (void)smem;
#endif
}

// The hidden states as f16-folded activations in this header's order, and their exponent bytes.
template <int FORCE>
__global__ void quantize_hidden_f16(const uint16_t* hidden, int64_t n8, uint8_t* x16, uint8_t* xe) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(hidden, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  uint32_t out[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = moe_tile::F16Decode::position(k);
    out[pos / 2] |= moe_wgf16::act_f16<FORCE>(moe_wg8::e2m1_code(v[k], mul), s) << (16 * (pos % 2));
  }
  reinterpret_cast<uint4*>(x16)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) xe[i / 4] = moe_wgf16::act_exp_byte<FORCE>(s);
}

// Stage 1 (moe_wide16::gate_up with this mainloop): SwiGLU, bf16 rounding, requantization into f16 a.
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN], eoff[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const uint32_t token = p >= 0 ? uint32_t(p / T) : 0u;
    xoff[c] = token * uint32_t(H) * 2u;
    eoff[c] = token * uint32_t(KB);
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
              a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, ws.x8, ws.xs, KB, rg, xoff, eoff, smem, acc);
  __syncthreads();

  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  const moe_wide16::AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile_f[ix.col(j, i) * kStride + ix.row(m, i)] = acc[m][j][i];
  __syncthreads();

  constexpr int kB = mxfp4::kBlock, kGroups = C::BN * (kHalf / kB);
  const int lane = threadIdx.x % kB, KBI = I / kB;
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float xv = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~31) + position32(n & 31);
    reinterpret_cast<uint16_t*>(ws.a8)[row * I + col] =
        uint16_t(moe_wgf16::act_f16<C::FORCE>(mxfp4::quantize_dynamic_code(xv, s), s));
    if (lane == 0) ws.as[row * KBI + (n0 + n) / kB] = moe_wgf16::act_exp_byte<C::FORCE>(s);
  }
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a W_down^T).
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN], eoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = blockIdx.y * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int row = tile.row0 + c;
    const int p = ws.sorted_pair[row];
    xoff[c] = uint32_t(row) * uint32_t(I) * 2u;
    eoff[c] = uint32_t(row) * uint32_t(KB);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2),
              a.down_weight_scale + int64_t(tile.expert) * H * KB, ws.a8, ws.as, KB, rg, xoff, eoff, smem, acc);

  moe_tiled::store_weighted_rows<C>(moe_wide16::AccIndex<C>(), acc, pair, weight, ws.y, H, n0);
}

// This header's quantizer, then moe_wide16::launch_stages on its kernels.
template <int BN, class G1, class G2>
void launch(const MoeArgs& a) {
  constexpr int kQuantThreads = 256;
  moe_wide16::launch_stages<BN, G1, G2>(
      a,
      [&](const Workspace& ws, const moe_pipeline::Sizes& s) {
        const int64_t n8 = s.M * s.H / 8;
        quantize_hidden_f16<G1::FORCE><<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(
            a.hidden_states, n8, ws.x8, ws.xs);
      },
      gate_up<G1>, down<G2>, "wide f16");
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_widef16
