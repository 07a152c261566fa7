// mla_decode on fp8 KV with the NVIDIA mma.sync geometry (v8): one block of eight warps per SM, a
// five-stage cp.async ring of 64-token tiles (four tiles, ~150 KB, in flight per SM) and two block
// barriers per tile.
//
// Per tile:
//   QK   warp w owns 8 of the 64 tokens over all 576 dims (Q stays in registers), so S needs no
//        cross-warp sum; each warp writes P = exp2(s - m_ref) for its tokens as f16.
//   max  m_ref is a block-wide reference maximum per head that moves only when a tile's logit
//        exceeds it by more than kRescaleSlack (P <= 2^8 otherwise). Warps publish their tile maxima;
//        when any warp saw such a logit (always on the first tile), every thread raises m_ref to the
//        tile maximum, rescales its accumulators and rewrites its P (one more barrier, rare).
//   PV   warp w owns 64 of the 512 output dims; warp 0 also multiplies P by a column of ones, so the
//        softmax denominator comes from the very values that weight V.
//
// Token order. A lane's 4 logical k values of the PV product are tokens 2t, 2t+1, 2t+8, 2t+9 of a
// 16-token step (t = lane & 3): rows 2 apart in shared memory are 8 banks apart with 592-byte rows, so
// the 32-bit V loads are conflict-free. P is stored in that order. QK n-tile column g is row
// 4g + c (c per warp): the 128-bit K loads of a quarter warp hit disjoint banks.
// V fragments: a lane reads one word (4 dims) of 4 token rows; n-tile j takes byte j of each, so
// column n of n-tile j is dim 4n + j of the lane's 32-dim group.
#pragma once
#include "problems/common/async_copy.h"
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_pipe {

using namespace mla_kernels;

// fp8 -> f16: the hardware conversion (value unchanged), or moving bits (value * 2^-8): with masks
// and shifts (bits), or with a byte permute that replicates each code's sign into the byte above it,
// then one shift and one mask (sr; fewer integer instructions), or half of the pairs each way (mix:
// the hardware ones multiplied by 2^-8 on the f16 pipe).
enum class Cvt { hw, bits, sr, mix };

constexpr int kWarps = 8;
constexpr int kTile = 64;
constexpr int kStages = 5;
constexpr int kRowBytes = kDimQK + 16;  // odd multiple of 16 bytes
constexpr int kStageBytes = kTile * kRowBytes;
constexpr int kPRow = kTile + 16;       // f16 per head row of P: 160 bytes, conflict-free A loads
constexpr float kRescaleSlack = 8.f;    // log2 units

struct Smem {
  static constexpr size_t p = size_t(kStages) * kStageBytes;
  static constexpr size_t tmax = p + size_t(kHeads) * kPRow * 2;   // [head][warp] float
  static constexpr size_t flag = tmax + size_t(kHeads) * kWarps * 4;
  static constexpr size_t stats = flag + 16;                        // l[16], m[16]
  static constexpr size_t total = stats + 2 * kHeads * 4;
};

#if defined(HARNESS_GPU)

__device__ inline uint32_t bf16x2_to_f16x2(uint32_t w) {
  return pack16(f32_to_f16_bits(__uint_as_float(w << 16)), f32_to_f16_bits(__uint_as_float(w & 0xffff0000u)));
}

// Two fp8 (low 16 bits, element 0 low) -> f16 pair of the same values.
__device__ inline uint32_t fp8x2_to_f16x2_hw(uint32_t h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t r;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(uint16_t(h & 0xffffu)));
  return r;
#else
  return hmul2_bits(fp8x4_to_f16x4_scaled(h & 0xffffu).x, 0x5c005c00u);  // * 2^8, exact
#endif
}

// prmt.b32 with its sign-replicating selectors (bit 3 of a nibble: fill the byte with the selected
// byte's top bit), which __byte_perm does not promise.
__device__ inline uint32_t prmt_sign(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
#else
  const uint64_t x = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nib = (sel >> (4 * i)) & 0xfu, byte = uint32_t(x >> (8 * (nib & 7u))) & 0xffu;
    r |= ((nib & 8u) ? ((byte & 0x80u) ? 0xffu : 0u) : byte) << (8 * i);
  }
  return r;
#endif
}

// x holds two 16-bit halves [sign fill : fp8 code]; shifting by 7 puts the code's 7 magnitude bits
// into the f16 exponent/mantissa fields and a copy of the sign at bit 15; the mask drops the sign's
// other copy (bit 14) and what spilled from the lower half.
__device__ inline uint32_t sign_filled_to_f16x2(uint32_t x) { return (x << 7) & 0xbf80bf80u; }

// f16 pair (byte j of a, byte j of b), as Cvt says.
constexpr uint32_t kF16TwoToMinus8 = 0x1c001c00u;

template <Cvt C>
__device__ inline uint32_t fp8_pair(uint32_t a, uint32_t b, int j) {
  if constexpr (C == Cvt::mix) {
    return (j & 1) ? fp8_pair<Cvt::sr>(a, b, j) : hmul2_bits(fp8_pair<Cvt::hw>(a, b, j), kF16TwoToMinus8);
  } else if constexpr (C == Cvt::sr) {
    const uint32_t lo = uint32_t(j), hi = uint32_t(4 + j);
    return sign_filled_to_f16x2(prmt_sign(a, b, lo | ((8 | lo) << 4) | (hi << 8) | ((8 | hi) << 12)));
  } else if constexpr (C == Cvt::hw) {
    return fp8x2_to_f16x2_hw(byte_perm(a, b, uint32_t(j) | (uint32_t(4 + j) << 4)));
  } else {
    // bytes 0 and 2 hold the codes; bytes 1 and 3 are don't-care, the masks drop them
    const uint32_t x = byte_perm(a, b, uint32_t(j) * 0x11u | (uint32_t(4 + j) * 0x1100u));
    return ((x << 7) & 0x3f803f80u) | ((x << 8) & 0x80008000u);
  }
}

// K fragment of four consecutive dims (one word).
template <Cvt C>
__device__ inline mma::FragB fp8_word(uint32_t w) {
  if constexpr (C == Cvt::hw) return make_uint2(fp8x2_to_f16x2_hw(w), fp8x2_to_f16x2_hw(w >> 16));
  else if constexpr (C == Cvt::sr)
    return make_uint2(sign_filled_to_f16x2(prmt_sign(w, w, 0x9180u)), sign_filled_to_f16x2(prmt_sign(w, w, 0xb3a2u)));
  else if constexpr (C == Cvt::mix)
    return make_uint2(hmul2_bits(fp8x2_to_f16x2_hw(w), kF16TwoToMinus8), sign_filled_to_f16x2(prmt_sign(w, w, 0xb3a2u)));
  else return fp8x4_to_f16x4_scaled(w);
}

// QK on f16 matrix instructions: Q as f16 fragments for all 576 dims (144 registers).
// Step (p, j) covers dims 64p + 16t + 4j .. +3 for lane group t, so one 16-byte K load feeds 4 steps.
template <Cvt KC>
struct QkF16 {
  mma::FragA q[kDimQK / 16];
  float factor;  // raw dot product * factor = q . k

  __device__ void load(const uint16_t* qb, int g, int t) {
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint4* src = reinterpret_cast<const uint4*>(qb + (g + 8 * r) * kDimQK + 64 * p + 16 * t);
        const uint4 lo = src[0], hi = src[1];
        q[4 * p + 0].row[r] = make_uint2(bf16x2_to_f16x2(lo.x), bf16x2_to_f16x2(lo.y));
        q[4 * p + 1].row[r] = make_uint2(bf16x2_to_f16x2(lo.z), bf16x2_to_f16x2(lo.w));
        q[4 * p + 2].row[r] = make_uint2(bf16x2_to_f16x2(hi.x), bf16x2_to_f16x2(hi.y));
        q[4 * p + 3].row[r] = make_uint2(bf16x2_to_f16x2(hi.z), bf16x2_to_f16x2(hi.w));
      }
    factor = KC == Cvt::hw ? 1.f : 256.f;
  }
  // C layout of mma: out[i] = head g + 8 (i >> 1), token column 2t + (i & 1).
  __device__ void dots(const unsigned char* krow, int t, float out[4]) const {
    mma::FragC c[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) c[j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p) {
      const uint4 kc = *reinterpret_cast<const uint4*>(krow + 64 * p + 16 * t);
      mma::mma<mma::Elem::f16>(c[0], q[4 * p + 0], fp8_word<KC>(kc.x));
      mma::mma<mma::Elem::f16>(c[1], q[4 * p + 1], fp8_word<KC>(kc.y));
      mma::mma<mma::Elem::f16>(c[2], q[4 * p + 2], fp8_word<KC>(kc.z));
      mma::mma<mma::Elem::f16>(c[3], q[4 * p + 3], fp8_word<KC>(kc.w));
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = (c[0].v[i] + c[1].v[i]) + (c[2].v[i] + c[3].v[i]);
  }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define MLA_PIPE_E4M3_MMA 1
__device__ inline uint32_t f32x4_to_e4m3x4(float a, float b, float c, float d) {
  uint16_t lo, hi;  // cvt puts its first source in the upper byte
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(b), "f"(a));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(d), "f"(c));
  return uint32_t(lo) | (uint32_t(hi) << 16);
}
__device__ inline void mma_e4m3(mma::FragC& c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c.v[0]), "+f"(c.v[1]), "+f"(c.v[2]), "+f"(c.v[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif

// QK on fp8 matrix instructions (sm_89+): Q scaled by a power of two (its amax to <= 448) and
// rounded to e4m3, as the official reference does; K bytes go to the instruction unconverted.
// Lane group t's 16 bytes at dims 64p + 16t are k 4t..4t+3 (first word) and 16+4t.. (second word)
// of one k32 step, the last two words those of the next.
struct QkE4m3 {
  uint32_t q[kDimQK / 64][2][4];  // [p][row g / g+8][word]
  float factor;

  __device__ void load(const uint16_t* qb, int g, int t) {
#if defined(MLA_PIPE_E4M3_MMA)
    float amax = 0.f;
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint4* src = reinterpret_cast<const uint4*>(qb + (g + 8 * r) * kDimQK + 64 * p + 16 * t);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint4 v = src[h];
          const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int e = 0; e < 4; ++e)
            amax = fmaxf(amax, fmaxf(fabsf(__uint_as_float(w[e] << 16)), fabsf(__uint_as_float(w[e] & 0xffff0000u))));
        }
      }
    amax = warp_max(amax);  // the warp holds all of Q
    const float scale = amax > 0.f ? exp2f(floorf(log2f(448.f / amax))) : 1.f;
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint4* src = reinterpret_cast<const uint4*>(qb + (g + 8 * r) * kDimQK + 64 * p + 16 * t);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint4 v = src[h];
          auto lo = [&](uint32_t x) { return __uint_as_float(x << 16) * scale; };
          auto hi = [&](uint32_t x) { return __uint_as_float(x & 0xffff0000u) * scale; };
          q[p][r][2 * h + 0] = f32x4_to_e4m3x4(lo(v.x), hi(v.x), lo(v.y), hi(v.y));
          q[p][r][2 * h + 1] = f32x4_to_e4m3x4(lo(v.z), hi(v.z), lo(v.w), hi(v.w));
        }
      }
    factor = 1.f / scale;
#else
    (void)qb; (void)g; (void)t;
    factor = 0.f;
#endif
  }
  __device__ void dots(const unsigned char* krow, int t, float out[4]) const {
    mma::FragC c[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) c[j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#if defined(MLA_PIPE_E4M3_MMA)
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p) {
      const uint4 kc = *reinterpret_cast<const uint4*>(krow + 64 * p + 16 * t);
      mma_e4m3(c[2 * (p & 1) + 0], q[p][0][0], q[p][1][0], q[p][0][1], q[p][1][1], kc.x, kc.y);
      mma_e4m3(c[2 * (p & 1) + 1], q[p][0][2], q[p][1][2], q[p][0][3], q[p][1][3], kc.z, kc.w);
    }
#else
    (void)krow; (void)t;
    __builtin_trap();
#endif
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = (c[0].v[i] + c[1].v[i]) + (c[2].v[i] + c[3].v[i]);
  }
};

template <class Qk, Cvt VC>
__global__ void __launch_bounds__(kWarps * kernel_warp_size(), 1)
    mla_fp8_pipe_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MMA_TILE_NVIDIA)
  constexpr int W = kernel_warp_size();
  constexpr int kThreads = kWarps * W;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(kThreads == 4 * kTile && kDimQK % 64 == 0, "copy plan: four threads per row, 64 bytes apart");
  require_warp_size();

  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + Smem::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + Smem::tmax);
  int* flag_sm = reinterpret_cast<int*>(smem + Smem::flag);
  float* l_sm = reinterpret_cast<float*>(smem + Smem::stats);
  float* m_sm = l_sm + kHeads;

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int lane = tid % W, warp = tid / W;
  const int g = lane >> 2, t = lane & 3;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const int n_tiles = (n_tokens + kTile - 1) / kTile;

  // Copies: thread -> row tid / 4, 16-byte chunks 16 (tid % 4) + 64 i.
  const int ld_row = tid >> 2, ld_col = 16 * (tid & 3);
  auto issue = [&](int tile) {
    if (tile < n_tiles) {
      const int valid = min(kTile, n_tokens - tile * kTile);
      const int64_t src_row = t0 + int64_t(tile) * kTile + min(ld_row, valid - 1);  // past the end: a valid row
      const uint8_t* src = a.kv_fp8 + src_row * kDimQK + ld_col;
      unsigned char* dst = smem + (tile % kStages) * kStageBytes + ld_row * kRowBytes + ld_col;
#pragma unroll
      for (int i = 0; i < kDimQK / 64; ++i) async_copy_16(dst + 64 * i, src + 64 * i);
    }
    async_commit();  // empty groups keep the wait count uniform
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(s);
  if (tid == 0) *flag_sm = -1;

  Qk qk;
  qk.load(a.q + int64_t(b) * kHeads * kDimQK, g, t);
  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale * qk.factor;

  // This warp's QK tokens: rows c + 4 n (n = 0..7) of the tile; C columns 2t, 2t+1 are n = 2t, 2t+1.
  const int c_w = 32 * (warp >> 2) + (warp & 3);
  int s_row[2], p_pos[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int row = c_w + 4 * (2 * t + e), rr = row & 15;
    s_row[e] = row;
    p_pos[e] = (row & ~15) + 4 * ((rr >> 1) & 3) + ((rr & 1) | ((rr >> 3) << 1));
  }

  mma::FragC o[2][4], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int gr = 0; gr < 2; ++gr)
#pragma unroll
    for (int j = 0; j < 4; ++j) o[gr][j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
  float m_ref[2] = {-INFINITY, -INFINITY};  // heads g, g + 8; the same in every thread of the block
  const mma::FragB ones = make_uint2(0x3c003c00u, 0x3c003c00u);

  for (int tile = 0; tile < n_tiles; ++tile) {
    async_wait<kStages - 2>();
    __syncthreads();  // the tile has landed; every warp is done with tile - 1 (its stage, P, maxima)
    issue(tile + kStages - 1);
    const unsigned char* st = smem + (tile % kStages) * kStageBytes;
    const int valid = min(kTile, n_tokens - tile * kTile);

    float s[4];
    qk.dots(st + (c_w + 4 * g) * kRowBytes, t, s);
#pragma unroll
    for (int i = 0; i < 4; ++i) s[i] = s_row[i & 1] < valid ? s[i] * logit_scale : -INFINITY;
    float mx[2] = {fmaxf(s[0], s[1]), fmaxf(s[2], s[3])};
#pragma unroll
    for (int r = 0; r < 2; ++r) mx[r] = group_max<4>(mx[r]);
    if (mx[0] > m_ref[0] + kRescaleSlack || mx[1] > m_ref[1] + kRescaleSlack) *flag_sm = tile;  // same value from all
    if (t == 0) {
      tmax_sm[g * kWarps + warp] = mx[0];
      tmax_sm[(g + 8) * kWarps + warp] = mx[1];
    }
    auto write_p = [&]() {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        p_sm[(g + 8 * (i >> 1)) * kPRow + p_pos[i & 1]] = f32_to_f16_bits(exp2f(s[i] - m_ref[i >> 1]));
    };
    write_p();
    __syncthreads();

    if (*flag_sm == tile) {  // block-uniform: raise m_ref to the tile maximum, rescale, rewrite P
      float alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float4 lo = *reinterpret_cast<const float4*>(tmax_sm + (g + 8 * r) * kWarps);
        const float4 hi = *reinterpret_cast<const float4*>(tmax_sm + (g + 8 * r) * kWarps + 4);
        const float m_tile = fmaxf(fmaxf(fmaxf(lo.x, lo.y), fmaxf(lo.z, lo.w)), fmaxf(fmaxf(hi.x, hi.y), fmaxf(hi.z, hi.w)));
        const float m_new = fmaxf(m_ref[r], m_tile);
        alpha[r] = m_new == m_ref[r] ? 1.f : exp2f(m_ref[r] - m_new);
        m_ref[r] = m_new;
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

#pragma unroll
    for (int ks = 0; ks < kTile / 16; ++ks) {
      mma::FragA pa;
#pragma unroll
      for (int r = 0; r < 2; ++r)
        pa.row[r] = *reinterpret_cast<const uint2*>(p_sm + (g + 8 * r) * kPRow + 16 * ks + 4 * t);
      const unsigned char* r0 = st + (16 * ks + 2 * t) * kRowBytes + 64 * warp + 4 * g;  // rows 2t, 2t+1, 2t+8, 2t+9
#pragma unroll
      for (int gr = 0; gr < 2; ++gr) {
        const uint32_t w0 = *reinterpret_cast<const uint32_t*>(r0 + 32 * gr);
        const uint32_t w1 = *reinterpret_cast<const uint32_t*>(r0 + kRowBytes + 32 * gr);
        const uint32_t w2 = *reinterpret_cast<const uint32_t*>(r0 + 8 * kRowBytes + 32 * gr);
        const uint32_t w3 = *reinterpret_cast<const uint32_t*>(r0 + 9 * kRowBytes + 32 * gr);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma::mma<mma::Elem::f16>(o[gr][j], pa, make_uint2(fp8_pair<VC>(w0, w1, j), fp8_pair<VC>(w2, w3, j)));
      }
      if (warp == 0) mma::mma<mma::Elem::f16>(lacc, pa, ones);
    }
  }
  async_wait<0>();

  if (warp == 0 && t == 0) {
    l_sm[g] = lacc.v[0];
    l_sm[g + 8] = lacc.v[2];
    m_sm[g] = m_ref[0];
    m_sm[g + 8] = m_ref[1];
  }
  __syncthreads();
  const float out_scale = kv_scale * (VC == Cvt::hw ? 1.f : 256.f);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int h = g + 8 * (i >> 1);
    const float l = l_sm[h];
    const float f = l > 0.f ? out_scale / l : 0.f;
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
  __builtin_trap();
#endif
}

inline SplitPlan pipe_plan(const MlaDecodeConfig& c) {
  return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kTile, 128);
}

inline size_t pipe_workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, pipe_plan(c).splits); }

template <class Qk, Cvt VC>
void pipe_launch(const MlaDecodeArgs& a, const char* name) {
  require_mla_shape(a.cfg);
  const SplitPlan plan = pipe_plan(a.cfg);
  if (a.workspace_size < partials_bytes(a.cfg.batch_size, plan.splits))
    throw std::runtime_error(std::string(name) + ": workspace too small");
  static const bool attr_set = [] {
    harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_pipe_kernel<Qk, VC>),
                                      hipFuncAttributeMaxDynamicSharedMemorySize, int(Smem::total)),
                  "hipFuncSetAttribute(mla_fp8_pipe_kernel)");
    return true;
  }();
  (void)attr_set;
  const Partials part = partials_in(a.workspace, a.cfg.batch_size, plan.splits);
  const int threads = kWarps * current_device_shape().warp_size;
  mla_fp8_pipe_kernel<Qk, VC><<<dim3(plan.splits, a.cfg.batch_size), threads, Smem::total>>>(a, plan.tokens_per_split,
                                                                                            plan.splits, part);
  harness_check_launch(name);
  if (plan.splits > 1) launch_combine(part, a.cfg.batch_size, plan.splits, a.out);
}

#endif  // HARNESS_GPU

}  // namespace mla_pipe
