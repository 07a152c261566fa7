// Block-tile MXFP4 x MXFP4 GEMM core on fp8 e4m3 mma.sync (NVIDIA sm_89+) for the sorted MoE
// pipeline. A block computes BM weight rows x BN activation columns (sorted token-expert rows) over
// the whole K: weight k-blocks (official 16x16-shuffled layout, 256 contiguous bytes per 16 rows x 32
// values), their e8m0 scales, the activation bytes (e4m3 holding e2m1 values) and their scales are
// copied to shared memory with cp.async in a STAGES-deep pipeline of KS k-blocks per stage. Warps form
// a WM x WN grid; each owns MT 16-row groups x NG 8-column groups and decodes its own A fragments.
// Each k32 MMA covers one scale block; its fp32 result is scaled by (weight scale x activation scale).
#pragma once
#include "problems/common/moe_mma.h"

namespace moe_tile {

// How the weight nibbles become e4m3 A fragments, and the activation byte order that matches it.
// A word holds 8 e2m1 codes of one row (element i in nibble i); lo feeds MMA k 4t..4t+3, hi 16+4t...
//
// Scaled: byte = sign << 7 | (code & 7) << 2, which is exactly value * 2^-6 in e4m3 (the 2-bit
// exponent lands in the exponent's low bits, the mantissa bit on top of the mantissa; code 1 = 0.5
// becomes the subnormal 2^-7). 8 integer ops per word. lo gets elements 0,2,4,6, hi 1,3,5,7, so the
// activations are stored with every group of 8 values in the order 0,2,4,6,1,3,5,7.
struct ScaledDecode {
  static constexpr float kUnscale = 64.0f;
  HD static constexpr int position(int k) { return (k & 1) * 4 + (k >> 1); }
  __device__ static void decode(uint32_t w, uint32_t& lo, uint32_t& hi) {
    const uint32_t yl = (w << 2) & 0x3C3C3C3Cu;  // element 2i: magnitude bits 2-4, sign bit 5 of byte i
    const uint32_t yh = (w >> 2) & 0x3C3C3C3Cu;  // element 2i+1
    lo = yl + (yl & 0x20202020u) * 3u;           // sign bit 5 -> 7 (0x20 + 0x60 = 0x80; no carry out)
    hi = yh + (yh & 0x20202020u) * 3u;
  }
};

// Exact: the e4m3 byte of each value by a table lookup (mxfp4_decode.h); natural activation order.
struct ExactDecode {
  static constexpr float kUnscale = 1.0f;
  HD static constexpr int position(int k) { return k; }
  __device__ static void decode(uint32_t w, uint32_t& lo, uint32_t& hi) { mxfp4::e2m1x8_to_e4m3x8(w, lo, hi); }
};

#if defined(MOE_HAVE_MMA_SYNC)
constexpr int kMmaLanes = 32;  // lanes of an mma.sync fragment (PTX-defined); NVIDIA path only

// Global -> shared copy of N bytes (4, 8 or 16), asynchronous.
template <int N>
__device__ inline void cp_async(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  if constexpr (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gmem_src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(gmem_src), "n"(N) : "memory");
#endif
}
__device__ inline void cp_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int Pending>
__device__ inline void cp_wait() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

constexpr int align16(int b) { return (b + 15) & ~15; }

template <int WM_, int WN_, int MT_, int NG_, int KS_, int STAGES_, int MIN_BLOCKS_ = 1>
struct Cfg {
  static constexpr int WM = WM_, WN = WN_, MT = MT_, NG = NG_, KS = KS_, STAGES = STAGES_;
  static constexpr int kMinBlocks = MIN_BLOCKS_;  // per SM, for the register budget
  static constexpr int kUnrollK = MIN_BLOCKS_ > 1 ? 1 : KS;  // a tight budget: one k-block at a time
  static constexpr int kWarps = WM * WN, kThreads = kWarps * kMmaLanes;
  static constexpr int BM = WM * MT * 16, BN = WN * NG * 8;
  static constexpr int kXStride = KS * 32 + 32;  // padded: the B-fragment loads are free of bank conflicts
  static constexpr int kW = 0;
  static constexpr int kWs = kW + BM * KS * 16;
  static constexpr int kX = kWs + align16(BM * KS);
  static constexpr int kXs = kX + BN * kXStride;
  static constexpr int kStageBytes = kXs + align16(BN * KS);
  static constexpr int kPipeBytes = STAGES * kStageBytes;
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
};

// One matrix of one expert: shuffled weights, raw [rows, KB] scales.
struct Operands {
  const uint8_t* w;
  const uint8_t* w_scale;
  int k_bytes;  // K / 2
  int KB;       // K / 32
};

// acc = A (the BM rows of groups rg[]) x B (the BN activation rows xrow[], scales xsrow[]), fp32.
// rg, xrow, xsrow live in shared memory and are ready (barrier) before the call; smem holds
// Cfg::kPipeBytes. Ends with a barrier-free state: the caller syncs before reusing smem.
template <class C, class D>
__device__ inline void mainloop(const Operands& op, const int* rg, const uint8_t* const* xrow,
                                const uint8_t* const* xsrow, uint8_t* smem, float (&acc)[C::MT][C::NG][4]) {
  const int tid = threadIdx.x, lane = tid % kMmaLanes, warp = tid / kMmaLanes;
  const int wm = warp % C::WM, wn = warp / C::WM, g = lane / 4, t = lane % 4;
  const int nk = op.KB / C::KS;
  const int64_t rg_bytes = int64_t(op.k_bytes / 32) * 512;  // one 16-row group, all K

#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;

  auto load = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * C::kStageBytes;
    constexpr int kWChunks = C::BM * C::KS;  // 16-byte chunks: (BM / 16) groups x KS * 16
    for (int i = tid; i < kWChunks; i += C::kThreads) {
      const int r = i / (C::KS * 16), ch = i % (C::KS * 16);
      cp_async<16>(st + C::kW + r * C::KS * 256 + ch * 16, op.w + rg[r] * rg_bytes + kb0 * 256 + ch * 16);
    }
    for (int r = tid; r < C::BM; r += C::kThreads)
      cp_async<C::KS>(st + C::kWs + r * C::KS, op.w_scale + (int64_t(rg[r / 16]) * 16 + r % 16) * op.KB + kb0);
    for (int i = tid; i < C::BN * C::KS * 2; i += C::kThreads) {
      const int c = i / (C::KS * 2), ch = i % (C::KS * 2);
      cp_async<16>(st + C::kX + c * C::kXStride + ch * 16, xrow[c] + kb0 * 32 + ch * 16);
    }
    for (int c = tid; c < C::BN; c += C::kThreads) cp_async<C::KS>(st + C::kXs + c * C::KS, xsrow[c] + kb0);
  };

  auto compute = [&](int slot) {
    const uint8_t* st = smem + slot * C::kStageBytes;
#pragma unroll(C::kUnrollK)
    for (int u = 0; u < C::KS; ++u) {
      uint32_t a[C::MT][4];
      float wsc[C::MT][2];
#pragma unroll
      for (int m = 0; m < C::MT; ++m) {
        const int grp = wm * C::MT + m;
        const uint8_t* blk = st + C::kW + (grp * C::KS + u) * 256;
        D::decode(*reinterpret_cast<const uint32_t*>(blk + 4 * lane), a[m][0], a[m][2]);
        D::decode(*reinterpret_cast<const uint32_t*>(blk + 128 + 4 * lane), a[m][1], a[m][3]);
        const uint8_t* sc = st + C::kWs + (grp * 16 + g) * C::KS + u;
        wsc[m][0] = mxfp4::e8m0_value(sc[0]) * D::kUnscale;
        wsc[m][1] = mxfp4::e8m0_value(sc[8 * C::KS]) * D::kUnscale;
      }
#pragma unroll
      for (int j = 0; j < C::NG; ++j) {
        const int col = (wn * C::NG + j) * 8;
        const uint2 bv = *reinterpret_cast<const uint2*>(st + C::kX + (col + g) * C::kXStride + u * 32 + 8 * t);
        const uint32_t b[2] = {bv.x, bv.y};
        const uint8_t* xs = st + C::kXs + (col + 2 * t) * C::KS + u;
        const float x0 = mxfp4::e8m0_value(xs[0]), x1 = mxfp4::e8m0_value(xs[C::KS]);
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          float d[4];
          moe_mma::mma_e4m3_16x8x32(d, a[m], b);
          acc[m][j][0] += d[0] * (wsc[m][0] * x0);
          acc[m][j][1] += d[1] * (wsc[m][0] * x1);
          acc[m][j][2] += d[2] * (wsc[m][1] * x0);
          acc[m][j][3] += d[3] * (wsc[m][1] * x1);
        }
      }
    }
  };

#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < nk) load(s, s * C::KS);
    cp_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    cp_wait<C::STAGES - 2>();
    __syncthreads();  // stage ks landed for every thread; stage ks - 1 is no longer read
    const int next = ks + C::STAGES - 1;
    if (next < nk) load(next % C::STAGES, next * C::KS);
    cp_commit();
    compute(ks % C::STAGES);
  }
  cp_wait<0>();
}

// Row (local weight row) and column (local activation column) of accumulator element i of (m, j).
template <class C>
struct AccIndex {
  int row0, col0;
  __device__ AccIndex() {
    const int lane = threadIdx.x % kMmaLanes, warp = threadIdx.x / kMmaLanes;
    row0 = (warp % C::WM) * C::MT * 16 + lane / 4;
    col0 = (warp / C::WM) * C::NG * 8 + 2 * (lane % 4);
  }
  __device__ int row(int m, int i) const { return row0 + m * 16 + 8 * (i >> 1); }
  __device__ int col(int j, int i) const { return col0 + j * 8 + (i & 1); }
};

#endif  // MOE_HAVE_MMA_SYNC

}  // namespace moe_tile
