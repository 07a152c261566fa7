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

// How the weight nibbles become A fragments, the activation format (bytes per value, the order of
// each group of 8 values) that matches them, and the k32 product of one scale block. A weight word
// holds 8 e2m1 codes of one row (element i in nibble i): the shuffled layout gives lane (g, t) the
// words of rows g and g+8 for values 8t..8t+7 of the k-block.
//
// Fp8 forms (m16n8k32 e4m3; on sm_90 ptxas runs it as two f16 MMAs after software conversions):
//   Scaled: byte = sign << 7 | (code & 7) << 2 is exactly value * 2^-6 in e4m3 (the 2-bit exponent
//   lands in the exponent's low bits, the mantissa bit on top of the mantissa; code 1 = 0.5 becomes the
//   subnormal 2^-7): 8 integer ops a word. lo gets elements 0,2,4,6, hi 1,3,5,7, so activations are
//   stored with each group of 8 in the order 0,2,4,6,1,3,5,7. (v3's exact table decode measured 10-25%
//   slower in this pipeline: docs/perf.md.)
template <class Self>
struct Fp8Frags {
  static constexpr int kActBytes = 1;
  struct A {
    uint32_t r[4];
  };
  struct B {
    uint32_t r[2];
  };
  static constexpr bool kFolded = false;
  HD static uint32_t encode(uint32_t code, int /*scale_exp*/) { return mxfp4::e2m1_to_e4m3(code); }
  __device__ static A load_a(const uint8_t* kblock, int lane) {
    A a;
    Self::decode(*reinterpret_cast<const uint32_t*>(kblock + 4 * lane), a.r[0], a.r[2]);
    Self::decode(*reinterpret_cast<const uint32_t*>(kblock + 128 + 4 * lane), a.r[1], a.r[3]);
    return a;
  }
  __device__ static B load_b(const uint8_t* p) {  // the lane's 8 values
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    return B{{v.x, v.y}};
  }
  __device__ static void kblock(float d[4], const A& a, const B& b) { moe_mma::mma_e4m3_16x8x32(d, a.r, b.r); }
};

struct ScaledDecode : Fp8Frags<ScaledDecode> {
  static constexpr float kUnscale = 64.0f;
  HD static constexpr int position(int k) { return (k & 1) * 4 + (k >> 1); }
  __device__ static void decode(uint32_t w, uint32_t& lo, uint32_t& hi) {
    const uint32_t yl = (w << 2) & 0x3C3C3C3Cu;  // element 2i: magnitude bits 2-4, sign bit 5 of byte i
    const uint32_t yh = (w >> 2) & 0x3C3C3C3Cu;  // element 2i+1
    lo = yl + (yl & 0x20202020u) * 3u;           // sign bit 5 -> 7 (0x20 + 0x60 = 0x80; no carry out)
    hi = yh + (yh & 0x20202020u) * 3u;
  }
};


// f16 form: two chained m16n8k16 f16 MMAs per k-block, no conversions. Weight value * 2^-14 in f16 is
// sign << 15 | (code & 7) << 9 (same placement argument; code 1 becomes the subnormal 2^-15): the
// nibbles go to bytes with the sign fixed (bit 4 -> 7), then byte_perm places two bytes as the high
// bytes of an f16 pair: 12 integer ops for 8 values. Activations are f16 (exact e2m1 values), each
// group of 8 stored as 0,2,4,6,1,3,5,7 so a 16-byte load gives the B registers of both MMAs.
struct F16Decode {
  static constexpr int kActBytes = 2;
  static constexpr float kUnscale = 16384.0f;
  HD static constexpr int position(int k) { return (k & 1) * 4 + (k >> 1); }
  static constexpr bool kFolded = false;
  HD static uint32_t encode(uint32_t code, int /*scale_exp*/) {  // f16 bits of the e2m1 value
    const uint32_t e = (code >> 1) & 3u, m = code & 1u;
    const uint32_t mag = e ? ((e + 14u) << 10) | (m << 9) : (m ? 0x3800u : 0u);
    return mag | ((code & 8u) << 12);
  }
  struct A {
    uint32_t r[2][4];  // [k16 step][fragment register]
  };
  struct B {
    uint32_t r[2][2];
  };
  // Word -> (e0,e2), (e4,e6), (e1,e3), (e5,e7) as f16 pairs of value * 2^-14.
  __device__ static void decode(uint32_t w, uint32_t q[4]) {
    const uint32_t ev = (w << 1) & 0x1E1E1E1Eu, od = (w >> 3) & 0x1E1E1E1Eu;  // magnitude bits 1-3, sign bit 4
    const uint32_t e = ev + (ev & 0x10101010u) * 7u, o = od + (od & 0x10101010u) * 7u;  // sign bit 4 -> 7
    q[0] = __byte_perm(e, 0u, 0x1404u);
    q[1] = __byte_perm(e, 0u, 0x3424u);
    q[2] = __byte_perm(o, 0u, 0x1404u);
    q[3] = __byte_perm(o, 0u, 0x3424u);
  }
  __device__ static A load_a(const uint8_t* kblock, int lane) {
    uint32_t lo[4], hi[4];  // rows g and g+8
    decode(*reinterpret_cast<const uint32_t*>(kblock + 4 * lane), lo);
    decode(*reinterpret_cast<const uint32_t*>(kblock + 128 + 4 * lane), hi);
    return A{{{lo[0], hi[0], lo[1], hi[1]}, {lo[2], hi[2], lo[3], hi[3]}}};
  }
  __device__ static B load_b(const uint8_t* p) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    return B{{{v.x, v.y}, {v.z, v.w}}};
  }
  __device__ static void kblock(float d[4], const A& a, const B& b) {
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float h[4];
    moe_mma::mma_f16_16x8x16(h, a.r[0], b.r[0], zero);
    moe_mma::mma_f16_16x8x16(d, a.r[1], b.r[1], h);
  }
};

// bf16 with both scales folded into the operands (experimental): every e2m1 value times its e8m0
// scale is exact in bf16 and the products are exact in fp32, so the MMAs accumulate the whole K with no
// per-k-block rescale. Activations are the bf16 of their dequantized values (0,4,1,5,2,6,3,7 order).
// A: value * 2^-126 is sign << 15 | (code & 7) << 6 (code 1 = the subnormal 2^-127); nibbles k and k+4
// of a word land in the two halves with one shift, the sign moves from bit 9 to 15 by adding 63 x
// itself; then an exact bf16 multiply by 2^(126 + s) (normal for s <= 1), or by 2^126 and 2^s.
struct Bf16Folded {
  static constexpr int kActBytes = 2;
  static constexpr bool kFolded = true;
  HD static constexpr int position(int k) { return (k & 3) * 2 + (k >> 2); }
  HD static uint32_t encode(uint32_t code, int scale_exp) {
    return numerics::f32_to_bf16(mxfp4::e2m1_value(code) * numerics::exp2_f32(scale_exp));
  }
  struct A {
    uint32_t r[2][4];
  };
  struct B {
    uint32_t r[2][2];
  };
  __device__ static uint32_t mul_bf16x2(uint32_t x, uint32_t y) {  // x * y + (-0): exact here
    uint32_t r;
#if defined(__CUDA_ARCH__)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(x), "r"(y), "r"(0x80008000u));
#else
    r = x;
#endif
    return r;
  }
  // Word -> (e0,e4), (e1,e5), (e2,e6), (e3,e7) as bf16 pairs of value * 2^s (s = e8m0 byte b - 127).
  __device__ static void decode(uint32_t w, uint32_t b, uint32_t q[4]) {
    const uint32_t sh[4] = {w << 6, w << 2, w >> 2, w >> 6};
    const bool wide = b > 128u;  // 2^(126 + s) is not a normal bf16: two multiplies
    const uint32_t m1 = wide ? 0x7E807E80u : b * 0x00800080u + 0x3F003F00u;  // bf16x2 2^126 | 2^(b - 1)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t y = sh[k] & 0x03C003C0u;       // magnitude bits 6-8, sign bit 9, in each half
      q[k] = mul_bf16x2(y + (y & 0x02000200u) * 63u, m1);  // sign 9 -> 15
    }
    if (wide) {
      const uint32_t m2 = b * 0x00800080u;  // 2^(b - 127)
#pragma unroll
      for (int k = 0; k < 4; ++k) q[k] = mul_bf16x2(q[k], m2);
    }
  }
  __device__ static A load_a(const uint8_t* kblock, int lane, uint32_t scale_g, uint32_t scale_g8) {
    uint32_t lo[4], hi[4];  // rows g and g+8
    decode(*reinterpret_cast<const uint32_t*>(kblock + 4 * lane), scale_g, lo);
    decode(*reinterpret_cast<const uint32_t*>(kblock + 128 + 4 * lane), scale_g8, hi);
    return A{{{lo[0], hi[0], lo[1], hi[1]}, {lo[2], hi[2], lo[3], hi[3]}}};
  }
  __device__ static B load_b(const uint8_t* p) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    return B{{{v.x, v.y}, {v.z, v.w}}};
  }
  __device__ static void kblock_acc(float acc[4], const A& a, const B& b) {
    moe_mma::mma_bf16_16x8x16(acc, a.r[0], b.r[0], acc);
    moe_mma::mma_bf16_16x8x16(acc, a.r[1], b.r[1], acc);
  }
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
// cp_async<16> when valid; otherwise the 16 bytes are zero-filled and global memory is not read.
__device__ inline void cp_async16_zfill(void* smem_dst, const void* gmem_src, bool valid) {
#if defined(__CUDA_ARCH__)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem_src), "r"(valid ? 16 : 0) : "memory");
#endif
}
// bytes (a multiple of 16) from p (16-byte aligned) into L2, asynchronously (sm_90: a bulk prefetch; no-op before).
__device__ inline void prefetch_l2(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
#else
  (void)p, (void)bytes;
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
  static_assert(KS == 4 || KS == 8, "a scale row slice is one 4- or 8-byte copy");
};

// Shared memory of one pipeline stage: weights, weight scales, activations, activation scales.
template <class C, class D>
struct Layout {
  static constexpr int kXRow = C::KS * 32 * D::kActBytes;  // activation bytes of one row per stage
  static constexpr int kXStride = kXRow + 32 * D::kActBytes;  // padded: B loads free of bank conflicts
  static constexpr int kW = 0;
  static constexpr int kWs = kW + C::BM * C::KS * 16;
  static constexpr int kX = kWs + align16(C::BM * C::KS);
  static constexpr int kXs = kX + C::BN * kXStride;
  static constexpr int kStageBytes = kXs + align16(C::BN * C::KS);
  static constexpr int kPipeBytes = C::STAGES * kStageBytes;
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
  using L = Layout<C, D>;
  const int nk = op.KB / C::KS;
  const int64_t rg_bytes = int64_t(op.k_bytes / 32) * 512;  // one 16-row group, all K

#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;

  auto load = [&](int slot, int kb0) {
    uint8_t* st = smem + slot * L::kStageBytes;
    constexpr int kWChunks = C::BM * C::KS;  // 16-byte chunks: (BM / 16) groups x KS * 16
    for (int i = tid; i < kWChunks; i += C::kThreads) {
      const int r = i / (C::KS * 16), ch = i % (C::KS * 16);
      cp_async<16>(st + L::kW + r * C::KS * 256 + ch * 16, op.w + rg[r] * rg_bytes + kb0 * 256 + ch * 16);
    }
    for (int r = tid; r < C::BM; r += C::kThreads)
      cp_async<C::KS>(st + L::kWs + r * C::KS, op.w_scale + (int64_t(rg[r / 16]) * 16 + r % 16) * op.KB + kb0);
    constexpr int kXChunks = L::kXRow / 16;
    for (int i = tid; i < C::BN * kXChunks; i += C::kThreads) {
      const int c = i / kXChunks, ch = i % kXChunks;
      cp_async<16>(st + L::kX + c * L::kXStride + ch * 16, xrow[c] + kb0 * 32 * D::kActBytes + ch * 16);
    }
    if constexpr (!D::kFolded)
      for (int c = tid; c < C::BN; c += C::kThreads) cp_async<C::KS>(st + L::kXs + c * C::KS, xsrow[c] + kb0);
  };

  auto compute = [&](int slot) {
    if constexpr (D::kFolded) {
      const uint8_t* st = smem + slot * L::kStageBytes;
#pragma unroll(C::kUnrollK)
      for (int u = 0; u < C::KS; ++u) {
        typename D::A a[C::MT];
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          const int grp = wm * C::MT + m;
          const uint8_t* sc = st + L::kWs + (grp * 16 + g) * C::KS + u;
          a[m] = D::load_a(st + L::kW + (grp * C::KS + u) * 256, lane, sc[0], sc[8 * C::KS]);
        }
#pragma unroll
        for (int j = 0; j < C::NG; ++j) {
          const int col = (wn * C::NG + j) * 8;
          const typename D::B b =
              D::load_b(st + L::kX + (col + g) * L::kXStride + (u * 32 + 8 * t) * D::kActBytes);
#pragma unroll
          for (int m = 0; m < C::MT; ++m) D::kblock_acc(acc[m][j], a[m], b);
        }
      }
    } else {
      const uint8_t* st = smem + slot * L::kStageBytes;
#pragma unroll(C::kUnrollK)
      for (int u = 0; u < C::KS; ++u) {
        typename D::A a[C::MT];
        float wsc[C::MT][2];
#pragma unroll
        for (int m = 0; m < C::MT; ++m) {
          const int grp = wm * C::MT + m;
          a[m] = D::load_a(st + L::kW + (grp * C::KS + u) * 256, lane);
          const uint8_t* sc = st + L::kWs + (grp * 16 + g) * C::KS + u;
          wsc[m][0] = mxfp4::e8m0_value(sc[0]) * D::kUnscale;
          wsc[m][1] = mxfp4::e8m0_value(sc[8 * C::KS]) * D::kUnscale;
        }
#pragma unroll
        for (int j = 0; j < C::NG; ++j) {
          const int col = (wn * C::NG + j) * 8;
          const typename D::B b =
              D::load_b(st + L::kX + (col + g) * L::kXStride + (u * 32 + 8 * t) * D::kActBytes);
          const uint8_t* xs = st + L::kXs + (col + 2 * t) * C::KS + u;
          const float x0 = mxfp4::e8m0_value(xs[0]), x1 = mxfp4::e8m0_value(xs[C::KS]);
#pragma unroll
          for (int m = 0; m < C::MT; ++m) {
            float d[4];
            D::kblock(d, a[m], b);
            acc[m][j][0] += d[0] * (wsc[m][0] * x0);
            acc[m][j][1] += d[1] * (wsc[m][0] * x1);
            acc[m][j][2] += d[2] * (wsc[m][1] * x0);
            acc[m][j][3] += d[3] * (wsc[m][1] * x1);
          }
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
