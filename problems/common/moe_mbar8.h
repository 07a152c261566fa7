// 8-row MoE tiles (bs x k / routed experts <= 8) as moe_rows8.h's chain runs them, with the gate_up
// kernel as a producer / consumer pipeline (gate_up_mbar) instead of cp.async stages guarded by a
// block-wide barrier. Measured in docs/perf-moe-v17.md: every option below LOST to v16's
// moe_rows8::gate_up_f16 at E 257 (the consumers are starved for data, not for barriers; their waits
// add instructions to a kernel that is already half issue-bound).
//  - one producer warp (warp 4 of 5) fills the STAGES stage slots; each slot has a "full" and an
//    "empty" mbarrier. Per stage the producer waits for the slot's empty phase and copies the stage:
//    MODE 0 (v17): all of it by 16-byte cp.async from its 32 lanes (v16's chunks); MODE bit 0: the 4
//    weight runs of 2 KB (one per 16-row group) by bulk copies (cp.async.bulk, mbarrier complete_tx,
//    armed by lane 0's expect_tx); MODE bit 1: the 8 activation rows (512 B) and their scale words
//    (32 B) by bulk copies too -- WRONG results measured with bit 1 (the activations written by the
//    prologue kernel, read by the async proxy in this dependent launch; not investigated). The 64
//    weight scale rows (8 bytes each) always go by 8-byte cp.async. Each lane ends a stage with
//    cp.async.mbarrier.arrive.noinc (full barrier count 1 + 32).
//  - the 4 consumer warps wait only on the full barrier of the stage they compute (HINT > 0: with a
//    suspend-time hint), read the stage's operands into registers and arrive on its empty barrier
//    (count 128) after the stage's MMAs (EARLY: right after the loads; measured racy with bulk copies,
//    slower with cp.async); no block-wide barrier in the mainloop.
// The consumer's arithmetic is moe_wg8's gate_up_f16 (same decode, same mma.sync chain, same scale
// words, same k order), so the output is v13's bit for bit. The prologue, down and combine kernels are
// moe_rows8.h's (launch8m = moe_rows8::launch8<FC, MINB, G2, 5, false, -1> with this gate_up).
// NVIDIA only (MOE_WG8_HOST); the mbarrier / bulk-copy code needs sm_90.
#pragma once
#include "problems/common/moe_rows8.h"

namespace moe_mbar8 {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;

#if defined(MOE_WG8_HOST)
using moe_wg8::kLanes;
constexpr int kConsumers = 4 * kLanes;              // 4 mma warps
constexpr int kThreadsM = kConsumers + kLanes;      // + one producer warp

// Stage layout as moe_wg8::F16Cfg<8, STAGES> (KS = 8 k-blocks a stage).
template <int STAGES>
struct Cfg {
  static constexpr int BM = 64, BN = 8, KS_ = 8, ST = STAGES;
  static constexpr int kXStride = KS_ * 64 + 64;
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS_ * 16;
  static constexpr int kX = kWs + BM * KS_;
  static constexpr int kXs = kX + BN * kXStride;
  static constexpr int kStageBytes = kXs + BN * KS_ * 4;
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static constexpr uint32_t kBulkBytes = BM * KS_ * 16 + BN * KS_ * 64 + BN * KS_ * 4;  // weights, x, x scales
  static_assert(kStageBytes % 16 == 0 && kX % 16 == 0 && kXs % 16 == 0, "bulk copy alignment");
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MOE_MBAR8_DEVICE 1
__device__ inline uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ inline void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ inline void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ inline void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ inline void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ inline void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ inline void cp8(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ inline void cp16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ inline void cp_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ inline void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "LAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\n"
      "bra LAB_WAIT;\n"
      "DONE:\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// The same wait with a suspend-time hint (ns): the waiting warp sleeps instead of spinning.
__device__ inline void mbar_sleep(uint32_t bar, uint32_t parity, uint32_t hint) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "LAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1, %2;\n"
      "@P1 bra DONE;\n"
      "bra LAB_WAIT;\n"
      "DONE:\n"
      "}\n" ::"r"(bar),
      "r"(parity), "r"(hint)
      : "memory");
}
#endif

// moe_rows8::gate_up_f16 (OPT 0, no FOLD) with the mbarrier pipeline above. grid (tiles_max, I / 32),
// kThreadsM threads.
// MODE: bit 0 = weights by bulk copies (else 16-byte cp.async by the producer's lanes), bit 1 =
// activations and their scale words by bulk copies (else cp.async). EARLY: consumers arrive on the
// empty barrier right after their shared-memory loads instead of after the stage's MMAs.
// HINT > 0: the waits use a suspend-time hint of HINT ns.
template <class C, int MINB, int MODE = 3, bool EARLY = false, int HINT = 0>
__global__ __launch_bounds__(kThreadsM, MINB) void gate_up_mbar(MoeArgs a, Workspace ws) {
  extern __shared__ __align__(128) uint8_t smem_mbar8[];
  uint8_t* smem = smem_mbar8;
  __shared__ int rg[C::BM / 16];
  __shared__ const uint8_t* xrow[C::BN];
  __shared__ const uint8_t* xsrow[C::BN];
  __shared__ __align__(8) uint64_t bars[2 * C::ST];  // full[ST], empty[ST]
  const int tid = threadIdx.x, lane = tid % kLanes, warp = tid / kLanes, g = lane / 4, t = lane % 4;
#if defined(MOE_MBAR8_DEVICE)
  const uint32_t full0 = smem_u32(bars), empty0 = full0 + 8 * C::ST;
  if (tid == 0) {
    for (int s = 0; s < C::ST; ++s) {
      mbar_init(full0 + 8 * s, 1 + kLanes);
      mbar_init(empty0 + 8 * s, kConsumers);
    }
    mbar_init_fence();
  }
#endif
  moe_rows8::dep_wait();
  moe_rows8::dep_release();
  const int tile_i = int(blockIdx.x), slice = int(blockIdx.y);
  if (tile_i >= *ws.n_tiles) return;
  const Tile tile = ws.tiles[tile_i];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2, KS = C::KS_;
  const int n0 = slice * kHalf;
  for (int i = tid; i < C::BM / 16; i += kThreadsM) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  for (int c = tid; c < C::BN; c += kThreadsM) {
    const int p = ws.sorted_pair[tile.row0 + c];
    const int64_t token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xrow[c] = ws.x8 + token * H * 2;
    xsrow[c] = ws.xs + token * KB * 4;
  }
  __syncthreads();  // also publishes the barriers' initialisation
  const uint8_t* wbase = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* sbase = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#if defined(MOE_MBAR8_DEVICE)
  const int nk = KB / KS;
  const uint32_t smem_s = smem_u32(smem);
  if (warp == 4) {  // producer
    const uint32_t rg_bytes = uint32_t(H / 64) * 512u;
    const uint8_t* wsrc[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) wsrc[j] = wbase + uint32_t(rg[j]) * rg_bytes;
    const uint8_t* ssrc[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int r = lane + kLanes * j;
      ssrc[j] = sbase + (uint32_t(rg[r / 16]) * 16 + r % 16) * uint32_t(KB);
    }
    const uint8_t* xsrc = lane < 8 ? xrow[lane] : xsrow[(lane - 8) % 8];  // lanes 0..15 (bulk)
    const uint8_t* xs16 = xsrow[(lane / 2) % 8] + (lane % 2) * 16;          // lanes 0..15 (cp.async)
    constexpr uint32_t kBytes = ((MODE & 1) ? C::BM * KS * 16 : 0) + ((MODE & 2) ? C::BN * KS * 64 + C::BN * KS * 4 : 0);
    for (int ks = 0; ks < nk; ++ks) {
      const int slot = ks % C::ST;
      const uint32_t full = full0 + 8 * slot, st = smem_s + slot * C::kStageBytes;
      if (ks >= C::ST) {
        if constexpr (HINT > 0) mbar_sleep(empty0 + 8 * slot, uint32_t((ks / C::ST - 1) & 1), HINT);
        else mbar_wait(empty0 + 8 * slot, uint32_t((ks / C::ST - 1) & 1));
      }
      const int kb0 = ks * KS;
      if (lane == 0) {
        mbar_expect_tx(full, kBytes);
        if constexpr ((MODE & 1) != 0) {
#pragma unroll
          for (int j = 0; j < 4; ++j) bulk_copy(st + C::kW + j * KS * 256, wsrc[j] + kb0 * 256, KS * 256, full);
        }
      }
      if constexpr ((MODE & 1) == 0) {  // 512 chunks of 16 bytes: group jj / 4, chunk lane + 32 (jj % 4)
#pragma unroll
        for (int jj = 0; jj < 16; ++jj) {
          const int ch = lane + kLanes * (jj % 4);
          cp16(st + C::kW + (jj / 4) * KS * 256 + ch * 16, wsrc[jj / 4] + kb0 * 256 + ch * 16);
        }
      }
      if constexpr ((MODE & 2) != 0) {
        if (lane < 8) bulk_copy(st + C::kX + lane * C::kXStride, xsrc + kb0 * 64, KS * 64, full);
        else if (lane < 16) bulk_copy(st + C::kXs + (lane - 8) * KS * 4, xsrc + kb0 * 4, KS * 4, full);
      } else {
#pragma unroll
        for (int c = 0; c < C::BN; ++c) cp16(st + C::kX + c * C::kXStride + lane * 16, xrow[c] + kb0 * 64 + lane * 16);
        if (lane < 16) cp16(st + C::kXs + ((lane / 2) % 8) * KS * 4 + (lane % 2) * 16, xs16 + kb0 * 4);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) cp8(st + C::kWs + (lane + kLanes * j) * KS, ssrc[j] + kb0);
      cp_arrive_noinc(full);
    }
  } else {  // consumers: moe_wg8::gate_up_f16's compute
    const int a_off = C::kW + warp * KS * 256 + 4 * lane;
    const int ws_off = C::kWs + (warp * 16 + g) * KS;
    const int b_off = C::kX + g * C::kXStride + 16 * t;
    const int xs_off = C::kXs + 2 * t * KS * 4;
    for (int ks = 0; ks < nk; ++ks) {
      const int slot = ks % C::ST;
      if constexpr (HINT > 0) mbar_sleep(full0 + 8 * slot, uint32_t((ks / C::ST) & 1), HINT);
      else mbar_wait(full0 + 8 * slot, uint32_t((ks / C::ST) & 1));
      const uint8_t* st = smem + slot * C::kStageBytes;
      const uint2 wg0 = *reinterpret_cast<const uint2*>(st + ws_off);
      const uint2 wg8 = *reinterpret_cast<const uint2*>(st + ws_off + 8 * KS);
      const uint32_t wsw[2][2] = {{wg0.x, wg0.y}, {wg8.x, wg8.y}};
      int32_t xsw[2][KS];
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int q = 0; q < KS / 4; ++q) {
          const int4 v = *reinterpret_cast<const int4*>(st + xs_off + c * KS * 4 + q * 16);
          xsw[c][4 * q] = v.x;
          xsw[c][4 * q + 1] = v.y;
          xsw[c][4 * q + 2] = v.z;
          xsw[c][4 * q + 3] = v.w;
        }
      uint32_t wv[KS][2];
      uint4 bv[KS];
#pragma unroll
      for (int u = 0; u < KS; ++u) {
        const uint8_t* p = st + a_off + u * 256;
        wv[u][0] = *reinterpret_cast<const uint32_t*>(p);
        wv[u][1] = *reinterpret_cast<const uint32_t*>(p + 128);
        bv[u] = *reinterpret_cast<const uint4*>(st + b_off + u * 64);
      }
      if constexpr (EARLY) mbar_arrive(empty0 + 8 * slot);  // measured racy with bulk copies (call 1)
#pragma unroll
      for (int u = 0; u < KS; ++u) {
        uint32_t lo[4], hi[4];
        moe_wg8::decode_f16(wv[u][0], lo);
        moe_wg8::decode_f16(wv[u][1], hi);
        const uint32_t a1[4] = {lo[0], hi[0], lo[1], hi[1]}, a2[4] = {lo[2], hi[2], lo[3], hi[3]};
        const uint32_t b1[2] = {bv[u].x, bv[u].y}, b2[2] = {bv[u].z, bv[u].w};
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
      if constexpr (!EARLY) mbar_arrive(empty0 + 8 * slot);  // every value read from the stage was used
    }
  }
#else
  (void)wbase, (void)sbase, (void)lane, (void)g, (void)t;
#if defined(__CUDA_ARCH__)
  __trap();  // needs sm_90 (never dispatched to otherwise: the harness builds sm_90a)
#endif
#endif
  __syncthreads();  // every stage was waited for by the consumers: the buffers become the fp32 tile
  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  if (warp < 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) tile_f[(2 * t + (i & 1)) * kStride + warp * 16 + g + 8 * (i >> 1)] = acc[i];
  }
  __syncthreads();
  moe_wg8::swiglu_requant<C::BN, kHalf, kThreadsM>(tile_f, kStride, tile, n0, I, ws);
}

// moe_rows8::launch8<FC, MINB, G2, 5, false, -1, 0> (v15 / v16's chain) with gate_up_mbar<FC, MINB, MODE, EARLY, HINT>.
template <class FC, int MINB, class G2, int MODE = 3, bool EARLY = false, int HINT = 0>
void launch8m(const MoeArgs& a) {
  using namespace moe_rows8;
  if (a.workspace_size < workspace8(a.cfg)) throw std::invalid_argument("moe_mxfp4: workspace too small");
  Workspace ws;
  moe_wg8::carve(a.cfg, a.workspace, &ws, 2);
  int32_t* counters = nullptr;
  workspace8(a.cfg, &counters, a.workspace);
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, 8);
  if (s.I % 32 || s.H % G2::BM || (s.H / 32) % FC::KS_ || (s.I / 32) % G2::KS || s.E > kPrologueThreads)
    throw std::invalid_argument("moe_mxfp4: shape not supported by the 8-row kernels");
  const int64_t n8 = s.M * s.H / 8;
  const unsigned qblocks = unsigned((n8 + kPrologueThreads - 1) / kPrologueThreads);
  launch_ex(quantize_route<false>, dim3(1 + qblocks), dim3(kPrologueThreads), size_t(2 * s.E + kPrologueThreads) * sizeof(int),
            false, "quantize + route", a, ws, int(s.P), int(s.E), int(s.rows_max), n8, counters, 0);
  constexpr int sm1 = FC::kPipeBytes > 8 * 68 * 4 ? FC::kPipeBytes : 8 * 68 * 4, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up_mbar<FC, MINB, MODE, EARLY, HINT>, sm1);
  launch_ex(gate_up_mbar<FC, MINB, MODE, EARLY, HINT>, dim3(unsigned(s.tiles_max), unsigned(s.I / 32)), dim3(kThreadsM), sm1, true,
            "mbarrier gate_up", a, ws);
  const int64_t items_max = s.tiles_max * (s.H / G2::BM);
  moe_wg8::allow_smem(down_persist<G2, false>, sm2);
  if (items_max >= 8 * int64_t(persist_slots<G2, false>(sm2))) {
    int64_t grid = persist_slots<G2, false>(sm2);
    grid = std::max<int64_t>(grid, (items_max + kMaxItems - 1) / kMaxItems);
    grid = std::min<int64_t>(grid, items_max);
    launch_ex(down_persist<G2, false>, dim3(unsigned(grid)), dim3(kThreads), sm2, false, "wgmma down", a, ws, counters);
  } else {
    moe_wg8::allow_smem(moe_wg8::down<G2>, sm2);
    launch_ex(moe_wg8::down<G2>, dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), dim3(kThreads), sm2, false,
              "wgmma down", a, ws);
  }
  constexpr int kCombineThreads = 256;
  const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
  launch_ex(combine, dim3(unsigned((n + kCombineThreads - 1) / kCombineThreads)), dim3(kCombineThreads), 0, true, "combine",
            static_cast<const float*>(ws.y), int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_mbar8
