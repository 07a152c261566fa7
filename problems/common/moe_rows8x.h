// moe_rows8w.h's 8-row chain (prologue, gate_up with per-tile ready counters, moe_rows8b::down_dyn taking
// work items as tiles finish, combine) with the gate_up on the integer mma.sync (m16n8k32 s8 x s8 -> s32)
// instead of f16 m16n8k16 (helper moe-rows8c, session 7; measured in docs/perf.md, section "moe_mxfp4 v26"):
//  - weights: a word of 8 e2m1 codes (one row, the lane's 8 k values) becomes two s8 operands by byte
//    permutes through the 8-entry table 2 x |value| = {0, 1, 2, 3, 4, 6, 8, 12}: pos = prmt(table, w)
//    (a negative code's selector has its sign bit set, so prmt writes the replicated sign of the table
//    byte, 0) and neg = prmt(table, w ^ 0x88888888) (the magnitudes of the negative codes, 0 for the
//    others): 7 integer ops a word (3 shifts / xors, 4 permutes) instead of the f16 decode's 11; the table's
//    low word comes from shared memory (OPQ), else ptxas copies it from a uniform register before most permutes;
//  - activations (X1): the prologue stores each 32-block as int8 q = 2 x value (1 byte a value, in the lane's
//    nibble order) with the scale word (s - 2) << 23; FOLD: a block with s in [-2, 1] is stored as
//    q x 2^(s + 2) (|q| <= 96) with the scale word of s = -2, and a gate_up block whose 8 tokens are all folded
//    uses that constant (one scale op per row and k-block, no scale words copied);
//  - per k-block: d = mma(pos, x) - mma(neg, x) (exact in int32: 4 x the sum of products), then
//    acc += float(d) x 2^(sw + sx - 2) in k order: the same value as the f16 form's d x 2^(sw + sx + 14), so the
//    output is v25's bit for bit;
//  - 5 stages of 8 k-blocks (11 KB each; the 1-byte activations make room for the fifth), 4 blocks/SM.
// Measured (H200, benchmark mode, one call, E257 bs16 / bs128 / E33 bs16, us): 117.1 / 258.2 / 84.5 against v25's
// 118.8 / 266.4 / 85.0. The gate_up kernel runs 9% fewer instructions than v25's f16 one at the same time (79.6
// us at E257 bs16): it waits on its copies, not on issue; the 1-byte activations and the fifth stage are
// what moved the end-to-end time. Options kept for measurement: OPQ, FOLD, X1 off (2-byte activations: the
// value and its negation, d = mma(pos, x) + mma(neg, -x)), 4 stages, 5 blocks/SM.
// Down, combine, the route and the ready counters are moe_rows8b's / moe_rows8w's.
// NVIDIA only (MOE_WG8_HOST).
#pragma once
#include <type_traits>

#include "problems/common/moe_rows8w.h"

namespace moe_rows8x {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_rows8b::Sync;
using moe_wg8::kLanes;
using moe_wg8::kThreads;

constexpr int kPrologueThreads = moe_rows8b::kPrologueThreads;
constexpr uint32_t kTabLo = 0x03020100u, kTabHi = 0x0C080604u;  // 2 x |e2m1 value| of codes 0-3, 4-7

inline size_t workspace8x(const MoeConfig& c) { return moe_rows8w::workspace8w(c); }

// gate_up stage layout: moe_wg8::F16Cfg<8, ST>'s (64 weight rows x 8 k-blocks, 8 activation rows) with the
// activations as 2 bytes a value (X1 false: the value and its negation, 16 bytes a lane and k-block) or 1 byte
// (X1 true: the value only; rows 288 bytes apart so that a half-warp's 8-byte loads hit distinct banks).
template <int ST_, bool X1>
struct S8Cfg {
  static constexpr int BM = 64, BN = 8, KS_ = 8, KS = 8, ST = ST_;
  static constexpr int kXBytes = X1 ? 1 : 2;  // bytes a value in ws.x8
  static constexpr int kXStride = X1 ? KS * 32 + 32 : KS * 64 + 64;
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS * 16;
  static constexpr int kX = kWs + BM * KS;
  static constexpr int kXs = kX + BN * kXStride;
  static constexpr int kStageBytes = kXs + BN * KS * 4;
  static constexpr int kPipeBytes = ST_ * kStageBytes;
};

__device__ inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t r;
#if defined(__CUDA_ARCH__)
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
#else
  r = 0;
#endif
  return r;
}

// int8 of 2 x the e2m1 value of code (sign bit 3).
__device__ inline int32_t code_i8(uint32_t code) {
  const int32_t m = int32_t((kTabLo | 0ull | (uint64_t(kTabHi) << 32)) >> (8 * (code & 7u)) & 0xffu);
  return (code & 8u) ? -m : m;
}

// moe_rows8w::quantize_route_w writing the s8 activation format (see the header comment). FOLD: a 32-block whose
// scale exponent s is in [kFoldR, kFoldR + 3] is stored as 2 x value x 2^(s - kFoldR) (|q| <= 96) with the scale word
// of s = kFoldR; one flag byte per (token, kLanes x 8 values) says whether any of its 32-blocks was not folded.
constexpr int kFoldR = -2;
template <bool FOLD, bool X1>
__global__ __launch_bounds__(kPrologueThreads) void quantize_route_x(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                     int64_t n8, int* sync_base, int n_sync, float* row_w,
                                                                     int* flag, uint8_t* unfolded) {
  extern __shared__ int smem_route_x[];
  const int tid = threadIdx.x;
  if (blockIdx.x == 0) {
    if (tid == 0) {
      *flag = 0;
      __threadfence();
    }
    __syncthreads();
    moe_wg8::dep_release();
    constexpr int tile_rows = 8;
    for (int i = tid; i < n_sync; i += blockDim.x) sync_base[i] = 0;
    moe_tiled::route_block(a, ws, P, E, tile_rows, rows_max, tid, smem_route_x, [&](int r) { row_w[r] = 0.0f; },
                           [&](int r, int p) { row_w[r] = a.topk_weights[p]; });
    __threadfence();
    __syncthreads();
    if (tid == 0) atomicExch(flag, 1);
    return;
  }
  moe_wg8::dep_release();
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  const bool fold = FOLD && s >= kFoldR && s <= kFoldR + 3;
  const int sh = fold ? s - kFoldR : 0;
  uint32_t pos[2] = {0u, 0u}, neg[2] = {0u, 0u};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int32_t q = code_i8(moe_wg8::e2m1_code(v[k], mul)) * (1 << sh);
    pos[k / 4] |= (uint32_t(q) & 0xffu) << (8 * (k % 4));
    neg[k / 4] |= (uint32_t(-q) & 0xffu) << (8 * (k % 4));
  }
  if constexpr (X1) reinterpret_cast<uint2*>(ws.x8)[i] = make_uint2(pos[0], pos[1]);
  else reinterpret_cast<uint4*>(ws.x8)[i] = make_uint4(pos[0], pos[1], neg[0], neg[1]);
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = int32_t(uint32_t((fold ? kFoldR : s) - 2) << 23);
  if constexpr (FOLD) {  // n8 is a multiple of the warp's lanes (H / 8 is)
    const unsigned any = __ballot_sync(0xffffffffu, !fold);
    if (i % kLanes == 0) unfolded[i / kLanes] = any != 0u;
  }
}

#if defined(__CUDA_ARCH__)
__device__ inline void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
#endif

// d = A (16 x 32 s8) x B (32 x 8 s8) + c, int32. Fragments as moe_mma's m16n8k32 comment.
__device__ inline void mma_s8(int32_t d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, const int32_t c[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
#else
  d[0] = c[0];
  d[1] = c[1];
  d[2] = c[2];
  d[3] = c[3];
#endif
}

// moe_rows8w::gate_up_f16w<C, MINB, FOLD = false, LDSM = true, PRE = true> on the s8 MMA (header comment).
// grid (I / 32, tiles_max). C: S8Cfg<ST, X1>.
// OPQ: the table word 0x03020100 read from shared memory once a thread, so that it lives in one register
// (as a constant, ptxas keeps it in a uniform register and copies it into a register before most permutes: 35
// IMAD.U32 a stage in call 2's SASS; 52 with an empty asm volatile around it in call 3).
// FOLD: blocks whose 8 tokens are all folded (quantize_route_x<true>) use the scale word of kFoldR: one scale
// op per (row, k-block) and no activation scale words.
// X1 (C::kXBytes == 1): one byte an activation; the negative weights' product is taken against x and subtracted
// (d = mma(pos, x) - mma(neg, x): 4 integer subtractions a k-block for half the activation bytes).
template <class C, int MINB, bool OPQ = false, bool FOLD = false>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_s8(MoeArgs a, Workspace ws, Sync sy, const int* flag) {
  static_assert(C::KS_ % 2 == 0, "ldmatrix.x4 reads two k-blocks");
  extern __shared__ __align__(128) uint8_t smem_s8x[];
  uint8_t* smem = smem_s8x;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ int token_s[C::BN];
  __shared__ int2 tile_sh;
  __shared__ volatile uint32_t tab_sh;
  const int tile_index = int(blockIdx.y);
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = blockIdx.x * kHalf;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes, g = lane / 4, t = lane % 4;
  if (tid == 0) {
    tab_sh = kTabLo;
    while (moe_wg8::ld_acquire_gpu(flag) == 0) __nanosleep(64);
    const int nt = __ldcg(ws.n_tiles);
    tile_sh = tile_index < nt ? __ldcg(reinterpret_cast<const int2*>(ws.tiles) + tile_index) : make_int2(-1, 0);
  }
  __syncthreads();
  if (tile_sh.x < 0) return;
  const Tile tile{tile_sh.x, tile_sh.y};
  for (int i = tid; i < C::BM / 16; i += kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  __syncthreads();
  const uint8_t* wbase = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* sbase = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#if defined(__CUDA_ARCH__)
  const int nk = KB / KS;
  const uint32_t rg_bytes = uint32_t(H / 64) * 512u;
  uint32_t woff[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) woff[j] = uint32_t(rg[j]) * rg_bytes + tid * 16;
  const uint32_t soff = (uint32_t(rg[(tid % 64) / 16]) * 16 + tid % 16) * uint32_t(KB);
  auto load_w = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint8_t* wb = wbase + kb0 * 256;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      moe_tile::cp_async<16>(st + C::kW + j * KS * 256 + tid * 16, wb + woff[j]);
    }
    if (tid < 64) moe_tile::cp_async<KS>(st + C::kWs + tid * KS, sbase + soff + kb0);
  };
#pragma unroll
  for (int s = 0; s < C::ST - 1; ++s)
    if (s < nk) load_w(s, s * KS);
  moe_wg8::dep_wait();
  moe_wg8::dep_release();
#endif
  for (int c = tid; c < C::BN; c += kThreads) {
    const int p = __ldcg(ws.sorted_pair + tile.row0 + c);
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * C::kXBytes;
    xsrow[c] = ws.xs + token * KB * 4;
    token_s[c] = int(token);
  }
  __syncthreads();
  bool folded = false;
  if constexpr (FOLD) {
    const int fpt = H / (8 * kLanes);  // flag bytes a token
    int unf = 0;
    for (int i = tid; i < C::BN * fpt; i += kThreads) unf |= sy.unfolded[int64_t(token_s[i / fpt]) * fpt + i % fpt];
    folded = __syncthreads_or(unf) == 0;
  }
#if defined(__CUDA_ARCH__)
  const uint32_t tab_lo = OPQ ? tab_sh : kTabLo;
  constexpr int kXChunks = C::kXBytes;  // 16-byte activation chunks a thread and stage (8 rows x KS x 32 x bytes)
  constexpr int kRowChunks = KS * 2 * C::kXBytes;
  const uint8_t* xsrc[kXChunks];
  int xdst[kXChunks];
#pragma unroll
  for (int j = 0; j < kXChunks; ++j) {
    const int i = tid + kThreads * j, c = i / kRowChunks, ch = i % kRowChunks;
    xsrc[j] = xrow[c] + ch * 16;
    xdst[j] = C::kX + c * C::kXStride + ch * 16;
  }
  const uint8_t* xssrc = xsrow[(tid / 2) % 8] + (tid % 2) * 16;
  const int xsdst = C::kXs + ((tid / 2) % 8) * KS * 4 + (tid % 2) * 16;
  const uint32_t a_ldsm = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) +
                          uint32_t(C::kW + warp * KS * 256 + (lane / 16) * 256 + ((lane / 8) % 2) * 128 + (lane % 8) * 16);
  const int ws_off = C::kWs + (warp * 16 + g) * KS;
  const int b_off = C::kX + g * C::kXStride + 8 * C::kXBytes * t;
  const int xs_off = C::kXs + 2 * t * KS * 4;
  auto run = [&](auto fold_tag) {
  constexpr bool F = decltype(fold_tag)::value;
  auto load_x = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
#pragma unroll
    for (int j = 0; j < kXChunks; ++j) moe_tile::cp_async<16>(st + xdst[j], xsrc[j] + kb0 * 32 * C::kXBytes);
    if (!F && tid < 16) moe_tile::cp_async<16>(st + xsdst, xssrc + kb0 * 4);
  };
  auto compute = [&](int slot) {
    const uint8_t* st = smem + slot * C::kStageBytes;
    const uint2 wg0 = *reinterpret_cast<const uint2*>(st + ws_off);
    const uint2 wg8 = *reinterpret_cast<const uint2*>(st + ws_off + 8 * KS);
    const uint32_t wsw[2][2] = {{wg0.x, wg0.y}, {wg8.x, wg8.y}};
    int32_t xsw[2][KS];
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int q = 0; q < KS / 4; ++q) {
        constexpr int32_t kF = int32_t(uint32_t(kFoldR - 2) << 23);
        int4 v = make_int4(kF, kF, kF, kF);
        if constexpr (!F) v = *reinterpret_cast<const int4*>(st + xs_off + c * KS * 4 + q * 16);
        xsw[c][4 * q] = v.x;
        xsw[c][4 * q + 1] = v.y;
        xsw[c][4 * q + 2] = v.z;
        xsw[c][4 * q + 3] = v.w;
      }
    uint32_t wpair[4];
#pragma unroll
    for (int u = 0; u < KS; ++u) {
      if (u % 2 == 0) ldsm_x4(a_ldsm + uint32_t(slot * C::kStageBytes + u * 256), wpair);
      const uint32_t w0 = wpair[2 * (u % 2)], w1 = wpair[2 * (u % 2) + 1];  // rows g, g + 8
      const uint32_t f0 = w0 ^ 0x88888888u, f1 = w1 ^ 0x88888888u;
      const uint32_t ap[4] = {prmt(tab_lo, kTabHi, w0), prmt(tab_lo, kTabHi, w1), prmt(tab_lo, kTabHi, w0 >> 16),
                              prmt(tab_lo, kTabHi, w1 >> 16)};
      const uint32_t an[4] = {prmt(tab_lo, kTabHi, f0), prmt(tab_lo, kTabHi, f1), prmt(tab_lo, kTabHi, f0 >> 16),
                              prmt(tab_lo, kTabHi, f1 >> 16)};
      const int32_t zero[4] = {0, 0, 0, 0};
      int32_t h[4], d[4];
      if constexpr (C::kXBytes == 1) {
        const uint2 bv = *reinterpret_cast<const uint2*>(st + b_off + u * 32);
        int32_t e[4];
        mma_s8(h, ap, bv.x, bv.y, zero);
        mma_s8(e, an, bv.x, bv.y, zero);
#pragma unroll
        for (int i = 0; i < 4; ++i) d[i] = h[i] - e[i];
      } else {
        const uint4 bv = *reinterpret_cast<const uint4*>(st + b_off + u * 64);
        mma_s8(h, ap, bv.x, bv.y, zero);
        mma_s8(d, an, bv.z, bv.w, h);
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint32_t bw = __byte_perm(wsw[r][u / 4], 0u, 0x4440u + (u % 4));
#pragma unroll
        for (int c = 0; c < 2; ++c)
          acc[2 * r + c] =
              fmaf(float(d[2 * r + c]), __int_as_float(int32_t(bw << 23) + xsw[c][u]), acc[2 * r + c]);
      }
    }
  };
#pragma unroll
  for (int s = 0; s < C::ST - 1; ++s) {
    if (s < nk) load_x(s, s * KS);
    moe_tile::cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    moe_tile::cp_wait<C::ST - 2>();
    __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
    const int next = ks + C::ST - 1;
    if (next < nk) {
      load_w(next % C::ST, next * KS);
      load_x(next % C::ST, next * KS);
    }
    moe_tile::cp_commit();
    compute(ks % C::ST);
  }
  moe_tile::cp_wait<0>();
  };
  if (FOLD && folded) run(std::true_type{});
  else run(std::false_type{});
#else
  (void)wbase, (void)sbase, (void)lane, (void)warp, (void)g, (void)t, (void)folded;
#endif
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]
  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 4; ++i) tile_f[(2 * t + (i & 1)) * kStride + warp * 16 + g + 8 * (i >> 1)] = acc[i];
  __syncthreads();
  moe_wg8::swiglu_requant<C::BN, kHalf, kThreads>(tile_f, kStride, tile, n0, I, ws);
  __threadfence();  // this thread's a8 / as stores, before the block's signal
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(sy.ready + tile_index, 1);
}

// The chain: prologue (route + s8 quantize + counters + route flag), gate_up_s8 (FC, MINB, OPQ, FOLD; dependent),
// moe_rows8b::down_dyn (G2; dependent; as many blocks as fit), moe_rows8::combine (dependent).
template <class FC, int MINB, class G2, bool OPQ = false, bool FOLD = false>
void launch8x(const MoeArgs& a) {
  constexpr int AHEAD = 2;
  if (a.workspace_size < workspace8x(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const Sync sy = moe_rows8b::sync_of(a.cfg, a.workspace);
  int* flag = moe_rows8w::route_flag(a.cfg, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (!moe_rows8w::supports8w<FC, G2>(a.cfg))
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(quantize_route_x<FOLD, FC::kXBytes == 1>, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), int(s.rows_max), n8, sy.ready, int(s.tiles_max + 1), sy.row_w, flag, sy.unfolded);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_s8<FC, MINB, OPQ, FOLD>, sm1);
  moe_rows8::launch_ex(gate_up_s8<FC, MINB, OPQ, FOLD>, dim3(unsigned(s.I / 32), unsigned(s.tiles_max)), dim3(kThreads), sm1,
                       true, "s8 gate_up", a, ws, sy, static_cast<const int*>(flag));
  moe_wg8::allow_smem(moe_rows8b::down_dyn<G2, AHEAD>, sm2);
  int64_t grid = moe_rows8b::dyn_slots<G2, AHEAD>(sm2);
  grid = std::min<int64_t>(grid, s.tiles_max * (s.H / G2::BM));
  moe_rows8::launch_ex(moe_rows8b::down_dyn<G2, AHEAD>, dim3(unsigned(grid)), dim3(kThreads), sm2, true, "wgmma down", a,
                       ws, sy);
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                       dim3(kCombineThreads), 0, true, "combine", static_cast<const moe_pipeline::YElem*>(ws.y), int64_t(a.cfg.bs),
                       int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}

// The 8-row path on the s8 gate_up: moe_rows8w::Rows8Path's shapes and down. Defaults: v26's configuration
// (5 stages, 4 blocks/SM, OPQ, FOLD, 1-byte activations).
template <int ST = 5, int MINB = 4, bool OPQ = true, bool FOLD = true, bool X1 = true>
struct Rows8XPath {
  using FC = S8Cfg<ST, X1>;
  using G2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;  // v15's 8-row down
  static bool applies(const MoeConfig& c) {
    return c.bs * c.n_experts_per_token / c.n_routed_experts <= 8 && c.d_expert <= 512 &&
           moe_rows8w::supports8w<FC, G2>(c);
  }
  static size_t workspace_bytes(const MoeConfig& c) { return workspace8x(c); }
  static void launch(const MoeArgs& a) { launch8x<FC, MINB, G2, OPQ, FOLD>(a); }
};
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_rows8x
