// mla_decode on fp8 KV, the 32-tile large shapes (mla-large3, session 8): mla_dims4's kernel (v20's dims tile,
// mla_dims3::dims_tile3 with F16P | QP | EF, R 2, 3 stages) with these compile-time flags F (both need fDir):
//  - fDir: the output (splits == 1) or the split's normalised partial written straight from the P V accumulators:
//    row sums through shared memory and one barrier, lanes g, g ^ 1 swap half their values so that each lane
//    holds 8 consecutive dims of a head (one 16-byte bf16 store, or two float4 partial stores), instead of the
//    O staging round trip with two barriers. bs 256 / kv 1024: -1.2 to -1.7 us.
//  - fMg (with fDir and splits, one item a block, cooperative launch): mla_dims3's kMG in-kernel merge (count
//    in, wait for the batch's splits, merge heads split (mod splits) from the partials in L2), its loads all
//    in flight at once at 4 splits. bs 32 / kv 8192: -0.5 us.
//  - fHp (with fMg): the split partials stored as f16 (half the bytes written and merged; the partials are
//    normalised, |value| <= max |V| * kv_scale). bs 32 / kv 8192: -1.0 us (mla-large4, session 9).
// Measured and dropped (docs/perf.md, section "mla_decode v24"): the
// kernel's O staging epilogue (F = 0), Path5 (each batch's splits a cluster merging through distributed shared
// memory, tile stealing inside the cluster, the batches beyond the resident clusters as a programmatic dependent
// grid with a last-arriver merge: slower), the globaltimer timeline and the MLA_D5_* environment knobs. The flag
// values (fDir 16, fMg 256), the kernel's parameters and its counter store are the measured ones: the two kernels'
// PTX equals the measured PTX up to register naming and the order of independent instructions.
// Interface for composed variants: DirPath<S, OPT, R, MG, HP, XF> (applies: 65536 < batch * kv_len <= 262144, i.e.
// the shapes with 32 tiles a block; workspace_bytes; launch). v26 (mla-large5, session 10) runs it with S 2: fewer
// KV bytes in flight, so fewer of the cache flush's dirty L2 lines written back (docs/perf.md, "mla_decode v26").
#pragma once
#include <algorithm>
#include <cstring>

#include "problems/common/mla_fp8_dims3.h"

namespace mla_dims5 {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
using mla_dims::kDW;
using mla_dims::kT;

constexpr int kF16P = mla_dims3::kF16P;
constexpr int kQP = mla_dims3::kQP;
constexpr int kEF = mla_dims3::kEF;
constexpr int kLean = mla_dims3::kLean;
constexpr int kD3Bits = kF16P | kQP | kEF;  // the bits dims_tile3 / Smem see

constexpr int fDir = 16, fMg = 256, fHp = 512;
// fLf (with fMg; mla-large5, session 10): the merge's arrival as cooperative groups' grid sync does it: a block
// barrier, then thread 0 alone fences (cumulative over the block's partial stores: they precede it through the
// barrier), counts in and polls with acquire loads; a block barrier; no fences by the other threads (v25: a
// fence by every thread before the first barrier and after the second). bs 32 / kv 8192: -0.3 us.
constexpr int fLf = 1024;

constexpr int kMaxMgBatches = 1024;  // fMg's counters

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
static __device__ unsigned int g_mla_dims5_merge[2 * kMaxMgBatches];  // fMg: per batch arrivals, departures
#endif

#if defined(HARNESS_GPU)
// mla_dims4::mla_fp8_dims4_kernel with the flags above. Items: batch b0 + item / splits, split item % splits,
// item < nb * splits. ns: unused (the measured kernels' parameter list).
template <int S, int OPT, int R, int F>
__global__ void __launch_bounds__(kDW * kernel_warp_size(), 1)
    mla_fp8_dims5_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part, int b0, int nb, int ns) {
#if defined(MLA_DIMS_SM90)
  static_assert((F & fDir) != 0 && (F & ~(fDir | fMg | fHp | fLf)) == 0, "F: fDir, optionally with fMg (and fHp, fLf)");
  static_assert((F & fLf) == 0 || (F & fMg) != 0, "fLf: the in-kernel merge's arrival");
  static_assert((F & fHp) == 0 || (F & fMg) != 0, "fHp: f16 partials are merged in the kernel only");
  constexpr int D3 = OPT & kD3Bits;
  using L = mla_dims3::Smem<S, D3>;
  constexpr bool QP = (OPT & kQP) != 0;
  constexpr float kQScale = (OPT & kF16P) ? mla_dims3::kQScaleF16P : 1.f;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = kDW * WS;
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(size_t(S) * 4 + 8 <= size_t(mla_dims3::kSpanSlots) * 8, "stage info, counter, flag fit the span area");
  require_warp_size();
  using mla_dims::mbar_expect_tx;
  using mla_dims::mbar_init;
  using mla_dims::mbar_init_fence;
  using mla_dims::mbar_wait;
  using mla_dims::smem_u32;
  (void)ns;

  extern __shared__ __align__(128) unsigned char smem[];
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* lpart_sm = reinterpret_cast<float*>(smem + L::lpart);
  // The measured kernels zero a counter here (the dropped stealing form's); kept as measured (one store).
  unsigned int* ctr_sm = reinterpret_cast<unsigned int*>(smem + L::spn + 4 * S);
  const uint32_t bar0 = smem_u32(smem + L::bar);
  const uint32_t qbar0 = bar0 + 8 * S;

  const int tid = threadIdx.x;
  const mla_dims2::Lane ln = mla_dims2::lane_of();
  const int g = ln.g, t = ln.t, dw = ln.dw;

  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;
  };
  auto span = [&](int item) {
    const int b = b0 + item / splits;
    const int split = item % splits;
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    return Span{t0, n, (n + kT - 1) / kT, b, split};
  };
  const int first_item = int(blockIdx.x);
  const int item_step = int(gridDim.x);
  const int n_items = nb * splits;

  // Producer (thread 0): the block's tiles in consumption order, global tile j into stage j % S.
  int p_item = first_item, p_tile = 0;
  uint32_t p_j = 0;
  Span p_span{0, 0, 0, 0, 0};
  uint64_t pol = 0;
  if constexpr ((OPT & kEF) != 0) {
    if (tid == 0) pol = mla_dims3::policy_evict_first();
  }
  auto copy_tile = [&](const Span& sp, int tile, uint32_t stage) {
    const int valid = min(kT, sp.n_tokens - tile * kT);
    const uint32_t bar = bar0 + 8 * stage;
    const uint32_t dst = smem_u32(smem + stage * L::stage);
    const uint8_t* src = a.kv_fp8 + (sp.t0 + int64_t(tile) * kT) * kDimQK;
    mbar_expect_tx(bar, uint32_t(kT * kDimQK));
    if constexpr ((OPT & kEF) != 0)
      mla_dims3::bulk_copy_hint(dst, src, uint32_t(valid * kDimQK), bar, pol);
    else
      mla_dims::bulk_copy(dst, src, uint32_t(valid * kDimQK), bar);
    if constexpr ((OPT & kLean) != 0)
      mla_dims::fill_rows_rolled(dst, src + (valid - 1) * kDimQK, valid, kDimQK, bar);
    else
      for (int r = valid; r < kT; ++r) mla_dims::bulk_copy(dst + r * kDimQK, src + (valid - 1) * kDimQK, kDimQK, bar);
    return valid;
  };
  auto issue_next = [&]() {
    while (p_item < n_items && p_tile >= p_span.n_tiles) {
      p_item += item_step;
      if (p_item < n_items) {
        p_span = span(p_item);
        p_tile = 0;
      }
    }
    if (p_item >= n_items) return;
    copy_tile(p_span, p_tile, p_j % S);
    ++p_tile;
    ++p_j;
  };
  // QP: item number k of the block (item first_item + k * item_step) into Q buffer k & 1.
  auto issue_q = [&](int k) {
    const int item = first_item + k * item_step;
    if (item >= n_items) return;
    const uint32_t bar = qbar0 + 8 * (k & 1);
    mbar_expect_tx(bar, uint32_t(L::qbytes));
    mla_dims::bulk_copy(smem_u32(smem + L::q + (k & 1) * L::qbytes),
                        a.q + int64_t(b0 + item / splits) * kHeads * kDimQK, uint32_t(L::qbytes), bar);
  };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S + 2; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
    *flag_sm = -1;
    *ctr_sm = 0u;
  }
  __syncthreads();
  if (tid == 0) {
    if (first_item < n_items) p_span = span(first_item);
    if constexpr (QP) issue_q(0);
    for (int s = 0; s < S; ++s) issue_next();
  }

  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale / kQScale;
  uint32_t j = 0;                 // global tile counter
  uint32_t stage = 0, phase = 0;  // j % S, (j / S) & 1

  int k_item = 0;
  for (int item = first_item; item < n_items; item += item_step, ++k_item) {
    const Span w = span(item);
    mla_dims::QFrags q;
    {
      const uint16_t* qbase;
      if constexpr (QP) {
        if (tid == 0) issue_q(k_item + 1);  // buffer (k + 1) & 1 was last read at item k - 1's start
        mbar_wait(qbar0 + 8 * (k_item & 1), uint32_t((k_item >> 1) & 1));
        qbase = reinterpret_cast<const uint16_t*>(smem + L::q + (k_item & 1) * L::qbytes);
      } else {
        qbase = a.q + int64_t(w.b) * kHeads * kDimQK;
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint16_t* qh = qbase + (8 * nt + g) * kDimQK;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const uint2 v = *reinterpret_cast<const uint2*>(qh + 64 * dw + 16 * t + 4 * p);
          q.qb[nt][p][0] = mla_dims3::q_f16x2(v.x, kQScale);
          q.qb[nt][p][1] = mla_dims3::q_f16x2(v.y, kQScale);
        }
        const uint4 v = *reinterpret_cast<const uint4*>(qh + kDimV + 32 * (dw & 1) + 8 * t);
        q.qr2[nt][0][0] = mla_dims3::q_f16x2(v.x, kQScale);
        q.qr2[nt][0][1] = mla_dims3::q_f16x2(v.y, kQScale);
        q.qr2[nt][1][0] = mla_dims3::q_f16x2(v.z, kQScale);
        q.qr2[nt][1][1] = mla_dims3::q_f16x2(v.w, kQScale);
      }
      q.qr[0] = q.qr[1] = 0u;
    }
    mla_dims2::SoftState ss;
#pragma unroll
    for (int e = 0; e < 4; ++e) ss.m_ref[e] = -INFINITY;
    ss.mred[0] = ss.mred[1] = -INFINITY;
    ss.lsum[0] = ss.lsum[1] = 0.f;
    mma::FragC o[4][2];
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) o[p][nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};

    for (int tile = 0;; ++tile, ++j) {
      if (tile >= w.n_tiles) break;
      const int valid = min(kT, w.n_tokens - tile * kT);
      mbar_wait(bar0 + 8 * stage, phase);
      const unsigned char* stp = smem + stage * L::stage;
      mla_dims3::dims_tile3<S, D3, R>(smem, ln, stp, valid, j, q, logit_scale, ss, o, [&] {
        if (tid == 0) issue_next();
      });
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
    }

    // Denominators: lane sums over g, then over the 4 m-tile warps.
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
      for (int off = 4; off < WS; off <<= 1) ss.lsum[e] += __shfl_xor(ss.lsum[e], off);
    }
    if (g == 0) {
#pragma unroll
      for (int e = 0; e < 2; ++e) lpart_sm[ln.mr * kHeads + 8 * ln.rnt + 2 * t + e] = ss.lsum[e];
    }
    // Straight from the accumulators: o[p][nt].v[i] is dim 64 dw + 16 (g >> 1) + 4 p + (g & 1) + 2 (i >> 1) of
    // head 8 nt + 2 t + (i & 1). Lanes g, g ^ 1 (lane ^ 4) swap: the even lane keeps p 0, 1 and takes its
    // partner's, so it holds dims 16 (g >> 1) + 0..7; the odd lane dims + 8..15.
    __syncthreads();
    const bool odd = (g & 1) != 0;
    const int dim0 = 64 * dw + 16 * (g >> 1) + 8 * (g & 1);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int h = 8 * nt + 2 * t + c;
        const float l = lpart_sm[h] + lpart_sm[kHeads + h] + lpart_sm[2 * kHeads + h] + lpart_sm[3 * kHeads + h];
        const float f = l > 0.f ? kv_scale / l : 0.f;
        float keep[2][2], recv[2][2];
#pragma unroll
        for (int pp = 0; pp < 2; ++pp)
#pragma unroll
          for (int qq = 0; qq < 2; ++qq) {
            const float lo = o[pp][nt].v[c + 2 * qq], hi = o[2 + pp][nt].v[c + 2 * qq];
            keep[pp][qq] = odd ? hi : lo;
            recv[pp][qq] = __shfl_xor(odd ? lo : hi, 4);
          }
        float d[8];  // dim0 + k: pp = k >> 2, qq = (k >> 1) & 1, parity k & 1 (even lane: own parity 0)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int pp = k >> 2, qq = (k >> 1) & 1;
          const bool own = ((k & 1) != 0) == odd;
          d[k] = (own ? keep[pp][qq] : recv[pp][qq]) * f;
        }
        if (splits == 1) {
          *reinterpret_cast<uint4*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim0) =
              make_uint4(pack16(f32_to_bf16_bits(d[0]), f32_to_bf16_bits(d[1])),
                         pack16(f32_to_bf16_bits(d[2]), f32_to_bf16_bits(d[3])),
                         pack16(f32_to_bf16_bits(d[4]), f32_to_bf16_bits(d[5])),
                         pack16(f32_to_bf16_bits(d[6]), f32_to_bf16_bits(d[7])));
        } else {  // the normalised partial and its log2-sum-exp (the combine kernel merges them)
          const size_t ro = ((size_t(w.b - b0) * splits + w.split) * kHeads + h) * kDimV + dim0;
          if constexpr ((F & fHp) != 0) {  // [batch][splits][16][512] f16 in the f32 area's first half
            using mla_dims2::pack_f16x2;
            *reinterpret_cast<uint4*>(reinterpret_cast<uint16_t*>(part.o) + ro) =
                make_uint4(pack_f16x2(d[0], d[1]), pack_f16x2(d[2], d[3]), pack_f16x2(d[4], d[5]), pack_f16x2(d[6], d[7]));
          } else {
            float* po = part.o + ro;
            *reinterpret_cast<float4*>(po) = make_float4(d[0], d[1], d[2], d[3]);
            *reinterpret_cast<float4*>(po + 4) = make_float4(d[4], d[5], d[6], d[7]);
          }
          if (dw == 0 && g == 0)
            part.lse[(size_t(w.b - b0) * splits + w.split) * kHeads + h] =
                l > 0.f ? ss.m_ref[2 * nt + c] + log2f(l) : -INFINITY;
        }
      }
    if constexpr ((F & fMg) != 0) {
      // One item a block, all blocks resident (cooperative launch): count in, wait for the batch's other
      // splits, merge heads split, split + splits, .. from the partials in L2 (mla_dims3's kMG).
      if (splits > 1) {
        if constexpr ((F & fLf) == 0) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        __syncthreads();
        if (tid == 0) {
          unsigned int* ctr = g_mla_dims5_merge + 2 * (w.b - b0);
          if constexpr ((F & fLf) != 0) asm volatile("fence.acq_rel.gpu;" ::: "memory");
          atomicAdd(ctr, 1u);
          for (;;) {
            unsigned int v;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
            if (v >= unsigned(splits)) break;
            __nanosleep(32);
          }
          if (atomicAdd(ctr + 1, 1u) == unsigned(splits - 1)) {  // the last to leave: back to zero
            atomicExch(ctr, 0u);
            atomicExch(ctr + 1, 0u);
          }
        }
        __syncthreads();
        if constexpr ((F & fLf) == 0) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        const int bl = w.b - b0;
        auto load_part = [&](size_t off) {  // 4 dims of a partial
          if constexpr ((F & fHp) != 0) {
            const uint2 u = __ldcg(reinterpret_cast<const uint2*>(reinterpret_cast<const uint16_t*>(part.o) + off));
            const float2 lo = mla_dims3::f16x2_to_f32(u.x), hi = mla_dims3::f16x2_to_f32(u.y);
            return make_float4(lo.x, lo.y, hi.x, hi.y);
          } else {
            return __ldcg(reinterpret_cast<const float4*>(part.o + off));
          }
        };
        const int nh = w.split < kHeads ? (kHeads - 1 - w.split) / splits + 1 : 0;
        constexpr int kU = 2;  // 4 splits, 4 heads a block: two units a thread, all 16 + 16 loads in flight at once
        if (splits == 4 && nh * (kDimV / 4) == kU * kThreads) {
          float lv[kU][4];
          float4 ov[kU][4];
#pragma unroll
          for (int k = 0; k < kU; ++k) {
            const int u = tid + k * kThreads;
            const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
#pragma unroll
            for (int s2 = 0; s2 < 4; ++s2) {
              lv[k][s2] = __ldcg(part.lse + (size_t(bl) * splits + s2) * kHeads + h);
              ov[k][s2] = load_part(((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim);
            }
          }
#pragma unroll
          for (int k = 0; k < kU; ++k) {
            const int u = tid + k * kThreads;
            const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
            float mx = -INFINITY;
#pragma unroll
            for (int s2 = 0; s2 < 4; ++s2) mx = fmaxf(mx, lv[k][s2]);
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            float total = 0.f;
#pragma unroll
            for (int s2 = 0; s2 < 4; ++s2) {
              const float l = lv[k][s2];
              const float wt = l == -INFINITY ? 0.f : mla_dims2::ex2_fast(l - mx);
              total += wt;
              acc.x += wt * ov[k][s2].x;
              acc.y += wt * ov[k][s2].y;
              acc.z += wt * ov[k][s2].z;
              acc.w += wt * ov[k][s2].w;
            }
            const float inv = total > 0.f ? 1.f / total : 0.f;
            *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
                make_uint2(pack16(f32_to_bf16_bits(acc.x * inv), f32_to_bf16_bits(acc.y * inv)),
                           pack16(f32_to_bf16_bits(acc.z * inv), f32_to_bf16_bits(acc.w * inv)));
          }
        } else {
          for (int u = tid; u < nh * (kDimV / 4); u += kThreads) {
            const int h = w.split + splits * (u / (kDimV / 4)), dim = 4 * (u % (kDimV / 4));
            const float* lse = part.lse + size_t(bl) * splits * kHeads + h;
            float mx = -INFINITY;
            for (int s2 = 0; s2 < splits; ++s2) mx = fmaxf(mx, __ldcg(lse + size_t(s2) * kHeads));
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            float total = 0.f;
            for (int s2 = 0; s2 < splits; ++s2) {
              const float l = __ldcg(lse + size_t(s2) * kHeads);
              const float wt = l == -INFINITY ? 0.f : mla_dims2::ex2_fast(l - mx);
              const float4 v = load_part(((size_t(bl) * splits + s2) * kHeads + h) * kDimV + dim);
              total += wt;
              acc.x += wt * v.x;
              acc.y += wt * v.y;
              acc.z += wt * v.z;
              acc.w += wt * v.w;
            }
            const float inv = total > 0.f ? 1.f / total : 0.f;
            *reinterpret_cast<uint2*>(a.out + (int64_t(w.b) * kHeads + h) * kDimV + dim) =
                make_uint2(pack16(f32_to_bf16_bits(acc.x * inv), f32_to_bf16_bits(acc.y * inv)),
                           pack16(f32_to_bf16_bits(acc.z * inv), f32_to_bf16_bits(acc.w * inv)));
          }
        }
      }
    }
    // lpart is next written after the next item's tile barriers: no barrier here
  }
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part; (void)b0; (void)nb; (void)ns;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
template <int S, int OPT, int R, int F>
struct K5 {
  using L = mla_dims3::Smem<S, OPT & kD3Bits>;
  static constexpr auto kernel = mla_fp8_dims5_kernel<S, OPT, R, F>;
  static void prepare() {
    static const bool attr_set = [] {
      harness_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(L::total)),
                    "cudaFuncSetAttribute(mla_fp8_dims5_kernel)");
      return true;
    }();
    (void)attr_set;
  }
  // One launch; coop: a cooperative launch (every block resident, or the launch fails).
  static void run(const MlaDecodeArgs& a, dim3 grid, int tps, int splits, Partials part, int b0, int nb,
                  const char* name, bool coop) {
    prepare();
    cudaLaunchAttribute attr[1];
    std::memset(attr, 0, sizeof(attr));
    int na = 0;
    if (coop) {
      attr[na].id = cudaLaunchAttributeCooperative;
      attr[na].val.cooperative = 1;
      ++na;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(unsigned(kDW * current_device_shape().warp_size));
    cfg.dynamicSmemBytes = L::total;
    cfg.attrs = na ? attr : nullptr;
    cfg.numAttrs = unsigned(na);
    harness_check(cudaLaunchKernelEx(&cfg, kernel, a, tps, splits, part, b0, nb, 0), name);
    harness_check_launch(name);
  }
};

// The 32-tile shapes (65536 < batch * kv_len <= 262144; H200: bs 256 / kv 1024, 1 split, and bs 32 / kv 8192, 4
// splits): v22's persistent plan (min(items, SMs) blocks, items round robin) with fDir; with splits, the partials
// straight from the accumulators, then (MG) merged in the kernel when every block has one item (cooperative
// launch, mla_dims3's kMG, fMg; HP: as f16, fHp), else v22's combine kernel.
// XF: further flags of the merging launch (fLf).
template <int S, int OPT, int R = 2, bool MG = false, bool HP = false, int XF = 0>
struct DirPath {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static bool applies(const MlaDecodeConfig& c) {
    const int64_t n = int64_t(c.batch_size) * c.kv_seq_len;
    return n > 65536 && n <= 262144;
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static bool merges(const MlaDecodeConfig& c, const SplitPlan& pl) {
    return MG && pl.splits > 1 && c.batch_size <= kMaxMgBatches &&
           int64_t(c.batch_size) * pl.splits <= current_device_shape().compute_units;
  }
  static void launch(const MlaDecodeArgs& a) {
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error("mla_dims5::DirPath: workspace too small");
    const Partials part = pl.splits > 1 ? partials_in(a.workspace, a.cfg.batch_size, pl.splits) : Partials{nullptr, nullptr};
    const dim3 grid(unsigned(std::min<int64_t>(int64_t(a.cfg.batch_size) * pl.splits, current_device_shape().compute_units)));
    const bool mg = merges(a.cfg, pl);
    if (mg)
      K5<S, OPT, R, fDir | fMg | (HP ? fHp : 0) | XF>::run(a, grid, pl.tokens_per_split, pl.splits, part, 0,
                                                      a.cfg.batch_size, "mla_fp8_dims5_kernel<direct, merge>", true);
    else
      K5<S, OPT, R, fDir>::run(a, grid, pl.tokens_per_split, pl.splits, part, 0, a.cfg.batch_size,
                               "mla_fp8_dims5_kernel<direct>", false);
    if (pl.splits > 1 && !mg) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_dims5
