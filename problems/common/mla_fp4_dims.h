// mla_decode on MXFP4 KV (kv_mxfp4 + kv_mxfp4_scale) with v13/v15's dimension-sliced persistent tile
// (problems/common/mla_fp8_dims.h, options rope-in-k16-steps + shared-memory rescale flag), mla-fp4 (v17).
//
// What changes against the fp8 tile:
//   - A stage holds a tile's 64 MXFP4 rows (64 x 288 bytes) and their 64 scale rows (64 x stride bytes,
//     stride read from the arguments, at most kMaxStride), filled by two bulk copies (cp.async.bulk).
//   - Decode (moe_wg8.h's decode_f16): for a 32-bit word of 8 e2m1 codes, e = the even codes and o = the
//     odd ones as bytes (sign << 7 | magnitude << 1; 7 SASS ops: 4 LOP3, as each needs its own immediate
//     mask, 2 IMAD.SHL, 1 SHF), then 4 byte permutes put each byte
//     into the high byte of an f16 half: the f16 bits ((code & 7) << 9) | (sign << 15) are the e2m1
//     value times 2^-14 exactly (0 and 0.5 included). One HMUL2 by 2^(14 + scale_exp) (f16 bits
//     (byte - 98) << 10 in both halves, one IMAD from the scale byte) gives value * 2^scale_exp exactly
//     while the multiplier is a normal f16 and the products are representable: scale bytes 104..128
//     (scale_exp -23..1; N(0,1) data has -3..0). Each decoded element serves as K (Q K^T) and, after
//     movmatrix, as V (P V), as in the fp8 tile.
//   - Lane (g, t) of dim warp dw reads 8 bytes (16 dims 64 dw + 16 t ..) of rows g and g + 8 of each
//     16-token m tile: its 16 dims lie in one scale block (2 dw + t / 2), so one scale byte a row.
//     The k-step order inside the warp's 64 dims follows the decode: k step p takes word p / 2 of the
//     lane's 8 bytes, .x = dims (p & 1) + {0, 2}, .y = (p & 1) + {4, 6} of that word (Q loaded in the
//     same order; the output dims of the P V accumulators follow, see the epilogue).
//   - Out-of-range scale bytes (outside 104..128) are detected per lane (unsigned max of byte - 104),
//     ORed over the block at the end of an item; such an item, and an item whose tokens are not whole
//     64-token tiles starting at a multiple of 64 (then the bulk copies would be misaligned), is
//     computed again by fallback_item: an exact fp32 decode of the MXFP4 values from global memory
//     (slow; the benchmark and test inputs never take it: test variants v17fb, v17det and v17mix of
//     problems/mla_decode/v17.hip force it in three ways).
// Measured (docs/perf.md, section "mla_decode v17"): correct, but the tile is ~16% slower than the fp8 tile (1.68
// vs 1.45 us
// a 64-token tile on the H200): the decode adds ~210 instructions a warp and tile (692 against 482 in the
// tile loop) to a kernel that was already bound by its instruction/latency chain, not by DRAM.
//   - No per-tensor scale: logit scale = sm_scale * log2(e), output normalisation 1 / l.
#pragma once
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_fp8_dims.h"
#include "problems/common/mla_fp8_wide.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_fp4 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kRescaleSlack;
using mla_dims::kT;

constexpr int kRowB = kDimQK / 2;               // 288 bytes of e2m1 codes a token
constexpr int kBlocks = kDimQK / 32;            // 18 scale bytes a token
constexpr int kMaxStride = 32;                  // largest scale row stride this kernel takes
constexpr int kStageKV = kT * kRowB;            // 18432
constexpr int kStage = kStageKV + kT * kMaxStride;  // + the tile's scale rows
constexpr uint32_t kScaleLo = 104, kScaleHi = 128;  // scale bytes the one-HMUL2 decode takes exactly

template <int S>
struct Smem {
  static constexpr int kPRow = kT + 16;
  static constexpr size_t sp = size_t(S) * kStage;                  // partial logits; O staging; fallback
  static constexpr size_t p = sp + size_t(kDW) * kT * kHeads * 4;  // [16][kPRow] f16
  static constexpr size_t tmax = p + size_t(kHeads) * kPRow * 2;
  static constexpr size_t lpart = tmax + size_t(kHeads) * 8 * 4;
  static constexpr size_t stats = lpart + size_t(kDW) * kHeads * 4;
  static constexpr size_t flag = stats + 2 * kHeads * 4;
  static constexpr size_t bar = flag + 16;
  static constexpr size_t total = bar + size_t(S) * 8;
  static_assert(kDW * kT * kHeads * 4 >= kHeads * kDimV * 4, "O staging fits in the partial-logit area");
  static_assert(kDW * kT * kHeads * 4 >= kHeads * kDimQK * 2 + kHeads * kT * 4 + 3 * kHeads * 4,
                "fallback Q, logits and statistics fit in the partial-logit area");
};

#if defined(HARNESS_GPU) && defined(MLA_DIMS_SM90)

// 8 e2m1 codes (element i in nibble i) -> 4 f16x2 words of value * 2^-14: r[0] = elements (0, 2),
// r[1] = (4, 6), r[2] = (1, 3), r[3] = (5, 7).
// DEC 1: the same values as masks of shifted copies (11 ops, of which 6 left shifts the compiler can issue
// as IMAD on the FMA pipe, against decode_f16's 7 integer-pipe ops): r[0] = elements (0, 4), r[1] = (2, 6),
// r[2] = (1, 5), r[3] = (3, 7).
template <int DEC>
__device__ __forceinline__ void decode8(uint32_t w, uint32_t r[4]) {
  if constexpr (DEC == 1) {
    r[0] = ((w << 12) & 0x80008000u) | ((w << 9) & 0x0E000E00u);
    r[1] = ((w << 4) & 0x80008000u) | ((w << 1) & 0x0E000E00u);
    r[2] = ((w << 8) & 0x80008000u) | ((w << 5) & 0x0E000E00u);
    r[3] = (w & 0x80008000u) | ((w >> 3) & 0x0E000E00u);
    return;
  }
  const uint32_t e = ((w << 4) & 0x80808080u) | ((w << 1) & 0x0E0E0E0Eu);
  const uint32_t o = (w & 0x80808080u) | ((w >> 3) & 0x0E0E0E0Eu);
  r[0] = __byte_perm(e, 0u, 0x1404u);
  r[1] = __byte_perm(e, 0u, 0x3424u);
  r[2] = __byte_perm(o, 0u, 0x1404u);
  r[3] = __byte_perm(o, 0u, 0x3424u);
}
__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
// f16x2 2^(14 + byte - 127) in both halves (exact for bytes 99..128).
__device__ __forceinline__ uint32_t scale_mul(uint32_t byte) { return byte * 0x04000400u - 98u * 0x04000400u; }

// One 64-token tile (every row valid): fp8 dims_tile with the MXFP4 decode (see the header comment).
template <int S, int DEC, bool CHK, uint32_t LO, class AfterA>
__device__ __forceinline__ void fp4_tile(unsigned char* smem, const mla_dims::TileLane& ln, const unsigned char* st,
                                         int stride, uint32_t j, const mla_dims::QFrags& q, float logit_scale,
                                         float (&m_ref)[4], mma::FragC (&o)[4][2], mma::FragC& lacc, uint32_t& bad,
                                         AfterA&& after_a) {
  using L = Smem<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kPRow = L::kPRow;
  float4* sp = reinterpret_cast<float4*>(smem + L::sp);
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  const int g = ln.g, t = ln.t, dw = ln.dw, rtok = ln.rtok, ones_mt = ln.ones_mt, ones_nt = ln.ones_nt;
  const mma::FragA& ones = ln.ones;
  const auto& qb = q.qb;
  const auto& qr2 = q.qr2;
  const unsigned char* sc = st + kStageKV;

  uint32_t vt[4][4][4];
  {
    mma::FragC c[4][2];
    mma::FragA ropeA[2];  // rope dims 512 + 32 (dw & 1) + 8 t .. + 7 of the tokens of m tile dw >> 1
    {
      const int r0 = 16 * (dw >> 1) + g;
      const uint32_t wg = *reinterpret_cast<const uint32_t*>(st + r0 * kRowB + kDimV / 2 + 16 * (dw & 1) + 4 * t);
      const uint32_t wh = *reinterpret_cast<const uint32_t*>(st + (r0 + 8) * kRowB + kDimV / 2 + 16 * (dw & 1) + 4 * t);
      const uint32_t bg = sc[r0 * stride + 16 + (dw & 1)], bh = sc[(r0 + 8) * stride + 16 + (dw & 1)];
      if constexpr (CHK) {
        bad = max(bad, bg - LO);
        bad = max(bad, bh - LO);
      }
      const uint32_t mg = scale_mul(bg), mh = scale_mul(bh);
      uint32_t dg[4], dh[4];
      decode8<DEC>(wg, dg);
      decode8<DEC>(wh, dh);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        dg[i] = hmul2(dg[i], mg);
        dh[i] = hmul2(dh[i], mh);
      }
      // k step qq: .x = dims qq + {0, 2}, .y = qq + {4, 6}
      ropeA[0].row[0] = make_uint2(dg[0], dg[1]);
      ropeA[0].row[1] = make_uint2(dh[0], dh[1]);
      ropeA[1].row[0] = make_uint2(dg[2], dg[3]);
      ropeA[1].row[1] = make_uint2(dh[2], dh[3]);
    }
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      const int r0 = 16 * mt + g;
      const uint2 kg = *reinterpret_cast<const uint2*>(st + r0 * kRowB + 32 * dw + 8 * t);
      const uint2 kh = *reinterpret_cast<const uint2*>(st + (r0 + 8) * kRowB + 32 * dw + 8 * t);
      const uint32_t bg = sc[r0 * stride + 2 * dw + (t >> 1)], bh = sc[(r0 + 8) * stride + 2 * dw + (t >> 1)];
      if constexpr (CHK) {
        bad = max(bad, bg - LO);
        bad = max(bad, bh - LO);
      }
      const uint32_t mg = scale_mul(bg), mh = scale_mul(bh);
      uint32_t dg[2][4], dh[2][4];
      decode8<DEC>(kg.x, dg[0]);
      decode8<DEC>(kg.y, dg[1]);
      decode8<DEC>(kh.x, dh[0]);
      decode8<DEC>(kh.y, dh[1]);
#pragma unroll
      for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          dg[u][i] = hmul2(dg[u][i], mg);
          dh[u][i] = hmul2(dh[u][i], mh);
        }
      c[mt][0] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
      c[mt][1] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        mma::FragA k;
        k.row[0].x = dg[p >> 1][2 * (p & 1)];      // token g, dims (p & 1) + {0, 2} of word p >> 1
        k.row[0].y = dg[p >> 1][2 * (p & 1) + 1];  // token g, dims (p & 1) + {4, 6}
        k.row[1].x = dh[p >> 1][2 * (p & 1)];      // token g + 8
        k.row[1].y = dh[p >> 1][2 * (p & 1) + 1];
        mma::mma<mma::Elem::f16>(c[mt][0], k, make_uint2(qb[0][p][0], qb[0][p][1]));
        mma::mma<mma::Elem::f16>(c[mt][1], k, make_uint2(qb[1][p][0], qb[1][p][1]));
        vt[mt][p][0] = mla_dims::movm_t(k.row[0].x);
        vt[mt][p][1] = mla_dims::movm_t(k.row[0].y);
        vt[mt][p][2] = mla_dims::movm_t(k.row[1].x);
        vt[mt][p][3] = mla_dims::movm_t(k.row[1].y);
      }
      if (mt == (dw >> 1)) {  // warp-uniform
#pragma unroll
        for (int qq = 0; qq < 2; ++qq) {
          mma::mma<mma::Elem::f16>(c[mt][0], ropeA[qq], make_uint2(qr2[0][qq][0], qr2[0][qq][1]));
          mma::mma<mma::Elem::f16>(c[mt][1], ropeA[qq], make_uint2(qr2[1][qq][0], qr2[1][qq][1]));
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      const int r0 = 16 * mt + g;
      sp[(dw * kT + r0) * 4 + t] = make_float4(c[mt][0].v[0], c[mt][0].v[1], c[mt][1].v[0], c[mt][1].v[1]);
      sp[(dw * kT + r0 + 8) * 4 + t] = make_float4(c[mt][0].v[2], c[mt][0].v[3], c[mt][1].v[2], c[mt][1].v[3]);
    }
  }
  __syncthreads();  // A: partial logits written; this tile's stage is free
  after_a();

  float s[4];
  {
    float4 acc = sp[(0 * kT + rtok) * 4 + t];
#pragma unroll
    for (int d = 1; d < kDW; ++d) {
      const float4 v = sp[(d * kT + rtok) * 4 + t];
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
    s[0] = acc.x * logit_scale;
    s[1] = acc.y * logit_scale;
    s[2] = acc.z * logit_scale;
    s[3] = acc.w * logit_scale;
  }
  auto write_p = [&]() {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      p_sm[(8 * (i >> 1) + 2 * t + (i & 1)) * kPRow + mla_dims::p_pos(rtok)] = f32_to_f16_bits(exp2f(s[i] - m_ref[i]));
  };
  bool over = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) over |= s[i] > m_ref[i] + kRescaleSlack;
  if (over) *flag_sm = int(j);
  write_p();
  __syncthreads();  // B: P and the flag written
  if (*flag_sm == int(j)) {
    float mx[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      mx[i] = s[i];
#pragma unroll
      for (int off = 4; off < WS; off <<= 1) mx[i] = fmaxf(mx[i], __shfl_xor(mx[i], off));
    }
    if (g == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) tmax_sm[(8 * (i >> 1) + 2 * t + (i & 1)) * 8 + dw] = mx[i];
    }
    __syncthreads();
    float alpha[4];
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int h = 8 * (jj >> 1) + 2 * t + (jj & 1);
      const float4 u = *reinterpret_cast<const float4*>(tmax_sm + h * 8);
      const float4 v = *reinterpret_cast<const float4*>(tmax_sm + h * 8 + 4);
      const float m_tile = fmaxf(fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w)), fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
      const float m_new = fmaxf(m_ref[jj], m_tile);
      alpha[jj] = m_new == m_ref[jj] ? 1.f : exp2f(m_ref[jj] - m_new);
      m_ref[jj] = m_new;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) o[p][nt].v[i] *= alpha[2 * nt + (i & 1)];
      lacc.v[i] *= ones_nt ? alpha[2 + (i & 1)] : alpha[i & 1];
    }
    write_p();
    __syncthreads();
  }

#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    mma::FragB pb[2];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) pb[nt] = *reinterpret_cast<const uint2*>(p_sm + (8 * nt + g) * kPRow + 16 * mt + 4 * t);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      mma::FragA v;
      v.row[0].x = vt[mt][p][0];
      v.row[1].x = vt[mt][p][1];
      v.row[0].y = vt[mt][p][2];
      v.row[1].y = vt[mt][p][3];
      mma::mma<mma::Elem::f16>(o[p][0], v, pb[0]);
      mma::mma<mma::Elem::f16>(o[p][1], v, pb[1]);
    }
    if (ones_mt == mt)
      mma::mma<mma::Elem::f16>(lacc, ones, make_uint2(ones_nt ? pb[1].x : pb[0].x, ones_nt ? pb[1].y : pb[0].y));
  }
}

// e2m1 code -> float (exact).
__device__ __forceinline__ float e2m1f(uint32_t code) {
  const uint32_t em = code & 7u;
  const float mag = em < 4u ? 0.5f * float(em) : float(1u << (em >> 1)) * (1.f + 0.5f * float(em & 1u)) * 0.5f;
  return (code & 8u) ? -mag : mag;
}
// e8m0 byte -> 2^(byte - 127) as float (byte 0: 2^-127, subnormal; 255: NaN).
__device__ __forceinline__ float e8m0f(uint32_t b) {
  return b == 255u ? __uint_as_float(0x7fc00000u) : (b ? __uint_as_float(b << 23) : __uint_as_float(0x00400000u));
}

// The exact path for one item (tokens [t0, t0 + n) of batch b): fp32 decode of the MXFP4 values from
// global memory, online softmax over chunks of 64 tokens, the same outputs as the fast epilogue.
// Uses only the partial-logit area (the ring may hold the next item's tiles). 256 threads.
template <int S>
__device__ __noinline__ void fallback_item(const MlaDecodeArgs& a, unsigned char* smem, int b, int64_t t0, int n,
                                           int split, int splits, Partials part, float logit_scale) {
  using L = Smem<S>;
  constexpr int kThreads = kDW * kernel_warp_size();
  static_assert(kThreads == 256, "fallback_item maps 256 threads on (head, 32-dim chunk) and (token, 4 heads)");
  uint16_t* q_sm = reinterpret_cast<uint16_t*>(smem + L::sp);                  // [16][576] bf16
  float* s_sm = reinterpret_cast<float*>(smem + L::sp + kHeads * kDimQK * 2);  // [16][64]
  float* m_sm = s_sm + kHeads * kT;
  float* l_sm = m_sm + kHeads;
  float* al_sm = l_sm + kHeads;
  const int tid = threadIdx.x;
  const int64_t stride = a.kv_mxfp4_scale_stride;
  for (int i = tid; i < kHeads * kDimQK; i += kThreads) q_sm[i] = a.q[int64_t(b) * kHeads * kDimQK + i];
  if (tid < kHeads) {
    m_sm[tid] = -INFINITY;
    l_sm[tid] = 0.f;
  }
  const int oh = tid / 16, d0 = 32 * (tid % 16);  // P V unit: head oh, dims d0 .. d0 + 31
  float o[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = 0.f;
  __syncthreads();
  for (int c0 = 0; c0 < n; c0 += kT) {
    const int cn = min(kT, n - c0);
    {
      const int tt = tid % kT, h0 = 4 * (tid / kT);
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      if (tt < cn) {
        const int64_t row = t0 + c0 + tt;
        const uint8_t* kr = a.kv_mxfp4 + row * kRowB;
        const uint8_t* sr = a.kv_mxfp4_scale + row * stride;
        for (int blk = 0; blk < kBlocks; ++blk) {
          const float scl = e8m0f(sr[blk]);
          for (int jb = 0; jb < 16; ++jb) {
            const uint32_t byte = kr[blk * 16 + jb];
            const int d = 32 * blk + 2 * jb;
            const float v0 = e2m1f(byte & 15u) * scl, v1 = e2m1f(byte >> 4) * scl;
#pragma unroll
            for (int hh = 0; hh < 4; ++hh)
              acc[hh] += bf16_bits_to_f32(q_sm[(h0 + hh) * kDimQK + d]) * v0 +
                         bf16_bits_to_f32(q_sm[(h0 + hh) * kDimQK + d + 1]) * v1;
          }
        }
      }
#pragma unroll
      for (int hh = 0; hh < 4; ++hh) s_sm[(h0 + hh) * kT + tt] = tt < cn ? acc[hh] * logit_scale : -INFINITY;
    }
    __syncthreads();
    if (tid < kHeads) {
      float mx = -INFINITY;
      for (int tt = 0; tt < cn; ++tt) mx = fmaxf(mx, s_sm[tid * kT + tt]);
      const float m_old = m_sm[tid], m_new = fmaxf(m_old, mx);
      const float alpha = m_old == -INFINITY ? 0.f : exp2f(m_old - m_new);
      float l = l_sm[tid] * alpha;
      for (int tt = 0; tt < kT; ++tt) {
        const float pv = tt < cn ? exp2f(s_sm[tid * kT + tt] - m_new) : 0.f;
        s_sm[tid * kT + tt] = pv;
        l += pv;
      }
      m_sm[tid] = m_new;
      l_sm[tid] = l;
      al_sm[tid] = alpha;
    }
    __syncthreads();
    {
      const float alpha = al_sm[oh];
#pragma unroll
      for (int i = 0; i < 32; ++i) o[i] *= alpha;
      for (int tt = 0; tt < cn; ++tt) {
        const int64_t row = t0 + c0 + tt;
        const float pv = s_sm[oh * kT + tt];
        const float scl = e8m0f(a.kv_mxfp4_scale[row * stride + d0 / 32]);
        const uint8_t* kr = a.kv_mxfp4 + row * kRowB + d0 / 2;
#pragma unroll
        for (int jb = 0; jb < 16; ++jb) {
          const uint32_t byte = kr[jb];
          o[2 * jb] += pv * (e2m1f(byte & 15u) * scl);
          o[2 * jb + 1] += pv * (e2m1f(byte >> 4) * scl);
        }
      }
    }
    __syncthreads();
  }
  const float l = l_sm[oh];
  const float f = l > 0.f ? 1.f / l : 0.f;
  if (splits == 1) {
#pragma unroll
    for (int i = 0; i < 32; ++i) a.out[(int64_t(b) * kHeads + oh) * kDimV + d0 + i] = f32_to_bf16_bits(o[i] * f);
  } else {
#pragma unroll
    for (int i = 0; i < 32; ++i)
      part.o[((size_t(b) * splits + split) * kHeads + oh) * kDimV + d0 + i] = o[i] * f;
    if (tid < kHeads)
      part.lse[(size_t(b) * splits + split) * kHeads + tid] = l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
  }
}
#endif  // HARNESS_GPU && MLA_DIMS_SM90

#if defined(HARNESS_GPU)
// Persistent: min(items, SMs) blocks walk the (batch, split) items; the ring runs across items.
// FORCE_FB: every item takes fallback_item (a test of the exact path).
// DEC: decode8's form; CHK = false drops the scale-range check (measurement only: wrong on out-of-range scales).
// Tests of the exact path: LO above kScaleLo makes in-range scales "out of range" (the detection, then the
// fallback after the item's tiles were consumed); MIX sends every odd item to the fallback after its tiles.
template <int S, bool FORCE_FB, int DEC = 0, bool CHK = true, uint32_t LO = kScaleLo, bool MIX = false>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp4_dims_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MLA_DIMS_SM90)
  using L = Smem<S>;
  constexpr int WS = kernel_warp_size();
  constexpr int kW = kDW;
  constexpr int kThreads = kW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  require_warp_size();

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;
  const uint32_t bar0 = mla_dims::smem_u32(smem + L::bar);

  const int tid = threadIdx.x;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int dw = warp;
  const int stride = int(a.kv_mxfp4_scale_stride);

  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;  // n_tiles: tiles of the fast path (0 if the item falls back)
  };
  auto span = [&](int item) {
    const int b = item / splits, split = item % splits;
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    const bool fast = !FORCE_FB && (t0 % kT) == 0 && (n % kT) == 0;
    return Span{t0, n, fast ? n / kT : 0, b, split};
  };
  const int first_item = int(blockIdx.x);
  const int item_step = int(gridDim.x);
  const int n_items = a.cfg.batch_size * splits;

  int p_item = first_item, p_tile = 0;
  uint32_t p_j = 0;
  Span p_span{0, 0, 0, 0, 0};
  auto issue_next = [&]() {
    while (p_item < n_items && p_tile >= p_span.n_tiles) {
      p_item += item_step;
      if (p_item < n_items) {
        p_span = span(p_item);
        p_tile = 0;
      }
    }
    if (p_item >= n_items) return;
    const uint32_t stage = p_j % S;
    const uint32_t bar = bar0 + 8 * stage;
    const uint32_t dst = mla_dims::smem_u32(smem + stage * kStage);
    const int64_t row = p_span.t0 + int64_t(p_tile) * kT;
    mla_dims::mbar_expect_tx(bar, uint32_t(kStageKV + kT * stride));
    mla_dims::bulk_copy(dst, a.kv_mxfp4 + row * kRowB, uint32_t(kStageKV), bar);
    mla_dims::bulk_copy(dst + kStageKV, a.kv_mxfp4_scale + row * stride, uint32_t(kT * stride), bar);
    ++p_tile;
    ++p_j;
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) mla_dims::mbar_init(bar0 + 8 * s, 1);
    mla_dims::mbar_init_fence();
    *flag_sm = -1;
  }
  __syncthreads();
  if (tid == 0) {
    if (first_item < n_items) {
      p_span = span(first_item);
      // the loop above advances past an item without fast tiles
    }
    for (int s = 0; s < S; ++s) issue_next();
  }

  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f;
  const mla_dims::TileLane ln = mla_dims::tile_lane();
  const int ones_nt = ln.ones_nt;
  uint32_t j = 0;

  for (int item = first_item; item < n_items; item += item_step) {
    const Span w = span(item);
    // Q^T fragments in the decode's dims order: k step p of n tile nt: .x = dims e + {0, 2}, .y = e + {4, 6}
    // with e = 64 dw + 16 t + 8 (p >> 1) + (p & 1); rope k step qq: 512 + 32 (dw & 1) + 8 t + qq + {0, 2} / {4, 6}.
    mla_dims::QFrags q;
    constexpr int kPair = DEC == 1 ? 4 : 2, kXY = DEC == 1 ? 2 : 4;  // decode8's element pairs
    {
      const uint16_t* qbase = a.q + int64_t(w.b) * kHeads * kDimQK;
      auto f16pair = [](uint16_t lo, uint16_t hi) {
        return pack16(f32_to_f16_bits(bf16_bits_to_f32(lo)), f32_to_f16_bits(bf16_bits_to_f32(hi)));
      };
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
        uint16_t e[16];
        {
          const uint4 v0 = *reinterpret_cast<const uint4*>(qh + 64 * dw + 16 * t);
          const uint4 v1 = *reinterpret_cast<const uint4*>(qh + 64 * dw + 16 * t + 8);
          const uint32_t ws[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            e[2 * i] = uint16_t(ws[i] & 0xffffu);
            e[2 * i + 1] = uint16_t(ws[i] >> 16);
          }
        }
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const int e0 = 8 * (p >> 1) + (p & 1);
          q.qb[nt][p][0] = f16pair(e[e0], e[e0 + kPair]);
          q.qb[nt][p][1] = f16pair(e[e0 + kXY], e[e0 + kXY + kPair]);
        }
        const uint4 r = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
        const uint16_t re[8] = {uint16_t(r.x & 0xffffu), uint16_t(r.x >> 16), uint16_t(r.y & 0xffffu),
                                uint16_t(r.y >> 16),     uint16_t(r.z & 0xffffu), uint16_t(r.z >> 16),
                                uint16_t(r.w & 0xffffu), uint16_t(r.w >> 16)};
#pragma unroll
        for (int qq = 0; qq < 2; ++qq) {
          q.qr2[nt][qq][0] = f16pair(re[qq], re[qq + kPair]);
          q.qr2[nt][qq][1] = f16pair(re[qq + kXY], re[qq + kXY + kPair]);
        }
        q.qr[nt] = 0;
      }
    }
    float m_ref[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    mma::FragC o[4][2], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
    uint32_t bad = 0;  // unsigned max of (scale byte - kScaleLo) over the lane's bytes

    for (int tile = 0; tile < w.n_tiles; ++tile, ++j) {
      const unsigned char* st = smem + (j % S) * kStage;
      mla_dims::mbar_wait(bar0 + 8 * (j % S), uint32_t((j / S) & 1));
      fp4_tile<S, DEC, CHK, LO>(smem, ln, st, stride, j, q, logit_scale, m_ref, o, lacc, bad, [&] {
        if (tid == 0) issue_next();
      });
    }
    const bool fb_lane = w.n_tiles * kT != w.n_tokens || bad > kScaleHi - LO || (MIX && (item & 1));
    if (__syncthreads_or(fb_lane)) {
      fallback_item<S>(a, smem, w.b, w.t0, w.n_tokens, w.split, splits, part, logit_scale);
      __syncthreads();
      continue;
    }

    if (g == 0) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const bool mine = ones_nt == nt;
        lpart_sm[warp * kHeads + 8 * nt + 2 * t] = mine ? lacc.v[0] : 0.f;
        lpart_sm[warp * kHeads + 8 * nt + 2 * t + 1] = mine ? lacc.v[1] : 0.f;
      }
      if (warp == 0) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) m_sm[8 * (jj >> 1) + 2 * t + (jj & 1)] = m_ref[jj];
      }
    }
    float* o_sm = reinterpret_cast<float*>(smem + L::sp);  // [16][512]
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          // accumulator row g (i < 2) / g + 8 (i >= 2) = k index g of the .x / .y part of k step p
          const int dim = 64 * dw + 16 * (g >> 1) + 8 * (p >> 1) + (p & 1) + kPair * (g & 1) + kXY * (i >> 1);
          const int head = 8 * nt + 2 * t + (i & 1);
          o_sm[head * kDimV + dim] = o[p][nt].v[i];
        }
    __syncthreads();
    if (tid < kHeads) {
      float l = 0.f;
      for (int ww = 0; ww < kW; ++ww) l += lpart_sm[ww * kHeads + tid];
      l_sm[tid] = l;
    }
    __syncthreads();
    for (int c = tid; c < kHeads * kDimV / 4; c += kThreads) {
      const int h = c / (kDimV / 4), dim = 4 * (c % (kDimV / 4));
      const float l = l_sm[h];
      const float f = l > 0.f ? 1.f / l : 0.f;
      const float4 v = *reinterpret_cast<const float4*>(o_sm + h * kDimV + dim);
      if (splits == 1) {
        *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
            make_uint2(pack16(f32_to_bf16_bits(v.x * f), f32_to_bf16_bits(v.y * f)),
                       pack16(f32_to_bf16_bits(v.z * f), f32_to_bf16_bits(v.w * f)));
      } else {
        *reinterpret_cast<float4*>(part.o + ((size_t(w.b) * splits + w.split) * kHeads + h) * kDimV + dim) =
            make_float4(v.x * f, v.y * f, v.z * f, v.w * f);
      }
    }
    if (splits > 1 && tid < kHeads)
      part.lse[(size_t(w.b) * splits + w.split) * kHeads + tid] =
          l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
    __syncthreads();  // the next item reuses the O staging and the statistics
  }
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part;
  __builtin_trap();
#endif
}

// Split plan (the fp8 dims kernel's), workspace, launch (min(items, SMs) persistent blocks), then the
// one-pass combine of mla_fp8_dims.h when there is more than one split.
template <int S, bool FORCE_FB = false, int DEC = 0, bool CHK = true, uint32_t LO = kScaleLo, bool MIX = false>
struct Fp4Dims {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  // Whether the fast kernel can take these arguments at all (else the caller runs an fp8 path):
  // the MXFP4 tensors present, 16-byte aligned, scale stride 18..kMaxStride, kv_len whole tiles.
  static bool usable(const MlaDecodeArgs& a) {
    return a.kv_mxfp4 != nullptr && a.kv_mxfp4_scale != nullptr && a.kv_mxfp4_scale_stride >= kBlocks &&
           a.kv_mxfp4_scale_stride <= kMaxStride && (reinterpret_cast<uintptr_t>(a.kv_mxfp4) % 16) == 0 &&
           (reinterpret_cast<uintptr_t>(a.kv_mxfp4_scale) % 16) == 0 && a.cfg.kv_seq_len % kT == 0;
  }
  static void launch(const MlaDecodeArgs& a, const char* name) {
    using L = Smem<S>;
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    static const bool attr_set = [] {
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp4_dims_kernel<S, FORCE_FB, DEC, CHK, LO, MIX>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp4_dims_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = kDW * current_device_shape().warp_size;
    const int items = a.cfg.batch_size * pl.splits;
    const dim3 grid(unsigned(std::min<int64_t>(items, current_device_shape().compute_units)));
    mla_fp4_dims_kernel<S, FORCE_FB, DEC, CHK, LO, MIX><<<grid, threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_fp4
