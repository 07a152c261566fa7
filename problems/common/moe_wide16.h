// 32- and 64-row MoE tiles (bs x k / routed experts > 8: E 257 bs 512, E 33 bs 128 / 512, d 2048) with
// fewer instructions per weight byte than v11/v12's bf16-folded block GEMM (moe_tile_gemm.h mainloop):
//  - the same bf16-folded operands and MMAs (bf16 mma.sync m16n8k16 accumulating the whole K; weight
//    e2m1 x e8m0 and activation e2m1 x e8m0 are exact bf16, their products exact in fp32), the same
//    decode instructions per word and the same k order, so the output is v12's bit for bit;
//  - weight scales read once a stage as 32/64-bit words (4 / 8 k-blocks a row) instead of one LDS.U8,
//    compare, select and multiply per word and k-block: the bf16x2 multiplier 2^(b - 1) | 2^(b - 1) is
//    one byte permute and one multiply-add of the scale byte b;
//  - the rare scale b > 128 (2^(126 + s) not a normal bf16: two multiplies) is detected per stage by
//    each thread on the scale row it copied itself, folded into the stage barrier (__syncthreads_or),
//    and such a stage runs v11's per-word decode (block-uniform branch, so mma.sync stays converged);
//  - copies with 32-bit per-thread source offsets computed once per block (per stage: one base pointer
//    per operand and one add per 16-byte chunk; destinations are linear in the thread index);
//  - no activation scale copies (folded), no activation scale bytes written by gate_up.
// Quantizer and route are moe_wg8's (branch-free quantizer, 1024-thread route).
#pragma once
#include <string>
#include <utility>

#include "problems/common/moe_wg8.h"

namespace moe_wide16 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;

#if defined(MOE_WG8_HOST)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;
constexpr int kLanes = moe_tile::kMmaLanes;

// WM warps (WN = 1), each MT 16-row groups x NG 8-column groups; KS k-blocks a stage (4 or 8); MIN_BLOCKS
// blocks per SM for the register budget.
template <int WM_, int MT_, int NG_, int KS_, int STAGES_, int MIN_BLOCKS_ = 1>
struct Cfg {
  static constexpr int WM = WM_, MT = MT_, NG = NG_, KS = KS_, STAGES = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kThreads = WM * kLanes;
  static constexpr int BM = WM * MT * 16, BN = NG * 8;
  static constexpr int kXRow = KS * 32 * 2;           // bf16 activation bytes of one row per stage
  static constexpr int kXStride = kXRow + 64;         // padded: B loads free of bank conflicts
  static constexpr int kXChunks = kXRow / 16;         // 16-byte chunks of a row per stage
  static constexpr int kW = 0;                        // [BM/16 groups][KS][256]
  static constexpr int kWs = kW + BM * KS * 16;       // [BM][KS] scale bytes
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kStageBytes = kX + BN * kXStride;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr int kWPer = BM * KS / kThreads;    // weight chunks a thread per stage
  static constexpr int kSPer = BM / kThreads;         // scale rows a thread per stage
  static constexpr int kXPer = BN * kXChunks / kThreads;
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
  static_assert(BM * KS % kThreads == 0 && BM % kThreads == 0 && BN * kXChunks % kThreads == 0, "copy split");
  static_assert(kThreads % kXChunks == 0, "activation chunk column fixed per thread");
};

// True when any of the KS scale bytes at p is > 128.
template <int KS>
__device__ inline bool any_wide(const uint8_t* p) {
  uint32_t f = 0;
#pragma unroll
  for (int i = 0; i < KS / 4; ++i) {
    const uint32_t v = reinterpret_cast<const uint32_t*>(p)[i];
    f |= v & ((v & 0x7F7F7F7Fu) + 0x7F7F7F7Fu);  // bit 7 set and some bit 0-6 set, per byte
  }
  return (f & 0x80808080u) != 0;
}

// Bf16Folded::decode for b <= 128 with the multiplier given (m1 = bf16x2 2^(b - 1)).
__device__ inline void decode_fast(uint32_t w, uint32_t m1, uint32_t q[4]) {
  const uint32_t sh[4] = {w << 6, w << 2, w >> 2, w >> 6};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t y = sh[k] & 0x03C003C0u;
    q[k] = Bf16Folded::mul_bf16x2(y + (y & 0x02000200u) * 63u, m1);
  }
}

template <int U>
__device__ inline uint32_t mult_of(uint32_t word) {  // bf16x2 2^(b - 1), b = byte U % 4 of word
  constexpr uint32_t sel = 0x4040u | uint32_t(U % 4) * 0x0101u;
  return __byte_perm(word, 0u, sel) * 128u + 0x3F003F00u;
}

// acc = A (BM weight rows of the 16-row groups rg[]) x B (BN activation rows at x + xoff[c]), fp32.
// w: the expert's shuffled weights; wsc: its raw [rows, KB] scales; x: the activation buffer (bf16
// folded, row offsets in bytes from x). rg and xoff are in shared memory and ready before the call.
template <class C>
__device__ inline void mainloop(const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, const int* rg,
                                const uint32_t* xoff_row, uint8_t* smem, float (&acc)[C::MT][C::NG][4]) {
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
  constexpr int kXRowsPer = C::kThreads / C::kXChunks;  // rows covered by one pass of the block
#pragma unroll
  for (int n = 0; n < C::kXPer; ++n) xoff[n] = xoff_row[xc0 + n * kXRowsPer] + uint32_t(xch) * 16u;

#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;

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
  };

  auto body = [&](const uint8_t* st, auto slow_tag) {
    constexpr bool kSlow = decltype(slow_tag)::value;
    uint32_t sw[C::MT][2][C::KS / 4];  // scale words of rows g and g + 8 of each group
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
      Bf16Folded::A a[C::MT];
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
          decode_fast(w0, mult_of<u>(sw[m][0][u / 4]), lo);
          decode_fast(w1, mult_of<u>(sw[m][1][u / 4]), hi);
        }
        a[m] = Bf16Folded::A{{{lo[0], hi[0], lo[1], hi[1]}, {lo[2], hi[2], lo[3], hi[3]}}};
      }
#pragma unroll
      for (int j = 0; j < C::NG; ++j) {
        const Bf16Folded::B b = Bf16Folded::load_b(st + C::kX + (j * 8 + g) * C::kXStride + (u * 32 + 8 * t) * 2);
#pragma unroll
        for (int m = 0; m < C::MT; ++m) Bf16Folded::kblock_acc(acc[m][j], a[m], b);
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
    cp_wait<C::STAGES - 2>();  // this thread's copies of stage ks landed (and are visible to it)
    const uint8_t* st = smem + (ks % C::STAGES) * C::kStageBytes;
    bool wide = false;
#pragma unroll
    for (int n = 0; n < C::kSPer; ++n) wide |= any_wide<C::KS>(st + C::kWs + (tid + n * C::kThreads) * C::KS);
    // stage ks landed for every thread; stage ks - 1 is no longer read; any scale > 128 in the stage
    const bool slow = __syncthreads_or(wide) != 0;
    const int next = ks + C::STAGES - 1;
    if (next < nk) load(next % C::STAGES, next * C::KS);
    cp_commit();
    if (slow) body(st, std::true_type{});
    else body(st, std::false_type{});
  }
  cp_wait<0>();
}

// Row (local weight row) and column (local activation column) of accumulator element i of (m, j).
template <class C>
struct AccIndex {
  int row0, col0;
  __device__ AccIndex() {
    const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
    row0 = warp * C::MT * 16 + lane / 4;
    col0 = 2 * (lane % 4);
  }
  __device__ int row(int m, int i) const { return row0 + m * 16 + 8 * (i >> 1); }
  __device__ int col(int j, int i) const { return col0 + j * 8 + (i & 1); }
};

template <class C>
constexpr int gate_up_smem() {
  return C::kPipeBytes > C::BN * (C::BM + 4) * 4 ? C::kPipeBytes : C::BN * (C::BM + 4) * 4;
}

// Stage 1. grid (tiles_max, I / (BM / 2)): BM/2 gate + BM/2 up rows x BN sorted rows, SwiGLU, bf16
// rounding, dynamic MXFP4 requantization into bf16-folded a (moe_tiled::gate_up's epilogue).
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  if (int(blockIdx.x) >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[blockIdx.x];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = threadIdx.x; c < C::BN; c += C::kThreads) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const uint32_t token = p >= 0 ? uint32_t(p / T) : 0u;  // padding rows borrow token 0; never written back
    xoff[c] = token * uint32_t(H) * 2u;
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
              a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, ws.x8, KB, rg, xoff, smem, acc);
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]

  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  const AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile_f[ix.col(j, i) * kStride + ix.row(m, i)] = acc[m][j][i];
  __syncthreads();

  constexpr int kB = mxfp4::kBlock, kGroups = C::BN * (kHalf / kB);
  const int lane = threadIdx.x % kB;
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float xv = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~7) + Bf16Folded::position(n & 7);
    const uint32_t bits = Bf16Folded::encode(mxfp4::quantize_dynamic_code(xv, s), s);
    reinterpret_cast<uint16_t*>(ws.a8)[row * I + col] = uint16_t(bits);
  }
}

// Stage 2. grid (tiles_max, H / BM): y[pair, n] = weight * (a W_down^T).
template <class C>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
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
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  __syncthreads();
  float acc[C::MT][C::NG][4];
  mainloop<C>(a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2),
              a.down_weight_scale + int64_t(tile.expert) * H * KB, ws.a8, KB, rg, xoff, smem, acc);

  moe_tiled::store_weighted_rows<C>(AccIndex<C>(), acc, pair, weight, ws.y, H, n0);
}

// After quantize(ws, s) has queued the activations: route (1024 threads), the two GEMM stages (the
// kernels gate_up_k on G1, down_k on G2), combine. name: the kernels' family, for messages.
template <int BN, class G1, class G2, class Quantize>
void launch_stages(const MoeArgs& a, Quantize&& quantize, void (*gate_up_k)(MoeArgs, Workspace),
                   void (*down_k)(MoeArgs, Workspace), const std::string& name) {
  static_assert(G1::BN == BN && G2::BN == BN, "plan");
  moe_pipeline::require_workspace(a, BN, Bf16Folded::kActBytes);
  Workspace ws;
  moe_pipeline::carve(a.cfg, BN, a.workspace, &ws, Bf16Folded::kActBytes);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BN);
  if (s.I % (G1::BM / 2) || s.I % 32 || s.H % G2::BM || (s.H / 32) % G1::KS || (s.I / 32) % G2::KS || s.E > 1024)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the " + name + " kernels");
  quantize(ws, s);
  moe_pipeline::check(hipGetLastError(), "quantize hidden");
  moe_wg8::route(a, ws, BN);
  constexpr int sm1 = gate_up_smem<G1>(), sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_k, sm1);
  moe_wg8::allow_smem(down_k, sm2);
  gate_up_k<<<dim3(unsigned(s.tiles_max), unsigned(s.I / (G1::BM / 2))), G1::kThreads, sm1>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), (name + " gate_up").c_str());
  down_k<<<dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), G2::kThreads, sm2>>>(a, ws);
  moe_pipeline::check(hipGetLastError(), (name + " down").c_str());
  moe_pipeline::launch_combine(a, ws);
}

// moe_wg8's branch-free quantizer (bf16-folded activations), then launch_stages on this header's kernels.
template <int BN, class G1, class G2>
void launch(const MoeArgs& a) {
  constexpr int kQuantThreads = 256;
  launch_stages<BN, G1, G2>(
      a,
      [&](const Workspace& ws, const moe_pipeline::Sizes& s) {
        const int64_t n8 = s.M * s.H / 8;
        moe_wg8::quantize_hidden8<Bf16Folded><<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(
            a.hidden_states, n8, ws.x8, ws.xs);
      },
      gate_up<G1>, down<G2>, "wide16");
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wide16
