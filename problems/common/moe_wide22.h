// The 32-row MoE path (E 257 bs 512, E 33 bs 128) of moe_wide16n.h (v20) with a longer-lived down and a
// one-launch prologue (docs/perf.md, section "moe_mxfp4 v22"):
//  - quantize_route: one launch, block 0 sorts the pairs into 32-row tiles (moe_tiled::route_scan's code)
//    while blocks 1.. quantize the hidden states (moe_wg8::quantize_hidden8<Bf16Folded>'s code, 1024
//    threads a block): the 1-block route (~10 us at bs 512) no longer runs after the quantizer;
//  - down_slices: one block per (tile, run of NS 128-row slices of d_hidden) instead of one per (tile,
//    slice). The tile's requantized activations (BN x d_expert bf16) are copied into shared memory once,
//    the slices' weight stages form one continuous cp.async pipeline, and each slice's weighted rows are
//    stored from the registers after its last stage. v20's down spent most of its stall samples in its
//    prologue barrier and first-stage wait (grid of tiles x 56 blocks of 8-16 k-blocks each).
// gate_up is moe_wide16n::gate_up (v20's kernel, same column groups, reverse tile order, dependent launch;
// at E 257 bs 512 on 4 k-blocks x 2 stages at 4 blocks/SM), the combine moe_rows8::combine. Path32 picks
// the configuration per shape (the measured one). Every real column's products, k order and fp32 sums are v20's, so the
// output is v20's bit for bit. NVIDIA only (MOE_WG8_HOST), like moe_wide16n.h.
#pragma once
#include <algorithm>
#include <utility>

#include "problems/common/moe_wide16n.h"

namespace moe_wide22 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;
constexpr int kPrologueThreads = 1024;

// Block 0: moe_tiled::route_scan (tile_rows rows a tile); blocks 1..: moe_wg8::quantize_hidden8<Bf16Folded>
// with kPrologueThreads threads a block. Releases its dependent (gate_up) at once.
__global__ __launch_bounds__(kPrologueThreads) void quantize_route(MoeArgs a, Workspace ws, int P, int E, int tile_rows,
                                                                   int rows_max, int64_t n8) {
  moe_wg8::dep_release();
  extern __shared__ int smem_route[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    moe_tiled::route_block(a, ws, P, E, tile_rows, rows_max, tid, smem_route, [](int) {}, [](int, int) {});
    return;
  }
  using D = Bf16Folded;
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  constexpr int kPer = 4 / D::kActBytes;
  uint32_t out[2 * D::kActBytes] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    out[pos / kPer] |= D::encode(moe_wg8::e2m1_code(v[k], mul), s) << (8 * D::kActBytes * (pos % kPer));
  }
  reinterpret_cast<uint4*>(ws.x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) ws.xs[i / 4] = static_cast<uint8_t>(s + 127);
}

// The down kernel's block: WM warps x MT 16-row groups (BM = 128 rows of d_hidden a slice), NG 8-column
// groups, KS k-blocks a weight stage, STAGES stages; MINB blocks per SM for the register budget.
template <int WM_, int MT_, int NG_, int KS_, int STAGES_, int MINB_>
struct DCfg {
  static constexpr int WM = WM_, MT = MT_, NG = NG_, KS = KS_, STAGES = STAGES_, kMinBlocks = MINB_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16, BN = NG * 8;
  static constexpr int kW = 0;                              // [BM/16 groups][KS][256]
  static constexpr int kWs = kW + BM * KS * 16;             // [BM][KS] scale bytes
  static constexpr int kStageBytes = kWs + moe_tile::align16(BM * KS);
  static constexpr int kPipeBytes = STAGES * kStageBytes;  // then the activations [BN][2 I + 64]
  static constexpr int kWPer = BM * KS / kThreads;
  static constexpr int kSPer = BM / kThreads;
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
  static_assert(BM * KS % kThreads == 0 && BM % kThreads == 0, "copy split");
};
template <class C, int NGe>
using DCfgN = DCfg<C::WM, C::MT, NGe, C::KS, C::STAGES, C::kMinBlocks>;

// Activation row stride in shared memory: 2 I bytes + 64 (= 64 mod 128: the 16-byte B loads of 8 rows
// x 4 lanes are free of bank conflicts).
__host__ __device__ inline int act_stride(int I) { return 2 * I + 64; }

template <class C>
constexpr int down_smem_for(int I, int BN) {
  return C::kPipeBytes + BN * (2 * I + 64);
}

// Slices [s0, s1) of one tile with C::NG column groups: acc = W_down[slice] (BM x I) x a^T (I x BN),
// y[pair, slice rows] = weight * acc. w / wsc: the expert's down weights and raw scales.
template <class C, bool DEP>
__device__ inline void down_run(const MoeArgs& a, const Workspace& ws, const Tile& tile, int s0, int s1,
                                const int* pair, const float* weight, uint8_t* smem) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int tid = threadIdx.x, lane = tid % kLanes, wm = tid / kLanes;
  const int g = lane / 4, t = lane % 4;
  const int nk = KB / C::KS;
  const int nf = (s1 - s0) * nk;
  const uint32_t rg_bytes = uint32_t(KB) * 256u;
  const uint8_t* w = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  const int xstride = act_stride(I);
  uint8_t* act = smem + C::kPipeBytes;

  uint32_t woff[C::kWPer], soff[C::kSPer];
#pragma unroll
  for (int n = 0; n < C::kWPer; ++n) {
    const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
    woff[n] = uint32_t(r) * rg_bytes + uint32_t(ch) * 16u;
  }
#pragma unroll
  for (int n = 0; n < C::kSPer; ++n) soff[n] = uint32_t(tid + n * C::kThreads) * uint32_t(KB);
  const uint32_t slice_w = uint32_t(C::BM / 16) * rg_bytes, slice_s = uint32_t(C::BM) * uint32_t(KB);

  // Step f: slice s0 + f / nk, k-blocks (f % nk) * KS ...
  auto load = [&](int slot, int sl, int q) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = w + uint32_t(sl) * slice_w + uint32_t(q * C::KS) * 256u;
#pragma unroll
    for (int n = 0; n < C::kWPer; ++n) cp_async<16>(st + C::kW + (tid + n * C::kThreads) * 16, wb + woff[n]);
    const uint8_t* sb = wsc + uint32_t(sl) * slice_s + q * C::KS;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n) cp_async<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS, sb + soff[n]);
  };
  auto load_act = [&]() {
    const int chunks = I / 8;  // 16-byte chunks of a row
    const uint8_t* src = ws.a8 + int64_t(tile.row0) * I * 2;
    for (int i = tid; i < C::BN * chunks; i += C::kThreads) {
      const int c = i / chunks, ch = i % chunks;
      cp_async<16>(act + c * xstride + ch * 16, src + int64_t(c) * I * 2 + ch * 16);
    }
  };

  float acc[C::MT][C::NG][4];
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;

  auto body = [&](const uint8_t* st, int q, auto slow_tag) {
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
    const uint8_t* xq = act + g * xstride + (q * C::KS * 32 + 8 * t) * 2;
    auto kblock = [&](auto u_tag) {
      constexpr int u = decltype(u_tag)::value;
      Bf16Folded::A av[C::MT];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const uint8_t* kb = st + C::kW + ((wm * C::MT + m) * C::KS + u) * 256;
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
        uint32_t lo[4], hi[4];
        if constexpr (kSlow) {
          Bf16Folded::decode(w0, (sw[m][0][u / 4] >> (8 * (u % 4))) & 0xFFu, lo);
          Bf16Folded::decode(w1, (sw[m][1][u / 4] >> (8 * (u % 4))) & 0xFFu, hi);
        } else {
          moe_wide16::decode_fast(w0, moe_wide16::mult_of<u>(sw[m][0][u / 4]), lo);
          moe_wide16::decode_fast(w1, moe_wide16::mult_of<u>(sw[m][1][u / 4]), hi);
        }
        av[m] = Bf16Folded::A{{{lo[0], hi[0], lo[1], hi[1]}, {lo[2], hi[2], lo[3], hi[3]}}};
      }
#pragma unroll
      for (int j = 0; j < C::NG; ++j) {
        const Bf16Folded::B b = Bf16Folded::load_b(xq + j * 8 * xstride + u * 64);
#pragma unroll
        for (int m = 0; m < C::MT; ++m) Bf16Folded::kblock_acc(acc[m][j], av[m], b);
      }
    };
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (kblock(std::integral_constant<int, U>{}), ...);
    }(std::make_integer_sequence<int, C::KS>{});
  };

  // Prologue: the weights of the first STAGES - 1 steps (they do not depend on gate_up), then (after the
  // dependent-launch wait) the tile's activations in their own group.
  int ld_sl = s0, ld_q = 0;  // next step to load
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nf) {
      load(s, ld_sl, ld_q);
      if (++ld_q == nk) ld_q = 0, ++ld_sl;
    }
    cp_commit();
  }
  if constexpr (DEP) moe_wg8::dep_wait();
  load_act();
  cp_commit();

  int sl = s0, q = 0;
  const moe_wide16::AccIndex<C> ix;
  for (int f = 0; f < nf; ++f) {
    if (f == 0) cp_wait<0>();
    else cp_wait<C::STAGES - 2>();  // this thread's copies of step f landed
    const uint8_t* st = smem + (f % C::STAGES) * C::kStageBytes;
    bool wide = false;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n) wide |= moe_wide16::any_wide<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS);
    const bool slow = __syncthreads_or(wide) != 0;  // step f landed everywhere; step f - 1 no longer read
    if (f + C::STAGES - 1 < nf) {
      load((f + C::STAGES - 1) % C::STAGES, ld_sl, ld_q);
      if (++ld_q == nk) ld_q = 0, ++ld_sl;
    }
    cp_commit();
    if (slow) body(st, q, std::true_type{});
    else body(st, q, std::false_type{});
    if (++q == nk) {
      moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.y, H, sl * C::BM);
#pragma unroll
      for (int m = 0; m < C::MT; ++m)
#pragma unroll
        for (int j = 0; j < C::NG; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
      q = 0;
      ++sl;
    }
  }
  cp_wait<0>();
}

// grid (tiles_max, ceil(H / BM / NS)): block (x, y) runs slices [y NS, min((y + 1) NS, H / BM)) of tile
// n_tiles - 1 - x (REV) or x, with the column groups of its real rows (moe_wide16n::groups_for).
template <class C, int NG1, bool STEP3, bool REV, bool DEP>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down_slices(MoeArgs a, Workspace ws, int NS) {
  static_assert(C::NG == 4 && C::BN <= C::kThreads, "full tile of 4 column groups");
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  moe_wg8::dep_release();  // the combine's blocks may be scheduled; they wait for this grid's completion
  // The route's output is complete here: the route's grid finished before any gate_up block passed its
  // wait, and this grid starts only after every gate_up block started.
  const int n_tiles = *ws.n_tiles;
  if (int(blockIdx.x) >= n_tiles) {
    if constexpr (DEP) moe_wg8::dep_wait();
    return;
  }
  const Tile tile = ws.tiles[REV ? n_tiles - 1 - int(blockIdx.x) : int(blockIdx.x)];
  const int n_slices = a.cfg.d_hidden / C::BM;
  const int s0 = int(blockIdx.y) * NS, s1 = std::min(n_slices, s0 + NS);
  bool real = false;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int p = ws.sorted_pair[tile.row0 + c];
    real = p >= 0;
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  const int ng = moe_wide16n::groups_for<NG1, STEP3>(__syncthreads_count(real));
  if (NG1 == 1 && ng == 1) down_run<DCfgN<C, (NG1 == 1 ? 1 : 2)>, DEP>(a, ws, tile, s0, s1, pair, weight, smem);
  else if (ng == 2) down_run<DCfgN<C, 2>, DEP>(a, ws, tile, s0, s1, pair, weight, smem);
  else if (STEP3 && ng == 3) down_run<DCfgN<C, 3>, DEP>(a, ws, tile, s0, s1, pair, weight, smem);
  else down_run<C, DEP>(a, ws, tile, s0, s1, pair, weight, smem);
}

// The path: quantize_route, moe_wide16n::gate_up<G1> (dependent), down, combine (dependent). SLICES: down is
// down_slices<G2> (dependent when DEPD; NS_SMALL slices of 128 rows a block for d_expert <= 256, else
// NS_LARGE), else v20's moe_wide16n::down<G2> (a moe_wide16::Cfg; plain launch, as v20 launches it).
template <int BN, class G1, class G2, bool SLICES, int NG1, bool STEP3, bool REV, bool DEPD, int NS_SMALL, int NS_LARGE>
void launch(const MoeArgs& a) {
  static_assert(G1::BN == BN && G2::BN == BN, "plan");
  moe_pipeline::require_workspace(a, BN, Bf16Folded::kActBytes);
  Workspace ws;
  moe_pipeline::carve(a.cfg, BN, a.workspace, &ws, Bf16Folded::kActBytes);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BN);
  if (s.I % (G1::BM / 2) || s.I % 32 || s.H % G2::BM || (s.H / 32) % G1::KS || (s.I / 32) % G2::KS ||
      s.E > kPrologueThreads || s.M * s.H % 8)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the wide22 kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(quantize_route, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), BN, int(s.rows_max), n8);
  constexpr int sm1 = moe_wide16::gate_up_smem<G1>();
  auto* gk = moe_wide16n::gate_up<G1, NG1, STEP3, REV, true>;
  moe_wg8::allow_smem(gk, sm1);
  moe_rows8::launch_ex(gk, dim3(unsigned(s.tiles_max), unsigned(s.I / (G1::BM / 2))), dim3(G1::kThreads), sm1, true,
                       "wide22 gate_up", a, ws);
  if constexpr (SLICES) {
    const int ns = s.I <= 256 ? NS_SMALL : NS_LARGE;
    const int n_slices = int(s.H / G2::BM);
    const int sm2 = down_smem_for<G2>(int(s.I), BN);
    auto* dk = down_slices<G2, NG1, STEP3, REV, DEPD>;
    moe_pipeline::check(hipFuncSetAttribute(reinterpret_cast<const void*>(dk),
                                            hipFuncAttributeMaxDynamicSharedMemorySize, sm2),
                        "shared memory attribute");
    moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned((n_slices + ns - 1) / ns)), dim3(G2::kThreads),
                         size_t(sm2), DEPD, "wide22 down", a, ws, ns);
  } else {
    constexpr int sm2 = G2::kPipeBytes;
    auto* dk = moe_wide16n::down<G2, NG1, STEP3, REV, true>;
    moe_wg8::allow_smem(dk, sm2);
    moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), dim3(G2::kThreads), sm2, false,
                         "wide16n down", a, ws);
  }
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                       dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y), int64_t(a.cfg.bs),
                       int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}

// v22's configuration (docs/perf.md, section "moe_mxfp4 v22"). The path applies where v20 runs its 32-row tiles (bs x k /
// routed experts in (8, 40]) on an NVIDIA build with mma.sync.
using G1 = moe_wide16::Cfg<4, 2, 4, 8, 2>;      // v20's gate_up: 8 k-blocks x 2 stages, 3 blocks/SM
using G1W = moe_wide16::Cfg<4, 2, 4, 4, 2, 4>;  // 4 k-blocks x 2 stages, 4 blocks/SM (108 registers)
using G2 = DCfg<4, 2, 4, 4, 4, 3>;              // down_slices: 4 k-blocks x 4 stages, 4 blocks/SM at d_expert 256
using G2V = moe_wide16::Cfg<4, 2, 4, 4, 3>;     // v20's down

struct Path32 {
  static bool applies(const MoeConfig& c) {
    const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
    return pe > 8 && pe <= 40;
  }
  static size_t workspace_bytes(const MoeConfig& c) {
    return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
  }
  // Many gate_up blocks (>= ~2.5 waves of v20's 3 blocks/SM, E 257 bs 512): more resident warps win
  // (G1W); about one wave (E 33 bs 128): v20's deeper stages win. down_slices where it was measured to
  // win (d_expert 256); v20's down otherwise.
  static void launch(const MoeArgs& a) {
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 32);
    const bool many = s.tiles_max * (s.I / (G1::BM / 2)) >= 1000;
    if (many && s.I <= 256) moe_wide22::launch<32, G1W, G2, true, 2, true, true, false, 8, 4>(a);
    else if (many) moe_wide22::launch<32, G1W, G2V, false, 2, true, true, false, 8, 4>(a);
    else moe_wide22::launch<32, G1, G2V, false, 2, true, true, false, 8, 4>(a);
  }
};
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wide22
