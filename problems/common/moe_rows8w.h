// moe_rows8b.h's 8-row chain (v19 / v20: prologue, f16 gate_up with per-tile ready counters, down_dyn taking
// work items as tiles finish, combine) with two changes to the gate_up (measured in docs/perf.md, section "moe_mxfp4 v21"):
//  - PRE: the first STAGES - 1 stages of weights and weight scales are copied before the dependent-launch
//    wait. The prologue's route block zeroes a route-done flag before it lets the dependent gate_up grid be
//    scheduled, and sets it (after a fence) once the tiles, pair list and counters are written; a gate_up
//    block waits for the flag (one thread, acquire), reads its tile, issues its weight copies, and only then
//    waits for the prologue grid (the quantized activations). The weights of the first wave are copied while the
//    prologue quantizes;
//  - LDSM: the A words of two k-blocks (rows g, g + 8 of k-blocks u, u + 1) by one ldmatrix.x4 instead of four
//    32-bit shared loads.
// Measured (H200, benchmark mode, one call; E257 bs16 / bs128 / E33 bs16, us): both 118.7 / 265.8 / 85.5 against
// v20's 118.2 / 267.3 / 91.5; in a second call LDSM alone 119.0 / 263.2 / 86.1, PRE alone 119.9 / 271.1 / 87.2,
// neither 119.7 / 268.4 / 87.0: LDSM gains a little at bs128, PRE nothing measurable; most of the E33 bs16 gain is
// the overlapped chain itself (v20 ran v16's chain there).
// Everything else is moe_rows8b's code (quantizer with FOLD, gate_up_f16b's mainloop and epilogue, down_dyn,
// combine): the same products in the same order, so the output is v19 / v20's bit for bit.
// A wgmma e4m3 form of this gate_up (and a down with a rotated copy plan) measured 2.3x slower; its code is
// in the commit that first added this file.
// NVIDIA only (MOE_WG8_HOST).
#pragma once
#include <type_traits>

#include "problems/common/moe_rows8b.h"

namespace moe_rows8w {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_rows8b::Sync;
using moe_wg8::kLanes;
using moe_wg8::kThreads;

constexpr int kPrologueThreads = moe_rows8b::kPrologueThreads;

// moe_rows8b's workspace, then the route-done flag.
inline size_t workspace8w(const MoeConfig& c) { return moe_rows8b::workspace8b(c) + 256; }
inline int* route_flag(const MoeConfig& c, void* base) {
  return reinterpret_cast<int*>(static_cast<char*>(base) + moe_rows8b::workspace8b(c));
}

// moe_rows8b::quantize_route_b<FOLD> plus the route-done flag: block 0 zeroes it before its dependent-launch
// release (so no gate_up block can see the previous call's value) and sets it after the route's writes.
template <bool FOLD>
__global__ __launch_bounds__(kPrologueThreads) void quantize_route_w(MoeArgs a, Workspace ws, int P, int E, int rows_max,
                                                                     int64_t n8, int* sync_base, int n_sync,
                                                                     uint8_t* unfolded, float* row_w, int* flag) {
  extern __shared__ int smem_route_w[];
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
    moe_tiled::route_block(a, ws, P, E, tile_rows, rows_max, tid, smem_route_w, [&](int r) { row_w[r] = 0.0f; },
                           [&](int r, int p) { row_w[r] = a.topk_weights[p]; });
    __threadfence();  // this thread's route writes, before the block's flag
    __syncthreads();
    if (tid == 0) atomicExch(flag, 1);
    return;
  }
  moe_wg8::dep_release();
  using D = moe_tile::F16Decode;
  const int64_t i = int64_t(blockIdx.x - 1) * blockDim.x + tid;
  float v[8];
  const int s = moe_tiled::hidden8_block_scale(a.hidden_states, i, n8, v);
  if (i >= n8) return;
  const float mul = numerics::exp2_f32(-s);
  const bool fold = FOLD && s >= -13 && s <= 13;
  uint32_t out[4] = {};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int pos = D::position(k);
    const uint32_t code = moe_wg8::e2m1_code(v[k], mul);
    const uint32_t h = fold ? moe_rows8b::encode_folded(code, s) : D::encode(code, s);
    out[pos / 2] |= h << (16 * (pos % 2));
  }
  reinterpret_cast<uint4*>(ws.x8)[i] = make_uint4(out[0], out[1], out[2], out[3]);
  if (i % 4 == 0) reinterpret_cast<int32_t*>(ws.xs)[i / 4] = int32_t(uint32_t((fold ? 0 : s) + 14) << 23);
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

// moe_rows8b::gate_up_f16b<C, MINB, FOLD> with PRE and LDSM (see the header comment). grid (I / 32, tiles_max).
template <class C, int MINB, bool FOLD = true, bool LDSM = true, bool PRE = true>
__global__ __launch_bounds__(kThreads, MINB) void gate_up_f16w(MoeArgs a, Workspace ws, Sync sy, const int* flag) {
  static_assert(!LDSM || C::KS_ % 2 == 0, "ldmatrix.x4 reads two k-blocks");
  extern __shared__ __align__(128) uint8_t smem_f16w[];
  uint8_t* smem = smem_f16w;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ int token_s[C::BN];
  __shared__ int2 tile_sh;
  const int tile_index = int(blockIdx.y);
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = blockIdx.x * kHalf;
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes, g = lane / 4, t = lane % 4;
  if constexpr (PRE) {
    if (tid == 0) {
      while (moe_wg8::ld_acquire_gpu(flag) == 0) __nanosleep(64);
      const int nt = __ldcg(ws.n_tiles);
      tile_sh = tile_index < nt ? __ldcg(reinterpret_cast<const int2*>(ws.tiles) + tile_index) : make_int2(-1, 0);
    }
    __syncthreads();
  } else {
    moe_wg8::dep_wait();
    moe_wg8::dep_release();
    if (tid == 0)
      tile_sh = tile_index < *ws.n_tiles ? *(reinterpret_cast<const int2*>(ws.tiles) + tile_index) : make_int2(-1, 0);
    __syncthreads();
  }
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
    for (int j = 0; j < 4; ++j) moe_tile::cp_async<16>(st + C::kW + j * KS * 256 + tid * 16, wb + woff[j]);
    if (tid < 64) moe_tile::cp_async<KS>(st + C::kWs + tid * KS, sbase + soff + kb0);
  };
  if constexpr (PRE) {  // before the wait for the prologue grid: the weights do not depend on it
#pragma unroll
    for (int s = 0; s < C::ST - 1; ++s)
      if (s < nk) load_w(s, s * KS);
    moe_wg8::dep_wait();
    moe_wg8::dep_release();
  }
#endif
  for (int c = tid; c < C::BN; c += kThreads) {
    const int p = __ldcg(ws.sorted_pair + tile.row0 + c);
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * 2;
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
  const uint8_t* xsrc[2];
  int xdst[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int i = tid + kThreads * j, c = i / (KS * 4), ch = i % (KS * 4);
    xsrc[j] = xrow[c] + ch * 16;
    xdst[j] = C::kX + c * C::kXStride + ch * 16;
  }
  const uint8_t* xssrc = xsrow[(tid / 2) % 8] + (tid % 2) * 16;
  const int xsdst = C::kXs + ((tid / 2) % 8) * KS * 4 + (tid % 2) * 16;
  const int a_off = C::kW + warp * KS * 256 + 4 * lane;
  // ldmatrix.x4 row addresses: lane i gives row i % 8 of matrix i / 8 = (k-block + i / 16, rows 8 ((i / 8) % 2) ..).
  const uint32_t a_ldsm = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) +
                          uint32_t(C::kW + warp * KS * 256 + (lane / 16) * 256 + ((lane / 8) % 2) * 128 + (lane % 8) * 16);
  const int ws_off = C::kWs + (warp * 16 + g) * KS;
  const int b_off = C::kX + g * C::kXStride + 16 * t;
  const int xs_off = C::kXs + 2 * t * KS * 4;
  auto run = [&](auto fold_tag) {
    constexpr bool F = decltype(fold_tag)::value;
    auto load_x = [&](int slot, int kb0) {
      uint8_t* st = smem + slot * C::kStageBytes;
#pragma unroll
      for (int j = 0; j < 2; ++j) moe_tile::cp_async<16>(st + xdst[j], xsrc[j] + kb0 * 64);
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
          int4 v = make_int4(14 << 23, 14 << 23, 14 << 23, 14 << 23);
          if constexpr (!F) v = *reinterpret_cast<const int4*>(st + xs_off + c * KS * 4 + q * 16);
          xsw[c][4 * q] = v.x;
          xsw[c][4 * q + 1] = v.y;
          xsw[c][4 * q + 2] = v.z;
          xsw[c][4 * q + 3] = v.w;
        }
      uint32_t wpair[4];
#pragma unroll
      for (int u = 0; u < KS; ++u) {
        uint32_t w0, w1;
        if constexpr (LDSM) {
          if (u % 2 == 0) ldsm_x4(a_ldsm + uint32_t(slot * C::kStageBytes + u * 256), wpair);
          w0 = wpair[2 * (u % 2)];
          w1 = wpair[2 * (u % 2) + 1];
        } else {
          const uint8_t* p = st + a_off + u * 256;
          w0 = *reinterpret_cast<const uint32_t*>(p);
          w1 = *reinterpret_cast<const uint32_t*>(p + 128);
        }
        uint32_t lo[4], hi[4];
        moe_wg8::decode_f16(w0, lo);
        moe_wg8::decode_f16(w1, hi);
        const uint4 bv = *reinterpret_cast<const uint4*>(st + b_off + u * 64);
        const uint32_t a1[4] = {lo[0], hi[0], lo[1], hi[1]}, a2[4] = {lo[2], hi[2], lo[3], hi[3]};
        const uint32_t b1[2] = {bv.x, bv.y}, b2[2] = {bv.z, bv.w};
        const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float h[4], d[4];
        moe_mma::mma_f16_16x8x16(h, a1, b1, zero);
        moe_mma::mma_f16_16x8x16(d, a2, b2, h);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const uint32_t bw = __byte_perm(wsw[r][u / 4], 0u, 0x4440u + (u % 4));
#pragma unroll
          for (int c = 0; c < 2; ++c)
            acc[2 * r + c] = fmaf(d[2 * r + c], __int_as_float(int32_t(bw << 23) + xsw[c][u]), acc[2 * r + c]);
        }
      }
    };
#pragma unroll
    for (int s = 0; s < C::ST - 1; ++s) {
      if (s < nk) {
        if constexpr (!PRE) load_w(s, s * KS);
        load_x(s, s * KS);
      }
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
  (void)wbase, (void)sbase, (void)lane, (void)warp, (void)folded;
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

// Whether launch8w<FC, *, G2> runs this shape (moe_rows8b::supports8b's conditions).
template <class FC, class G2>
bool supports8w(const MoeConfig& c) {
  return moe_rows8b::supports8b<FC, G2>(c);
}

// The chain: prologue (route + quantize + counters + route flag), gate_up_f16w (FC, MINB; dependent),
// moe_rows8b::down_dyn (G2; dependent; as many blocks as fit), moe_rows8::combine (dependent): moe_rows8b::
// launch8b<FC, MINB, G2, 0, true> with this gate_up.
template <class FC, int MINB, class G2, bool LDSM = true, bool PRE = true>
void launch8w(const MoeArgs& a) {
  constexpr bool FOLD = true;
  constexpr int AHEAD = 2;
  if (a.workspace_size < workspace8w(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  const Sync sy = moe_rows8b::sync_of(a.cfg, a.workspace);
  int* flag = route_flag(a.cfg, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (!supports8w<FC, G2>(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  moe_rows8::launch_ex(quantize_route_w<FOLD>, dim3(1 + qblocks), dim3(kPrologueThreads),
                       size_t(2 * s.E + kPrologueThreads) * sizeof(int), false, "quantize + route", a, ws, int(s.P),
                       int(s.E), int(s.rows_max), n8, sy.ready, int(s.tiles_max + 1), sy.unfolded, sy.row_w, flag);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_f16w<FC, MINB, FOLD, LDSM, PRE>, sm1);
  moe_rows8::launch_ex(gate_up_f16w<FC, MINB, FOLD, LDSM, PRE>, dim3(unsigned(s.I / 32), unsigned(s.tiles_max)),
                       dim3(kThreads), sm1, true, "f16 gate_up", a, ws, sy, static_cast<const int*>(flag));
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

// v21's 8-row path (docs/perf.md, section "moe_mxfp4 v21"): the 8-row tiles (bs x k / n_routed <= 8) with d_expert <= 512
// (E 257 bs 16 / 128 and E 33 bs 16 measured), v15's gate_up / down configurations, PRE and LDSM on.
struct Rows8Path {
  using FC = moe_wg8::F16Cfg<8, 4>;        // v15's 8-row gate_up: 8 k-blocks a stage, 4 stages, 4 blocks/SM
  using G2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;  // v15's 8-row down
  static bool applies(const MoeConfig& c) {
    return c.bs * c.n_experts_per_token / c.n_routed_experts <= 8 && c.d_expert <= 512 && supports8w<FC, G2>(c);
  }
  static size_t workspace_bytes(const MoeConfig& c) { return workspace8w(c); }
  static void launch(const MoeArgs& a) { launch8w<FC, 4, G2, true, true>(a); }
};
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_rows8w
