// mla_decode on fp8 KV with the Hopper warpgroup MMA (wgmma, sm_90a) for Q K^T (v10): v8's
// pipeline (one 8-warp block per SM, a cp.async ring of 64-token tiles, two block barriers per tile,
// the lazy block-wide reference maximum, P V on f16 mma.sync with warp 0's column of ones for the
// softmax sum), but the logits come from e4m3 x e4m3 wgmma reading the fp8 K tile straight from
// shared memory, so the 72 fp8 -> f16 conversions and 36 mma.sync per warp and tile of v8's Q K^T
// (and its 144 Q registers) are gone.
//
// Q in e4m3, two terms: per block, q is scaled by sq = 2^(8 - e) (|q| * sq < 256 for the block's
// largest |q| < 2^e), hi = e4m3(q sq), lo = e4m3((q sq - hi) * 16); logit = (K.hi + K.lo / 16) / sq,
// which keeps about 8 significant bits of q (bf16 has 8), so the errors stay those of the fp8 KV.
// Both terms are rows (or columns) of one wgmma: the lo products come at no extra instruction.
//
// Shared layout of a tile: the wgmma canonical K-major layout without swizzle. Column c (16 bytes
// of dims 16c .. 16c+15) of all 64 tokens is one 1040-byte block (64 rows of 16 bytes + 16 bytes of
// padding), token r at byte 16 r in it: core matrices (8 rows x 16 bytes) are contiguous, the leading
// (K) offset is 1040 and the stride (8-row) offset 128. The padding makes P V's 32-bit V loads (dims
// 64 w + 32 gr + 4 g of rows 2t, 2t+1, 2t+8, 2t+9) hit 32 distinct banks.
//
// Two Q K^T modes (template parameter):
//   RegQ (A = Q from registers, B = K from shared memory): warpgroup wg computes tokens
//     32 wg .. 32 wg + 31 of the tile (m64n32k32); A rows: warp 0 of the group holds hi (row g) and
//     lo (row g + 8) of heads 0-7, warp 1 of heads 8-15, warps 2 and 3 zeros. K is read once.
//   SmemQ (A = K from shared memory, B = Q from shared memory): warpgroup wg computes all 64 tokens
//     for heads 8 wg .. 8 wg + 7 (m64n16k32, columns: hi of the 8 heads, then lo). Q is converted
//     once per block into shared memory; every warp gets 4 logits per tile. K is read twice.
#pragma once
#include "problems/common/async_copy.h"
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(MMA_TILE_NVIDIA)
#define MLA_WGMMA_SM90A 1
#endif

namespace mla_wg {

using namespace mla_kernels;

constexpr int kWarps = 8;
constexpr int kTile = 64;
constexpr int kCols = kDimQK / 16;              // 16-byte K columns per token: 36
constexpr int kColBytes = kTile * 16 + 16;      // one column of a tile, padded
constexpr int kStageBytes = kCols * kColBytes;  // 37440
constexpr int kQRows = 2 * kHeads;              // SmemQ: hi and lo rows of 16 heads
constexpr int kQColBytes = kQRows * 16;         // 512
constexpr int kPRow = kTile + 16;               // f16 per head row of P (as v8)
constexpr float kRescaleSlack = 8.f;            // log2 units

template <bool RegQ, int Stages>
struct Cfg {
  static constexpr int kStages = Stages;
  static constexpr int kTmaxPerHead = RegQ ? 2 : 4;  // tile-max partials per head
  static constexpr size_t q = size_t(Stages) * kStageBytes;
  static constexpr size_t p = q + (RegQ ? 0 : size_t(kCols) * kQColBytes);
  static constexpr size_t tmax = p + size_t(kHeads) * kPRow * 2;
  static constexpr size_t flag = tmax + size_t(kHeads) * kTmaxPerHead * 4;
  static constexpr size_t red = flag + 16;
  static constexpr size_t stats = red + size_t(kWarps) * 4;  // l[16], m[16]
  static constexpr size_t total = stats + 2 * kHeads * 4;
};

#if defined(HARNESS_GPU)

// Two fp8 (low 16 bits, element 0 low) -> f16 pair of the same values.
__device__ inline uint32_t fp8x2_to_f16x2(uint32_t h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(uint16_t(h & 0xffffu)));
  return r;
#else
  return hmul2_bits(fp8x4_to_f16x4_scaled(h & 0xffffu).x, 0x5c005c00u);  // * 2^8, exact
#endif
}

// V pair (byte j of a, byte j of b) as an f16 pair.
__device__ inline uint32_t fp8_pair(uint32_t a, uint32_t b, int j) {
  return fp8x2_to_f16x2(byte_perm(a, b, uint32_t(j) | (uint32_t(4 + j) << 4)));
}

#if defined(MLA_WGMMA_SM90A)
// f32 -> e4m3 code (round to nearest even, saturating), in the low byte.
__device__ inline uint32_t e4m3_code(float x) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.f), "f"(x));  // second source -> low byte
  return r & 0xffu;
}
__device__ inline float e4m3_value(uint32_t code) { return f16_bits_to_f32(uint16_t(fp8x2_to_f16x2(code) & 0xffffu)); }

// Four consecutive bf16 q values (two words) -> hi and lo e4m3 codes, byte i = element i.
__device__ inline void q_hi_lo(uint2 w, float sq, uint32_t& hi, uint32_t& lo) {
  const float x[4] = {__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u), __uint_as_float(w.y << 16),
                      __uint_as_float(w.y & 0xffff0000u)};
  hi = 0;
  lo = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float xs = x[i] * sq;
    const uint32_t h = e4m3_code(xs);
    hi |= h << (8 * i);
    lo |= e4m3_code((xs - e4m3_value(h)) * 16.f) << (8 * i);
  }
}

// Shared-memory matrix descriptor: no swizzle, leading (K) and stride (8-row) byte offsets.
__device__ inline uint64_t smem_desc(const void* p, uint32_t lead, uint32_t stride) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return uint64_t((a & 0x3ffffu) >> 4) | (uint64_t(lead >> 4) << 16) | (uint64_t(stride >> 4) << 32);
}

__device__ inline void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// D[64 x 16] += A[64 x 32] B[32 x 16], both e4m3 from shared memory (K-major).
__device__ inline void wg_ss_n16(float (&d)[8], uint64_t da, uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(da), "l"(db));
}
__device__ inline void wg_wait_n16(float (&d)[8]) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               :
               : "memory");
}
// D[64 x 32] += A[64 x 32] (registers) B[32 x 32] (shared memory), e4m3.
__device__ inline void wg_rs_n32(float (&d)[16], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ inline void wg_wait_n32(float (&d)[16]) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               :
               : "memory");
}
#endif  // MLA_WGMMA_SM90A

// Position of tile row `row` in a P row (v8's order: PV's logical k 4t..4t+3 = tokens 2t, 2t+1, 2t+8, 2t+9).
__device__ inline int p_pos(int row) {
  const int rr = row & 15;
  return (row & ~15) + 4 * ((rr >> 1) & 3) + ((rr & 1) | ((rr >> 3) << 1));
}

template <bool RegQ, int Stages, int BlocksPerSM>
static __global__ void __launch_bounds__(kWarps * kernel_warp_size(), BlocksPerSM)
    mla_fp8_wgmma_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_WGMMA_SM90A)
  using C = Cfg<RegQ, Stages>;
  constexpr int W = kernel_warp_size();
  constexpr int kThreads = kWarps * W;
  constexpr int kT = C::kTmaxPerHead;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(kThreads == 4 * kTile && kCols % 4 == 0, "copy plan: four threads per row");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* q_sm = smem + C::q;
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + C::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + C::tmax);
  int* flag_sm = reinterpret_cast<int*>(smem + C::flag);
  float* red_sm = reinterpret_cast<float*>(smem + C::red);
  float* l_sm = reinterpret_cast<float*>(smem + C::stats);
  float* m_sm = l_sm + kHeads;

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int lane = tid % W, warp = tid / W;
  const int g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2, w4 = warp & 3;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const int n_tiles = (n_tokens + kTile - 1) / kTile;

  // Copies: thread -> row tid / 4, columns tid % 4 + 4 i.
  const int ld_row = tid >> 2, ld_col = tid & 3;
  auto issue = [&](int tile) {
    if (tile < n_tiles) {
      const int valid = min(kTile, n_tokens - tile * kTile);
      const int64_t src_row = t0 + int64_t(tile) * kTile + min(ld_row, valid - 1);  // past the end: a valid row
      const uint8_t* src = a.kv_fp8 + src_row * kDimQK + 16 * ld_col;
      unsigned char* dst = smem + (tile % Stages) * kStageBytes + ld_col * kColBytes + 16 * ld_row;
#pragma unroll
      for (int i = 0; i < kCols / 4; ++i) async_copy_16(dst + 4 * i * kColBytes, src + 64 * i);
    }
    async_commit();  // empty groups keep the wait count uniform
  };
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) issue(s);
  if (tid == 0) *flag_sm = -1;

  // Q scale: sq = 2^(8 - e) with the block's largest |q| < 2^e.
  const uint16_t* qb = a.q + int64_t(b) * kHeads * kDimQK;
  float amax = 0.f;
  for (int i = tid; i < kHeads * kDimQK / 8; i += kThreads) {
    const uint4 v = reinterpret_cast<const uint4*>(qb)[i];
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k)
      amax = fmaxf(amax, fmaxf(__uint_as_float((w[k] << 16) & 0x7fff0000u), __uint_as_float(w[k] & 0x7fff0000u)));
  }
  amax = warp_max(amax);
  if (lane == 0) red_sm[warp] = amax;
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kWarps; ++i) amax = fmaxf(amax, red_sm[i]);
  int q_exp = 0;
  frexpf(amax, &q_exp);
  q_exp = max(q_exp, -100);
  const float sq = ldexpf(1.f, 8 - q_exp);

  uint32_t qa[RegQ ? kDimQK / 32 : 1][4];
  if constexpr (RegQ) {
    // A rows of this warp: hi (row g) and lo (row g + 8) of head 8 w4 + g; warps 2, 3: zeros.
#pragma unroll
    for (int kk = 0; kk < kDimQK / 32; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) qa[kk][r] = 0;
    if (w4 < 2) {
      const uint16_t* qh = qb + (8 * w4 + g) * kDimQK + 4 * t;
#pragma unroll
      for (int kk = 0; kk < kDimQK / 32; ++kk) {
        q_hi_lo(*reinterpret_cast<const uint2*>(qh + 32 * kk), sq, qa[kk][0], qa[kk][1]);
        q_hi_lo(*reinterpret_cast<const uint2*>(qh + 32 * kk + 16), sq, qa[kk][2], qa[kk][3]);
      }
    }
  } else {
    // Q rows R = 16 (h / 8) + 8 lo + h % 8, column c at 512 c, row R at 16 R.
    for (int i = tid; i < kHeads * kDimQK / 4; i += kThreads) {
      const int h = i / (kDimQK / 4), k = 4 * (i % (kDimQK / 4));
      uint32_t hi, lo;
      q_hi_lo(*reinterpret_cast<const uint2*>(qb + h * kDimQK + k), sq, hi, lo);
      const int row = 16 * (h >> 3) + (h & 7);
      unsigned char* dst = q_sm + (k >> 4) * kQColBytes + (k & 15);
      *reinterpret_cast<uint32_t*>(dst + 16 * row) = hi;
      *reinterpret_cast<uint32_t*>(dst + 16 * (row + 8)) = lo;
    }
    proxy_fence();  // generic writes -> visible to the tensor unit's reads (after the first barrier)
  }
  (void)qa;

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale / sq;

  mma::FragC o[2][4], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int gr = 0; gr < 2; ++gr)
#pragma unroll
    for (int j = 0; j < 4; ++j) o[gr][j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
  // Reference maxima (the same in every thread of the block for a head): PV heads g, g + 8; softmax
  // heads: SmemQ 8 wg + 2t + f (f = 0, 1); RegQ 8 w4 + g (warps with w4 < 2).
  float m_pv[2] = {-INFINITY, -INFINITY};
  float m_sx[2] = {-INFINITY, -INFINITY};
  const mma::FragB ones = make_uint2(0x3c003c00u, 0x3c003c00u);

  auto m_tile_of = [&](int h) {
    float m = tmax_sm[h * kT];
#pragma unroll
    for (int i = 1; i < kT; ++i) m = fmaxf(m, tmax_sm[h * kT + i]);
    return m;
  };

  for (int tile = 0; tile < n_tiles; ++tile) {
    async_wait<Stages - 2>();
    proxy_fence();    // the landed copies -> visible to wgmma
    __syncthreads();  // the tile has landed; every warp is done with tile - 1 (its stage, P, maxima)
    issue(tile + Stages - 1);
    const unsigned char* st = smem + (tile % Stages) * kStageBytes;
    const int valid = min(kTile, n_tokens - tile * kTile);

    // ---- logits, tile maxima, P ----
    // SmemQ: s[e][f] = token 16 w4 + g + 8e, head 8 wg + 2t + f.  RegQ: s[j][e] = token 32 wg + 8 j + 2t + e,
    // head 8 w4 + g (w4 < 2).
    constexpr int kS = RegQ ? 8 : 4;
    float s[kS];
    bool softmax_warp = true;
    if constexpr (RegQ) {
      float d[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) d[i] = 0.f;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < kDimQK / 32; ++kk)
        wg_rs_n32(d, qa[kk], smem_desc(st + 2 * kk * kColBytes + wg * 4 * 128, kColBytes, 128));
      wg_commit();
      wg_wait_n32(d);
      softmax_warp = w4 < 2;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int row = 32 * wg + 8 * j + 2 * t + e;
          const float v = (d[4 * j + e] + d[4 * j + 2 + e] * 0.0625f) * logit_scale;
          s[2 * j + e] = row < valid ? v : -INFINITY;
        }
      float mx = s[0];
#pragma unroll
      for (int i = 1; i < 8; ++i) mx = fmaxf(mx, s[i]);
      mx = fmaxf(mx, __shfl_xor(mx, 1));
      mx = fmaxf(mx, __shfl_xor(mx, 2));
      if (softmax_warp) {
        const int h = 8 * w4 + g;
        if (mx > m_sx[0] + kRescaleSlack) *flag_sm = tile;  // same value from all
        if (t == 0) tmax_sm[h * kT + wg] = mx;
      }
    } else {
      float d[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) d[i] = 0.f;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < kDimQK / 32; ++kk)
        wg_ss_n16(d, smem_desc(st + 2 * kk * kColBytes, kColBytes, 128),
                  smem_desc(q_sm + 2 * kk * kQColBytes + wg * 256, kQColBytes, 128));
      wg_commit();
      wg_wait_n16(d);
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int f = 0; f < 2; ++f) {
          const int row = 16 * w4 + g + 8 * e;
          const float v = (d[2 * e + f] + d[4 + 2 * e + f] * 0.0625f) * logit_scale;
          s[2 * e + f] = row < valid ? v : -INFINITY;
        }
#pragma unroll
      for (int f = 0; f < 2; ++f) {
        float mx = fmaxf(s[f], s[2 + f]);
        mx = fmaxf(mx, __shfl_xor(mx, 4));
        mx = fmaxf(mx, __shfl_xor(mx, 8));
        mx = fmaxf(mx, __shfl_xor(mx, 16));
        if (mx > m_sx[f] + kRescaleSlack) *flag_sm = tile;  // same value from all
        if (g == 0) tmax_sm[(8 * wg + 2 * t + f) * kT + w4] = mx;
      }
    }
    auto write_p = [&]() {
      if constexpr (RegQ) {
        if (softmax_warp) {
          uint16_t* pr = p_sm + (8 * w4 + g) * kPRow;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int row = 32 * wg + 8 * j + 2 * t;  // rows row, row + 1 are adjacent in P
            *reinterpret_cast<uint32_t*>(pr + p_pos(row)) = pack16(f32_to_f16_bits(exp2f(s[2 * j] - m_sx[0])),
                                                                   f32_to_f16_bits(exp2f(s[2 * j + 1] - m_sx[0])));
          }
        }
      } else {
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int f = 0; f < 2; ++f)
            p_sm[(8 * wg + 2 * t + f) * kPRow + p_pos(16 * w4 + g + 8 * e)] =
                f32_to_f16_bits(exp2f(s[2 * e + f] - m_sx[f]));
      }
    };
    write_p();
    __syncthreads();

    if (*flag_sm == tile) {  // block-uniform: raise the reference maxima to the tile maxima, rescale, rewrite P
      float alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float m_new = fmaxf(m_pv[r], m_tile_of(g + 8 * r));
        alpha[r] = m_new == m_pv[r] ? 1.f : exp2f(m_pv[r] - m_new);
        m_pv[r] = m_new;
      }
      if constexpr (RegQ) {
        if (softmax_warp) m_sx[0] = fmaxf(m_sx[0], m_tile_of(8 * w4 + g));
      } else {
#pragma unroll
        for (int f = 0; f < 2; ++f) m_sx[f] = fmaxf(m_sx[f], m_tile_of(8 * wg + 2 * t + f));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int gr = 0; gr < 2; ++gr)
#pragma unroll
          for (int j = 0; j < 4; ++j) o[gr][j].v[i] *= alpha[i >> 1];
        lacc.v[i] *= alpha[i >> 1];
      }
      write_p();
      __syncthreads();
    }

    // ---- P V (v8's fragments; V addresses in the column layout) ----
    const unsigned char* vb = st + (4 * warp + (g >> 2)) * kColBytes + 4 * (g & 3) + 2 * t * 16;
#pragma unroll
    for (int ks = 0; ks < kTile / 16; ++ks) {
      mma::FragA pa;
#pragma unroll
      for (int r = 0; r < 2; ++r)
        pa.row[r] = *reinterpret_cast<const uint2*>(p_sm + (g + 8 * r) * kPRow + 16 * ks + 4 * t);
      const unsigned char* r0 = vb + 16 * 16 * ks;  // rows 16 ks + 2t, +1, +8, +9
#pragma unroll
      for (int gr = 0; gr < 2; ++gr) {
        const unsigned char* c0 = r0 + 2 * gr * kColBytes;
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(c0);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(c0 + 16);
        const uint32_t w2 = *reinterpret_cast<const uint32_t*>(c0 + 8 * 16);
        const uint32_t w3 = *reinterpret_cast<const uint32_t*>(c0 + 9 * 16);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma::mma<mma::Elem::f16>(o[gr][j], pa, make_uint2(fp8_pair(w0, w1, j), fp8_pair(w2, w3, j)));
      }
      if (warp == 0) mma::mma<mma::Elem::f16>(lacc, pa, ones);
    }
  }
  async_wait<0>();

  if (warp == 0 && t == 0) {
    l_sm[g] = lacc.v[0];
    l_sm[g + 8] = lacc.v[2];
    m_sm[g] = m_pv[0];
    m_sm[g + 8] = m_pv[1];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int h = g + 8 * (i >> 1);
    const float l = l_sm[h];
    const float f = l > 0.f ? kv_scale / l : 0.f;
#pragma unroll
    for (int gr = 0; gr < 2; ++gr) {
      const int dim = 64 * warp + 32 * gr + 4 * (2 * t + (i & 1));  // dims dim .. dim + 3 are n-tiles 0..3
      const float v0 = o[gr][0].v[i] * f, v1 = o[gr][1].v[i] * f, v2 = o[gr][2].v[i] * f, v3 = o[gr][3].v[i] * f;
      if (splits == 1) {
        *reinterpret_cast<uint2*>(a.out + (int64_t(b) * kHeads + h) * kDimV + dim) =
            make_uint2(pack16(f32_to_bf16_bits(v0), f32_to_bf16_bits(v1)), pack16(f32_to_bf16_bits(v2), f32_to_bf16_bits(v3)));
      } else {
        *reinterpret_cast<float4*>(part.o + ((size_t(b) * splits + split) * kHeads + h) * kDimV + dim) =
            make_float4(v0, v1, v2, v3);
      }
    }
  }
  if (splits > 1 && tid < kHeads)
    part.lse[(size_t(b) * splits + split) * kHeads + tid] = l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part;
  __builtin_trap();  // needs sm_90a (wgmma)
#endif
}

// ForcedSplit > 0 (a check of the code path, not a tuning): splits of that many tokens, so that
// tiles shorter than kTile occur on shapes whose kv length is a multiple of kTile.
template <int BlocksPerSM, int ForcedSplit>
static SplitPlan wg_plan(const MlaDecodeConfig& c) {
  if constexpr (ForcedSplit > 0) {
    const int splits = (c.kv_seq_len + ForcedSplit - 1) / ForcedSplit;
    if (splits > kMaxSplits) throw std::runtime_error("mla_fp8_wgmma: forced split too short for this shape");
    return {splits, ForcedSplit};
  }
  return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, BlocksPerSM, kTile, 128);
}

template <int BlocksPerSM = 1, int ForcedSplit = 0>
static size_t wg_workspace_bytes(const MlaDecodeConfig& c) {
  return partials_bytes(c.batch_size, wg_plan<BlocksPerSM, ForcedSplit>(c).splits);
}

template <bool RegQ, int Stages, int BlocksPerSM = 1, int ForcedSplit = 0>
static void wg_launch(const MlaDecodeArgs& a, const char* name) {
  using C = Cfg<RegQ, Stages>;
  static_assert(C::total * BlocksPerSM <= 227 * 1024, "shared memory");
  require_mla_shape(a.cfg);
  const SplitPlan plan = wg_plan<BlocksPerSM, ForcedSplit>(a.cfg);
  if (a.workspace_size < partials_bytes(a.cfg.batch_size, plan.splits))
    throw std::runtime_error(std::string(name) + ": workspace too small");
  static const bool attr_set = [] {
    harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_wgmma_kernel<RegQ, Stages, BlocksPerSM>),
                                      hipFuncAttributeMaxDynamicSharedMemorySize, int(C::total)),
                  "hipFuncSetAttribute(mla_fp8_wgmma_kernel)");
    return true;
  }();
  (void)attr_set;
  const Partials part = partials_in(a.workspace, a.cfg.batch_size, plan.splits);
  const int threads = kWarps * current_device_shape().warp_size;
  mla_fp8_wgmma_kernel<RegQ, Stages, BlocksPerSM><<<dim3(plan.splits, a.cfg.batch_size), threads, C::total>>>(
      a, plan.tokens_per_split, plan.splits, part);
  harness_check_launch(name);
  if (plan.splits > 1) launch_combine(part, a.cfg.batch_size, plan.splits, a.out);
}

#endif  // HARNESS_GPU

}  // namespace mla_wg
