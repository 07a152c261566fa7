// moe_split64: the 64-row MoE shapes (E33 bs512, d_expert 512 / 2048) on moe_fp8r2's route_even tiles, launch chain,
// operands and epilogues (moe_fp8_rows.h / moe_fp8_rows2.h as moe_ws30::Path runs them: 256 weight rows a block,
// 4 k-blocks a stage, 4 stages, copies 2 stages ahead) with the block's roles split and tiles of up to 128 rows
// (moe_ws30's 160 do not fit the registers of a 384-thread block, see Cfg). Measured slower than moe_ws30::Path
// (1.6-1.7x) and its forced fix-up (FORCE) fails on the 64-row shapes (a race not found): docs/perf-moe-split64.md.
//  - Decode warps (one warpgroup, threads 256 .. 383): decode warp d owns the 16-row weight groups d, d + 4, d + 8,
//    d + 12. Per stage it waits for the slot's copies (stage mbarrier) and loads its words; per k-block it decodes
//    with moe_fp8r::decode8 and the same per-row tables and window checks as moe_fp8r::mainloop, and stores the e4m3 A
//    (64 x 32 per m64 tile) into shared memory in the wgmma K-major no-swizzle layout at the k positions the register
//    A layout had (a0 / a1 rows g / g + 8 at k 4t + i, a2 / a3 at k 16 + 4t + i), so B's position(k) order still
//    meets the same weight values: the same products and k order as the register form (bit-identical outputs).
//  - MMA warpgroups (2, threads 0..255): moe_fp8r's 8 warps and accumulator layout (MT 2 x N 128), every cp.async copy
//    (completion on the slot's stage mbarrier via cp.async.mbarrier.arrive.noinc), SS wgmma m64nNk32 (both operands
//    by descriptor), one group in flight, then moe_fp8r's epilogues on 256 threads.
//  - Hand-over: one A buffer (8 KB) per k-block of a stage, a full mbarrier each (one arrival a decode warp, after its
//    A stores and a fence.proxy.async) and an empty mbarrier each (8 MMA warp arrivals once the wgmma group that read
//    it retired); one waiter a MMA warpgroup plus a named barrier for its other warps.
//  - The decode warps write each row's reference exponent and window flag (rref / wflag) and leave at a named barrier
//    the MMA warps wait on; the epilogues and the exact fix-up run on the MMA warps with named barriers.
// FORCE (test only): moe_fp8r's forced fix-up rows, as moe_ws30::PathOf<..., FORCE>.
#pragma once
#include <type_traits>
#include <utility>

#include "problems/common/moe_fp8_rows2.h"

namespace moe_split64 {
namespace {

#if defined(MOE_WG8_HOST)
using moe_fp8r::kLanes;

// KS k-blocks a stage (one A buffer each), STAGES slots, copies DIST = STAGES - 2 stages ahead, tiles of up to BN rows,
// DW decode warps (each 16 / DW of the 16-row groups). DIAG (measurement only, wrong values): 1 = no wgmma issued,
// 2 = no decode (zeros stored); 3 / 4 (FORCE bisection): no forced weight rows / the down's fix-up also on row % 41 == 3. Registers: ptxas compiles the whole kernel at one register count, set by the warps a
// scheduler holds (16K registers each: 3 warps at 384 threads = 168 a thread); setmaxnreg only moves physical registers
// and does not raise that count. At 168, N 160 (160 accumulators) spills ~11 KB and serializes the wgmmas (C7512) even
// without epilogue or decode; N 144 too (~4 KB); N 128 fits (158 registers, no spills): hence tiles of up to 128 rows.
template <int KS_, int STAGES_, int BN_, int DW_, int DIAG_ = 0>
struct Cfg {
  static constexpr int WM = 8, MT = 2, BN = BN_, NG = BN_ / 8, KS = KS_, STAGES = STAGES_, DIST = STAGES_ - 2;
  static constexpr int DW = DW_, DIAG = DIAG_;
  static constexpr int kThreads = WM * kLanes;          // MMA threads (the epilogues' thread count)
  static constexpr int BM = WM * MT * 16;               // 256 weight rows
  static constexpr int kGroups = BM / 16;               // 16-row groups
  static constexpr int kGPW = kGroups / DW;             // groups a decode warp
  static constexpr int kDecThreads = DW * kLanes;
  static constexpr int kAll = kThreads + kDecThreads;
  static constexpr int kXChunks = KS * 2;
  static constexpr int kSBO = kXChunks * 128;
  static constexpr int kW = 0;                          // [BM/16 groups][KS][256]
  static constexpr int kWs = kW + BM * KS * 16;         // [BM][KS] scale bytes
  static constexpr int kX = kWs + moe_tile::align16(BM * KS);
  static constexpr int kStageBytes = kX + BN * KS * 32;
  static constexpr int kABytes = BM * 32;               // a k-block's decoded A: 4 m64 tiles of 2048 B
  static constexpr int kA = STAGES * kStageBytes;
  static constexpr int kPipeBytes = kA + KS * kABytes;
  static constexpr int kXPer = (BN * kXChunks + kDecThreads - 1) / kDecThreads;
  static constexpr int kSmem = kPipeBytes > BN * (BM + 4) * 4 ? kPipeBytes : BN * (BM + 4) * 4;
  static_assert(KS == 4, "a scale row slice is one 4-byte copy; the group's stage words are 2 copies a lane");
  static_assert(STAGES >= 3, "copies at least one stage ahead without a drain");
  static_assert(BN % 8 == 0 && BN >= 128 && BN <= kThreads, "one setup row an MMA thread");
  static_assert(kGroups % DW == 0, "whole groups a decode warp");
  static_assert(BM == kThreads && (BM * KS) % kThreads == 0 && (BN * kXChunks) % kThreads == 0, "copy split");
  static_assert(kSmem + 6 * 1024 <= 227 * 1024, "shared memory");
};

#if defined(MOE_WG8_DEVICE)
using moe_tile::cp_async;
using moe_tile::cp_commit;
using moe_tile::cp_wait;

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// The executing thread's prior cp.async copies arrive on the mbarrier once complete (counted: init count = threads).
__device__ __forceinline__ void cp_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred P1;\n"
      "SPLIT64_WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra SPLIT64_WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ bool named_or(int id, int threads, bool v) {
  uint32_t r;
  asm volatile(
      "{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.or.pred q, %2, %3, p;\nselp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(r)
      : "r"(uint32_t(v)), "r"(id), "r"(threads)
      : "memory");
  return r != 0;
}
__device__ __forceinline__ uint64_t desc_add(uint64_t d, uint32_t v) {
  uint64_t r;
  asm volatile("add.s64 %0, %1, %2;\n" : "=l"(r) : "l"(d), "l"(uint64_t(v)));
  return r;
}
// Named barriers: 1 = the hand-over at the end of the mainloop (all threads), 2 = the MMA threads' epilogue, 3 / 4 = MMA
// warpgroup 0 / 1 (its A buffer is full).
constexpr int kBarEnd = 1, kBarMma = 2, kBarWg0 = 3;

// acc[0 .. N/8) += A (64 x 32 e4m3, shared memory at da) x B (32 x N e4m3, shared memory at db).
template <int N, int NG>
__device__ __forceinline__ void wgmma_ss(float (&d)[NG][4], uint64_t da, uint64_t db) {
  static_assert(N == 64 || N == 128 || N == 136 || N == 144 || N == 152 || N == 160, "wgmma N");
  if constexpr (N == 64) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
        : "l"(da), "l"(db), "n"(1));
  } else if constexpr (N == 128) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
        : "l"(da), "l"(db), "n"(1));
  } else if constexpr (N == 136) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %70, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n136k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67}, %68, %69, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3])
        : "l"(da), "l"(db), "n"(1));
  } else if constexpr (N == 144) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %74, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n144k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71}, %72, %73, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3])
        : "l"(da), "l"(db), "n"(1));
  } else if constexpr (N == 152) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %78, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n152k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75}, %76, %77, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3])
        : "l"(da), "l"(db), "n"(1));
  } else if constexpr (N == 160) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n160k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, %80, %81, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3])
        : "l"(da), "l"(db), "n"(1));
  }
}

// The MMA warpgroups' loop (threads 0 .. 255): they issue every cp.async copy (weights, scales, activation rows), a
// stage DIST ahead, its completion tracked on the slot's stage mbarrier (cp.async.mbarrier.arrive.noinc), so no thread
// that runs fence.proxy.async has copies in flight (a fence waits for them: the first form, with the copies on the
// decode warps, stalled every stage on the global latency). Per k-block: wait for its A buffer, SS wgmma of the
// warpgroup's two m64 tiles against the stage's activation rows, one group in flight; the retired group's buffer is
// handed back.
template <class C, int N>
__device__ __forceinline__ void mma_loop(float (&acc)[C::MT][C::NG][4], uint8_t* smem, uint32_t bars, int nk,
                                         const uint8_t* w, const uint8_t* wsc, const uint8_t* x, int KB, const int* rg,
                                         const uint32_t* xoff_row) {
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;
  const int tid = threadIdx.x;
  const uint32_t smem_s = smem_u32(smem);
  auto xrow_of = [](int i) { return (i / (8 * C::kXChunks)) * 8 + i % 8; };
  auto xch_of = [](int i) { return (i / 8) % C::kXChunks; };
  // Stage s's copies into its slot; offsets from the shared tables (few registers next to the accumulators).
  auto load = [&](int s) {
    const int slot = s % C::STAGES, kb0 = s * C::KS;
    uint8_t* st = smem + slot * C::kStageBytes;
    const uint32_t rgb = uint32_t(KB) * 256u;
#pragma unroll
    for (int n = 0; n < C::BM * C::KS * 16 / 16 / C::kThreads; ++n) {
      const int i = tid + n * C::kThreads, r = i / (C::KS * 16), ch = i % (C::KS * 16);
      cp_async<16>(st + C::kW + i * 16, w + uint32_t(rg[r]) * rgb + uint32_t(kb0) * 256u + uint32_t(ch) * 16u);
    }
#pragma unroll
    for (int n = 0; n < C::BN * C::kXChunks / C::kThreads; ++n) {
      const int i = tid + n * C::kThreads, c = xrow_of(i);
      if (N == C::BN || c < N)
        cp_async<16>(st + C::kX + (c / 8) * C::kSBO + xch_of(i) * 128 + (c % 8) * 16,
                     x + xoff_row[c] + uint32_t(kb0) * 32u + uint32_t(xch_of(i)) * 16u);
    }
    cp_async<C::KS>(st + C::kWs + tid * C::KS, wsc + (uint32_t(rg[tid / 16]) * 16u + uint32_t(tid % 16)) * uint32_t(KB) + kb0);
    cp_arrive(bars + 8 * (2 * C::KS + slot));
  };
#pragma unroll
  for (int s = 0; s < C::DIST; ++s)
    if (s < nk) load(s);
  const int wg = tid / (4 * kLanes);
  const bool lead = tid % kLanes == 0;
  // Descriptors: one 64-bit base each, offsets added right before the wgmmas (desc_add is volatile: not hoisted, so
  // the 8 A and 4 B descriptors of a stage do not stay live across the loop next to the accumulators).
  const uint64_t da0 = moe_fp8r::smem_desc(smem_s + C::kA + wg * C::MT * 2048, 256);
  const uint64_t db0 = moe_fp8r::smem_desc(smem_s + C::kX, C::kSBO);
  for (int ks = 0; ks < nk; ++ks) {
    const uint64_t db = desc_add(db0, uint32_t((ks % C::STAGES) * C::kStageBytes) >> 4);
    const uint32_t par = uint32_t(ks) & 1u;
#pragma unroll
    for (int u = 0; u < C::KS; ++u) {
      // One waiter a warpgroup (its first warp) and a named barrier for the other three: 8 warps polling the mbarrier
      // kept the shared-memory pipe busy next to the decode warps' loads and stores.
      if (threadIdx.x % (4 * kLanes) < kLanes) mbar_wait(bars + 8 * u, par);
      named_sync(kBarWg0 + wg, 4 * kLanes);
      if constexpr (C::DIAG != 1) {
        moe_wg8::wg_fence();
#pragma unroll
        for (int m = 0; m < C::MT; ++m)
          wgmma_ss<N, C::NG>(acc[m], desc_add(da0, uint32_t(u * C::kABytes + m * 2048) >> 4), desc_add(db, (u * 256) >> 4));
        moe_wg8::wg_commit();
        moe_wg8::wg_wait<1>();
      }
      if (lead && (ks > 0 || u > 0)) mbar_arrive(bars + 8 * (C::KS + (u + C::KS - 1) % C::KS));
      // Stage ks + DIST into the slot of stage ks - 2: its wgmmas retired (the wait above), its words and scales read
      // (the decode warps stored every A of that stage before this warp passed its full barriers).
      if (u == 0 && ks + C::DIST < nk) load(ks + C::DIST);
    }
  }
  moe_wg8::wg_wait<0>();
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) moe_wg8::reg_fence(acc[m][j][i]);
}

// The decode warps' loop (threads 256 ..): decode warp d owns the 16-row groups G = d + DW q (block rows 16 G ..), lane
// (g, t) rows g and g + 8 of each, as moe_fp8r::mainloop's lane of the warp that owned the group. Per stage: wait for
// the slot's copies (stage mbarrier); per k-block: wait for the A buffer, decode, store, fence.proxy.async (which
// also publishes the stage's landed activation rows to the wgmmas), arrive. Then rref / wflag of its rows.
template <class C, int N, int FORCE>
__device__ __forceinline__ void decode_loop(uint8_t* smem, uint32_t bars, int nk, int* rref, int* wflag) {
  using moe_fp8r::kK0;
  using moe_fp8r::kK1;
  constexpr int Q = C::kGPW;
  const int dt = threadIdx.x - C::kThreads, d = dt / kLanes, lane = dt % kLanes;
  const int g = lane / 4, t = lane % 4;
  // Group G's A words in each k-block's buffer: m64 tile (G / 8) * 2 + G % 2, its rows 16 ((G / 2) % 4) + g (+ 8).
  auto aoff = [&](int G) { return ((G / 8) * 2 + G % 2) * 2048 + 2 * ((G / 2) % 4) * 256 + g * 16 + 4 * t; };
  int lo[Q][2];
  uint32_t c0[Q][2], c1[Q][2], chk[Q][2];
#pragma unroll
  for (int q = 0; q < Q; ++q)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      lo[q][h] = 0;
      c0[q][h] = c1[q][h] = chk[q][h] = 0u;
    }
  for (int ks = 0; ks < nk; ++ks) {
    mbar_wait(bars + 8 * (2 * C::KS + ks % C::STAGES), uint32_t(ks / C::STAGES) & 1u);  // stage ks landed
    const uint8_t* st = smem + (ks % C::STAGES) * C::kStageBytes;
    uint32_t sw[Q][2];
#pragma unroll
    for (int q = 0; q < Q; ++q)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        sw[q][h] = *reinterpret_cast<const uint32_t*>(st + C::kWs + ((d + C::DW * q) * 16 + g + 8 * h) * C::KS);
    if (ks == 0) {
      // Each row's window from its first stage: the largest byte at d = 3, window d in [-5, 6] (moe_fp8r::mainloop).
#pragma unroll
      for (int q = 0; q < Q; ++q)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          uint32_t v = sw[q][h];
          v = __vmaxu4(v, v >> 16);
          v = __vmaxu4(v, v >> 8);
          lo[q][h] = int(v & 0xFFu) - 8;
          c0[q][h] = moe_fp8r::kT0 - uint32_t(lo[q][h] + 5) * kK0;
          c1[q][h] = moe_fp8r::kT1 - uint32_t(lo[q][h] + 5) * kK1;
        }
    }
    // The stage's weight words at once (one shared-memory latency a stage, not one a k-block: the waits below are
    // compiler barriers).
    uint32_t wv[C::KS][Q][2];
#pragma unroll
    for (int u = 0; u < C::KS; ++u)
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        const uint8_t* kb = st + C::kW + ((d + C::DW * q) * C::KS + u) * 256;
        wv[u][q][0] = *reinterpret_cast<const uint32_t*>(kb + 4 * lane);
        wv[u][q][1] = *reinterpret_cast<const uint32_t*>(kb + 128 + 4 * lane);
      }
#pragma unroll
    for (int u = 0; u < C::KS; ++u) {
      if (ks > 0) mbar_wait(bars + 8 * (C::KS + u), uint32_t(ks - 1) & 1u);  // k-block u of stage ks - 1 retired
      uint8_t* ab = smem + C::kA + u * C::kABytes;
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        const int G = d + C::DW * q;
        const uint32_t w0 = wv[u][q][0], w1 = wv[u][q][1];
        uint32_t t0[2], t1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bb = __byte_perm(sw[q][h], 0u, 0x4440u + u);
          t0[h] = bb * kK0 + c0[q][h];
          t1[h] = bb * kK1 + c1[q][h];
          chk[q][h] = max(chk[q][h], bb - uint32_t(lo[q][h]));
        }
        uint32_t a0, a1, a2, a3;
        if constexpr (C::DIAG == 2) {  // measurement only: no decode (the words' sign bits: zeros)
          a0 = a2 = w0 & 0x80808080u;
          a1 = a3 = w1 & 0x80808080u;
        } else {
          moe_fp8r::decode8(w0, t0[0], t1[0], a0, a2);
          moe_fp8r::decode8(w1, t0[1], t1[1], a1, a3);
        }
        uint8_t* p = ab + aoff(G);
        *reinterpret_cast<uint32_t*>(p) = a0;
        *reinterpret_cast<uint32_t*>(p + 128) = a2;
        *reinterpret_cast<uint32_t*>(p + 256) = a1;
        *reinterpret_cast<uint32_t*>(p + 384) = a3;
      }
      moe_wg8::proxy_fence();  // the A stores (and the stage's landed rows) -> the wgmmas' shared-memory reads
      __syncwarp();
      if (lane == 0) mbar_arrive(bars + 8 * u);
    }
  }
  if (t == 0) {
#pragma unroll
    for (int q = 0; q < Q; ++q)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = (d + C::DW * q) * 16 + g + 8 * h;
        rref[r] = lo[q][h] + 5 - 127;
        wflag[r] = chk[q][h] > 11u || (FORCE && C::DIAG != 3 && r % 97 == 11);
      }
  }
}
#endif  // MOE_WG8_DEVICE


// Stage 1. grid (I / (BM / 2), tiles): moe_fp8r2::gate_up (OVL; PRO: a dependent of the prologue) with split roles.
template <class C, int FORCE, bool PRO>
__global__ __launch_bounds__(C::kAll, 1) void gate_up(MoeArgs a, moe_fp8r2::Ws2 ws2) {
#if defined(MOE_WG8_DEVICE)
  const moe_fp8r::Ws& ws = ws2.w;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ float colmul[C::BN];
  __shared__ int tok[C::BN];
  __shared__ int xflag[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  __shared__ __align__(8) uint64_t bars[2 * C::KS + C::STAGES];
  const int bt = int(blockIdx.y);
  if constexpr (PRO) moe_wg8::dep_wait();  // the prologue's output
  moe_wg8::dep_release();
  if (bt >= *ws.p.n_tiles) return;
  const moe_fp8r2::TileE tile = moe_fp8r2::tile_of(ws2, bt);
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  const int n0 = int(blockIdx.x) * kHalf, tid = threadIdx.x;
  const uint32_t bar0 = smem_u32(bars);
  if (tid == 0) {
    for (int i = 0; i < C::KS; ++i) {
      mbar_init(bar0 + 8 * i, C::DW);
      mbar_init(bar0 + 8 * (C::KS + i), C::WM);
    }
    for (int i = 0; i < C::STAGES; ++i) mbar_init(bar0 + 8 * (2 * C::KS + i), C::kThreads);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  for (int i = tid; i < C::BM / 16; i += C::kAll) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  bool real = false;
  if (tid < C::BN) {
    const int c = tid;
    const int p = c < tile.rows ? ws.p.sorted_pair[tile.row0 + c] : -1;
    const int token = p >= 0 ? p / T : 0;  // padding rows borrow token 0; never written back
    xoff[c] = uint32_t(token) * uint32_t(H);
    colmul[c] = numerics::exp2_f32(ws.xr[2 * token]);
    tok[c] = p >= 0 ? token : -1;
    xflag[c] = p >= 0 && ws.xr[2 * token + 1];
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  const uint8_t* wq = a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2);
  const uint8_t* wsc = a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB;
  const int nk = KB / C::KS;
  if (tid >= C::kThreads) {
    moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
      decode_loop<C, decltype(n_tag)::value, FORCE>(smem, bar0, nk, rref, wflag);
    });
    named_arrive(kBarEnd, C::kAll);
    return;
  }
  float acc[C::MT][C::NG][4];
  moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
    mma_loop<C, decltype(n_tag)::value>(acc, smem, bar0, nk, wq, wsc, ws.p.x8, KB, rg, xoff);
  });
  named_sync(kBarEnd, C::kAll);  // rref / wflag written, every copy and A store done: the buffers become tile_f

  // moe_fp8r::gate_up_tile's epilogue on the MMA threads.
  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  const moe_wide16::AccIndex<C> ix;
  bool mine = false;
#pragma unroll
  for (int m = 0; m < C::MT; ++m) {
    float rowmul[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = ix.row(m, 2 * h);
      rowmul[h] = numerics::exp2_f32(rref[r]);
      mine |= wflag[r] != 0;
    }
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = ix.col(j, i);
        tile_f[c * kStride + ix.row(m, i)] = acc[m][j][i] * rowmul[i >> 1] * colmul[c];
      }
  }
  if (tid < C::BN) mine |= xflag[tid] != 0;
  if (named_or(kBarMma, C::kThreads, mine)) {
    const int warp = tid / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (tok[c] < 0 || !(wflag[r] || xflag[c])) continue;
      const int64_t n = int64_t(tile.expert) * 2 * I + rg[r / 16] * 16 + r % 16;
      const int t = tok[c];
      const float v = moe_fp8r::exact_dot(a.gate_up_weight + n * (H / 2), a.gate_up_weight_scale + n * KB,
                                          ws.p.x8 + int64_t(t) * H, ws.p.xs + int64_t(t) * KB, ws.xr[2 * t + 1] != 0,
                                          ws.xr[2 * t], KB);
      if (tid % kLanes == 0) tile_f[c * kStride + r] = v;
    }
    named_sync(kBarMma, C::kThreads);
  }
  moe_fp8r::swiglu_requant<C, FORCE>(tile_f, tok, tile.row0, n0, I, ws);
  __threadfence();  // this thread's a8 / as / aflag stores before the tile's count
  named_sync(kBarMma, C::kThreads);
  if (tid == 0) atomicAdd(ws2.ready + bt, 1);
#else
  (void)a, (void)ws2;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// Stage 2. grid (H / BM, tiles): moe_fp8r2::down (OVL, a programmatic dependent of gate_up) with split roles.
template <class C, int FORCE, bool PRO>
__global__ __launch_bounds__(C::kAll, 1) void down(MoeArgs a, moe_fp8r2::Ws2 ws2) {
#if defined(MOE_WG8_DEVICE)
  const moe_fp8r::Ws& ws = ws2.w;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  __shared__ int aflg[C::BN];
  __shared__ int wflag[C::BM];
  __shared__ int rref[C::BM];
  __shared__ __align__(8) uint64_t bars[2 * C::KS + C::STAGES];
  const int bt = int(blockIdx.y);
  if constexpr (PRO) moe_wg8::dep_release();  // the combine may be scheduled once every down block started
  if (bt >= *ws.p.n_tiles) return;
  const moe_fp8r2::TileE tile = moe_fp8r2::tile_of(ws2, bt);
  const int tid = threadIdx.x;
  // The tile's gate_up blocks have stored its a8 rows.
  if (tid == 0) {
    while (atomicAdd(ws2.ready + bt, 0) < ws2.need) __nanosleep(256);
    __threadfence();
  }
  __syncthreads();
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  const int n0 = int(blockIdx.x) * C::BM;
  const uint32_t bar0 = smem_u32(bars);
  if (tid == 0) {
    for (int i = 0; i < C::KS; ++i) {
      mbar_init(bar0 + 8 * i, C::DW);
      mbar_init(bar0 + 8 * (C::KS + i), C::WM);
    }
    for (int i = 0; i < C::STAGES; ++i) mbar_init(bar0 + 8 * (2 * C::KS + i), C::kThreads);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  for (int i = tid; i < C::BM / 16; i += C::kAll) rg[i] = n0 / 16 + i;
  bool real = false;
  if (tid < C::BN) {
    const int c = tid;
    const int row = tile.row0 + (c < tile.rows ? c : 0);  // rows past the tile's: its first row (not stored)
    const int p = c < tile.rows ? ws.p.sorted_pair[row] : -1;
    xoff[c] = uint32_t(row) * uint32_t(I);
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
    aflg[c] = p >= 0 && (__ldcg(ws.aflag + row) || (C::DIAG == 4 && row % 41 == 3));
    real = p >= 0;
  }
  const int nreal = __syncthreads_count(real);
  const uint8_t* wq = a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2);
  const uint8_t* wsc = a.down_weight_scale + int64_t(tile.expert) * H * KB;
  const int nk = KB / C::KS;
  if (tid >= C::kThreads) {
    moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
      decode_loop<C, decltype(n_tag)::value, FORCE>(smem, bar0, nk, rref, wflag);
    });
    named_arrive(kBarEnd, C::kAll);
    return;
  }
  float acc[C::MT][C::NG][4];
  moe_fp8r::dispatch_cols<C>(nreal, [&](auto n_tag) {
    mma_loop<C, decltype(n_tag)::value>(acc, smem, bar0, nk, wq, wsc, ws.p.a8, KB, rg, xoff);
  });
  named_sync(kBarEnd, C::kAll);

  // moe_fp8r::down_tile's epilogue on the MMA threads.
  const moe_wide16::AccIndex<C> ix;
  bool mine = false;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = ix.row(m, 2 * h);
      const float rowmul = numerics::exp2_f32(rref[r]);
      mine |= wflag[r] != 0;
#pragma unroll
      for (int j = 0; j < C::NG; ++j) {
        acc[m][j][2 * h] *= rowmul;
        acc[m][j][2 * h + 1] *= rowmul;
      }
    }
  moe_tiled::store_weighted_rows<C>(ix, acc, pair, weight, ws.p.y, H, n0);
  if (tid < C::BN) mine |= aflg[tid] != 0;
  if (named_or(kBarMma, C::kThreads, mine)) {
    const int warp = tid / kLanes;
    for (int idx = warp; idx < C::BN * C::BM; idx += C::kThreads / kLanes) {
      const int c = idx / C::BM, r = idx % C::BM;
      if (pair[c] < 0 || !(wflag[r] || aflg[c])) continue;
      const int64_t n = int64_t(tile.expert) * H + n0 + r;
      const int64_t row = tile.row0 + c;
      const uint8_t* wrow = a.down_weight + n * (I / 2);
      const uint8_t* srow = a.down_weight_scale + n * KB;
      const float v = moe_fp8r::exact_dot_a<FORCE, true>(wrow, srow, ws.p.a8 + row * I, ws.p.as + row * KB, row, KB);
      if (tid % kLanes == 0) ws.p.y[int64_t(pair[c]) * H + n0 + r] = weight[c] * v;
    }
  }
#else
  (void)a, (void)ws2;
#if defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a features: never dispatched to (needs sm_90a)
#endif
#endif
}

// The whole layer: moe_fp8r2's prologue (FORCE 0; else moe_fp8r's quantizer + route_even), the split gate_up, the
// split down (a programmatic dependent waiting per tile), moe_fp8r2's combine.
template <class G1, class G2, int FORCE = 0>
void launch(const MoeArgs& a) {
  static_assert(G1::BN == G2::BN, "one tile list");
  constexpr bool PRO = FORCE == 0;
  constexpr int T = G1::BN;
  if (a.workspace_size < moe_fp8r2::carve2(a.cfg, T, nullptr, nullptr))
    throw std::invalid_argument("moe_mxfp4: workspace too small");
  if (!moe_fp8r::supports(a.cfg)) throw std::invalid_argument("moe_mxfp4: shape not supported by the fp8 kernels");
  moe_fp8r2::Ws2 ws2;
  moe_fp8r2::carve2(a.cfg, T, a.workspace, &ws2);
  const moe_fp8r::Ws& ws = ws2.w;
  const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, T);
  const unsigned cols1 = unsigned(s.I / (G1::BM / 2)), cols2 = unsigned(s.H / G2::BM), tiles = unsigned(s.tiles_max);
  ws2.need = int(cols1);
  constexpr int kRouteThreads = 1024;
  const size_t route_smem = size_t(2 * s.E + kRouteThreads) * sizeof(int);
  if constexpr (PRO) {
    const unsigned nqb = unsigned((s.M + moe_fp8r2::kQGroups - 1) / moe_fp8r2::kQGroups);
    moe_fp8r2::prologue<<<nqb + 1, kRouteThreads, route_smem>>>(
        a.hidden_states, int(s.M), int(s.H), ws.p.x8, ws.p.xs, ws.xr, ws.aflag, a.topk_ids, int(s.P), int(s.E), T,
        int(s.rows_max), ws.p.sorted_pair, ws2.tiles, ws.p.n_tiles, ws2.ready, int(s.tiles_max));
    moe_pipeline::check(hipGetLastError(), "split64 prologue");
  } else {
    moe_fp8r::quantize_hidden<FORCE><<<unsigned(s.M), 256>>>(a.hidden_states, int(s.H), ws.p.x8, ws.p.xs, ws.xr,
                                                             ws.aflag, int(s.rows_max));
    moe_pipeline::check(hipGetLastError(), "split64 quantize hidden");
    moe_fp8r2::route_even<<<1, kRouteThreads, route_smem>>>(a.topk_ids, int(s.P), int(s.E), T, int(s.rows_max),
                                                            ws.p.sorted_pair, ws2.tiles, ws.p.n_tiles, ws2.ready,
                                                            int(s.tiles_max));
    moe_pipeline::check(hipGetLastError(), "split64 route");
  }
  constexpr int sm1 = G1::kSmem, sm2 = G2::kPipeBytes;
  moe_wg8::allow_smem(gate_up<G1, FORCE, PRO>, sm1);
  moe_wg8::allow_smem(down<G2, FORCE, PRO>, sm2);
  moe_rows8::launch_ex(gate_up<G1, FORCE, PRO>, dim3(cols1, tiles), dim3(G1::kAll), size_t(sm1), PRO, "split64 gate_up",
                       a, ws2);
  moe_rows8::launch_ex(down<G2, FORCE, PRO>, dim3(cols2, tiles), dim3(G2::kAll), size_t(sm2), true, "split64 down", a,
                       ws2);
  if constexpr (PRO) {
    constexpr int kThreadsC = 256;
    const int64_t n = s.M * s.H;
    moe_rows8::launch_ex(moe_fp8r2::combine_dep, dim3(unsigned((n / moe_pipeline::kYVec + kThreadsC - 1) / kThreadsC)),
                         dim3(kThreadsC), 0, true, "split64 combine", static_cast<const moe_pipeline::YElem*>(ws.p.y),
                         int64_t(s.M), int(s.H), a.cfg.total_top_k, a.out);
  } else {
    moe_pipeline::launch_combine(a, ws.p);
  }
}

// 4 k-blocks a stage and 4 A buffers, 4 stages (copies 2 ahead, 164 KB), tiles of up to 128 rows, one decode warpgroup
// (5 stages measured slower: docs/perf-moe-split64.md, call 6).
using GS = Cfg<4, 4, 128, 4>;

// The path as one unit for a composed variant: moe_fp8r2::Path's shapes (the 64-row shapes of v20, bs x k / routed
// > 40, moe_fp8r::supports) with (d_hidden / 32) and (d_expert / 32) in whole stages.
template <class A, class B, int FORCE = 0>
struct PathOf {
  static bool applies(const MoeConfig& c) {
    return c.bs * c.n_experts_per_token / c.n_routed_experts > 40 && moe_fp8r::supports(c) &&
           (c.d_hidden / 32) % A::KS == 0 && (c.d_expert / 32) % B::KS == 0;
  }
  static size_t workspace_bytes(const MoeConfig& c) { return moe_fp8r2::carve2(c, A::BN, nullptr, nullptr); }
  static void launch(const MoeArgs& a) { moe_split64::launch<A, B, FORCE>(a); }
};
using Path = PathOf<GS, GS>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_split64
