// mla_decode on fp8 KV, the 32-tile shapes with tokens as the wgmma M dimension (session 21, NVIDIA sm_90a only):
// the two warpgroups of a block take alternate 64-token tiles of the block's items (ping-pong), each tile whole:
//  - Q K^T: S^T (64 tokens x 32: Q's e4m3 hi / lo rows) by 18 wgmma m64n32k32 over all 576 dims, the KV tile read
//    from its TMA-swizzled boxes (mla_wgqk: tensor maps, boxes, descriptors, stage_q), two accumulator chains;
//  - the softmax in registers: each thread holds tokens 16 q + g (+ 8) of 4 heads; the tile's head maxima over the
//    warpgroup through shared memory and one warpgroup barrier; a reference maximum per head that moves only when a
//    tile exceeds it by more than 2^8 (P <= 256 in f16);
//  - P^T (16 heads x 64 tokens, f16, 128-byte swizzle) to shared memory as the B operand, one warpgroup barrier;
//  - P V: O^T (512 dims x 16 heads, f32, 64 registers a thread) += V^T P^T by 32 wgmma m64n16k16 with A = V^T from
//    registers: per 64-dim box and 16 tokens one ldmatrix.trans of byte pairs (dims 2g, 2g + 1 of tokens 2t, 2t + 1),
//    one PRMT and two e4m3x2 -> f16x2 conversions a register: A row g is dim 2g, row g + 8 dim 2g + 1 of the warp's 16;
//  - the tile's stage refilled by the same warpgroup (tile j + S, S even: its own next-but-one) once its V reads are
//    done; each warp issues some of the 9 boxes;
//  - per item: Q (bulk-copied one item ahead) staged by the block (two barriers), the warpgroups' (m, l, O) merged through shared memory, the
//    output (or the split's normalised f32 partial and log2-sum-exp for mla_dims' combine kernel) written by WG 0.
// Measurements: docs/perf.md, session 21 (v30).
#pragma once
#include <algorithm>
#include <cstring>

#include "problems/common/mla_fp8_dims2.h"
#include "problems/common/mla_fp8_wgqk.h"

namespace mla_tok {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;
constexpr int kT = 64;
constexpr int kThreads = 256;
constexpr float kSlack = 8.f;  // log2 units: P <= 2^8 until the reference moves

template <int S>
struct Smem {
  static constexpr size_t stage = size_t(kT) * kDimQK;                // 36864 = 36 x 1024
  static constexpr size_t q = S * stage;                              // Q operand (mla_wgqk::kQBytes)
  static constexpr size_t p = q + mla_wgqk::kQBytes;                  // 2 x P^T [16][64] f16, 1024-byte aligned
  static constexpr size_t o = p + 2 * 2048;                           // WG 1's O: [64][128 threads] f32
  static constexpr size_t ml = o + size_t(64) * 128 * 4;              // WG 1's m, l: [16 heads][2]
  static constexpr size_t red = ml + 16 * 2 * 4;                      // [2 WG][4 warps][16 heads] f32
  static constexpr size_t qred = red + 2 * 4 * 16 * 4;                // stage_q: one float a warp
  static constexpr size_t qraw = qred + 64;                           // the item's Q rows, bf16 [16][576]
  static constexpr size_t bar = qraw + size_t(kHeads) * kDimQK * 2;   // S full barriers, then Q's
  static constexpr size_t total = bar + size_t(S + 1) * 8;
  static_assert(stage % 1024 == 0 && q % 1024 == 0 && p % 1024 == 0, "swizzled operands 1024-byte aligned");
};

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
#define MLA_TOK_GRID_CONST __grid_constant__
#else
#define MLA_TOK_GRID_CONST
#endif

#if defined(HARNESS_GPU)
template <int S>
__global__ void __launch_bounds__(kThreads, 1)
    mla_tok_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part,
                   const MLA_TOK_GRID_CONST mla_wgqk::KvMap kvmap, const MLA_TOK_GRID_CONST mla_wgqk::KvMap ropemap) {
#if defined(MLA_DIMS_SM90)
  static_assert(S % 2 == 0, "tile j + S belongs to tile j's warpgroup");
  using L = Smem<S>;
  using mla_dims::mbar_expect_tx;
  using mla_dims::mbar_init;
  using mla_dims::mbar_init_fence;
  using mla_dims::mbar_wait;
  using mla_dims::smem_u32;
  extern __shared__ __align__(1024) unsigned char smem[];
  if ((smem_u32(smem) & 1023u) != 0u) __trap();  // the swizzled operands need 1024-byte alignment
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5, wg = warp >> 2, q = warp & 3;
  const int g = lane >> 2, t = lane & 3;
  const uint32_t bar0 = smem_u32(smem + L::bar);
  const int n_items = a.cfg.batch_size * splits;
  const int item_step = int(gridDim.x);

  struct Span {
    int64_t t0;
    int n_tokens, n_tiles, b, split;
  };
  auto span = [&](int item) {
    const int b = item / splits, split = item % splits;
    const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
    const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
    const int64_t left = kv_end - t0;
    const int n = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
    return Span{t0, n, (n + kT - 1) / kT, b, split};
  };
  // The block's tiles in order (items blockIdx.x + k gridDim.x, tiles 0..): the producers' cursor.
  struct Cur {
    int item, tile;
    Span sp;
  };
  auto cur_fix = [&](Cur& c) {  // past the item's tiles (or at an empty item): the next item with tiles
    while (c.item < n_items && c.tile >= c.sp.n_tiles) {
      c.item += item_step;
      c.tile = 0;
      if (c.item < n_items) c.sp = span(c.item);
    }
  };
  auto cur_next = [&](Cur& c) {
    ++c.tile;
    cur_fix(c);
  };
  uint64_t pol = 0;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  // Box x0 (wide box x0 < 4; x0 0 also the rope box) of the tile at c into stage s (the expected bytes by the caller).
  auto issue_boxes = [&](const Cur& c, int s, int x0) {
    const int row0 = int(c.sp.t0 + int64_t(c.tile) * kT);
    const uint32_t dst = smem_u32(smem + size_t(s) * L::stage);
    mla_wgqk::tma_box(dst + uint32_t(x0 * mla_wgqk::kWideBytes), &kvmap, 128 * x0, row0, bar0 + 8 * s, pol);
    if (x0 == 0) mla_wgqk::tma_box(dst + uint32_t(mla_wgqk::kRopeOff), &ropemap, 512, row0, bar0 + 8 * s, pol);
  };
  const uint32_t qbar = bar0 + 8 * S;
  auto issue_q = [&](int item) {  // the item's Q rows (bf16) into qraw
    const int b = item / splits;
    mbar_expect_tx(qbar, uint32_t(kHeads * kDimQK * 2));
    mla_dims::bulk_copy(smem_u32(smem + L::qraw), a.q + int64_t(b) * kHeads * kDimQK, uint32_t(kHeads * kDimQK * 2), qbar);
  };

  if (tid == 0) {
    for (int s = 0; s <= S; ++s) mbar_init(bar0 + 8 * s, 1);
    mbar_init_fence();
  }
  __syncthreads();
  if (tid == 0 && int(blockIdx.x) < n_items) issue_q(int(blockIdx.x));
  Cur pc{int(blockIdx.x), 0, Span{0, 0, 0, 0, 0}};  // lane 0 of each warp: the next tile its warpgroup refills
  if (lane == 0) {
    if (pc.item < n_items) pc.sp = span(pc.item);
    cur_fix(pc);
    if (tid == 0) {  // tiles 0 .. S - 1
      Cur c0 = pc;
      for (int s = 0; s < S && c0.item < n_items; ++s) {
        mbar_expect_tx(bar0 + 8 * s, uint32_t(kT * kDimQK));
        for (int x = 0; x < 4; ++x) issue_boxes(c0, s, x);  // all 5 boxes
        cur_next(c0);
      }
    }
    for (int k = 0; k < S + wg && pc.item < n_items; ++k) cur_next(pc);  // tile S + wg
  }

  const float kv_scale = *a.kv_fp8_scale;
  const uint32_t q_op = smem_u32(smem + L::q);
  const uint32_t p_op = smem_u32(smem + L::p + 2048 * wg);
  unsigned char* p_sm = smem + L::p + 2048 * wg;
  float* red = reinterpret_cast<float*>(smem + L::red) + wg * 64;
  const int hd[4] = {2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t};  // the thread's heads (S and O columns)
  uint32_t j = 0;                                             // the block's tile counter
  uint32_t kq = 0;                                            // the block's items so far (Q barrier phase)

  for (int item = int(blockIdx.x); item < n_items; item += item_step, ++kq) {
    const Span w = span(item);
    __syncthreads();  // both warpgroups are done with the previous item's Q and merge areas
    mbar_wait(qbar, kq & 1u);
    if (w.n_tiles == 0) {  // its Q was copied all the same: the next one's
      __syncthreads();
      if (tid == 0 && item + item_step < n_items) issue_q(item + item_step);
      continue;
    }
    const float sq = mla_wgqk::stage_q<kThreads>(reinterpret_cast<const uint16_t*>(smem + L::qraw), smem + L::q,
                                                 reinterpret_cast<float*>(smem + L::qred));
    if (tid == 0 && item + item_step < n_items) issue_q(item + item_step);  // qraw read (stage_q's last barrier)
    const float lscale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale / sq;
    float m_ref[4], lsum[4], o[8][8];
#pragma unroll
    for (int e = 0; e < 4; ++e) m_ref[e] = -INFINITY, lsum[e] = 0.f;
#pragma unroll
    for (int b = 0; b < 8; ++b)
#pragma unroll
      for (int i = 0; i < 8; ++i) o[b][i] = 0.f;

    for (int tile = 0; tile < w.n_tiles; ++tile, ++j) {
      if (int(j & 1u) != wg) continue;
      const int s = int(j % S);
      const int valid = min(kT, w.n_tokens - tile * kT);
      mbar_wait(bar0 + 8 * s, (j / S) & 1u);
      const uint32_t st = smem_u32(smem + size_t(s) * L::stage);
      // Q K^T: S^T rows 16 q + g (+ 8), n8 blocks 0 / 1: hi of heads 0-7 / 8-15, 2 / 3: lo
      float d0[16], d1[16];
      mla_wgqk::qk_steps<mla_wgqk::kSteps>(d0, d1, st, q_op, 0);
      mla_wgqk::wg_wait0();
      float sv[2][4];  // [token half h][head e]
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int hb = e >> 1, c = e & 1;
          const float x = (d0[4 * hb + 2 * h + c] + d1[4 * hb + 2 * h + c]) +
                          0.0625f * (d0[4 * (2 + hb) + 2 * h + c] + d1[4 * (2 + hb) + 2 * h + c]);
          sv[h][e] = 16 * q + g + 8 * h < valid ? x * lscale : -INFINITY;
        }
      // the tile's head maxima over the warpgroup
      float mx[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        mx[e] = fmaxf(sv[0][e], sv[1][e]);
#pragma unroll
        for (int off = 4; off < 32; off <<= 1) mx[e] = fmaxf(mx[e], __shfl_xor_sync(0xffffffffu, mx[e], off));
      }
      if (g == 0) {
#pragma unroll
        for (int e = 0; e < 4; ++e) red[q * 16 + hd[e]] = mx[e];
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
      float alpha[4];
      bool any = false;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float tm = fmaxf(fmaxf(red[hd[e]], red[16 + hd[e]]), fmaxf(red[32 + hd[e]], red[48 + hd[e]]));
        alpha[e] = 1.f;
        if (tm > m_ref[e] + kSlack) {  // warpgroup-uniform per head
          alpha[e] = mla_dims2::ex2_fast(m_ref[e] - tm);  // 0 at the first tile (m_ref -inf)
          m_ref[e] = tm;
          any = true;
        }
      }
      if (any) {
#pragma unroll
        for (int e = 0; e < 4; ++e) lsum[e] *= alpha[e];
#pragma unroll
        for (int b = 0; b < 8; ++b)
#pragma unroll
          for (int i = 0; i < 8; ++i) o[b][i] *= alpha[2 * (i >> 2) + (i & 1)];
      }
      // P^T: row hd[e], token 16 q + g + 8 h, f16 at 2 bytes a token, 16-byte chunks XOR (row & 7)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float pv = mla_dims2::ex2_fast(sv[h][e] - m_ref[e]);
          lsum[e] += pv;
          const int r = hd[e], tok = 16 * q + g + 8 * h;
          const int off = r * 128 + ((((tok * 2) >> 4) ^ (r & 7)) << 4) + ((tok * 2) & 15);
          uint16_t hbits;
          asm("cvt.rn.f16.f32 %0, %1;" : "=h"(hbits) : "f"(pv));
          *reinterpret_cast<uint16_t*>(p_sm + off) = hbits;
        }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");  // P^T written; red[] read
      // P V per 64-dim box b: A rows = dims 64 b + 16 q + 2 g (+ 1), k16 steps of 16 tokens
      const uint64_t pdesc = mla_wgqk::desc_sw128(p_op);
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        uint32_t af[4][4];
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {  // tokens 32 kk .. 32 kk + 31: matrices of 8 tokens x 8 dim pairs
          const int tok = 32 * kk + 8 * (lane >> 3) + (lane & 7);
          const uint32_t addr =
              st + uint32_t((b >> 1) * mla_wgqk::kWideBytes + tok * mla_wgqk::kWide + ((((b & 1) * 4 + q) ^ (tok & 7)) << 4));
          uint32_t x[4];
          mla_wgqk::ldsm_x4_trans(addr, x[0], x[1], x[2], x[3]);
#pragma unroll
          for (int m = 0; m < 4; ++m) {  // matrix m: tokens 32 kk + 8 m + 2 t (+ 1), dims 2 g (+ 1)
            const uint32_t y = __byte_perm(x[m], 0u, 0x3120);  // (2g: t, t+1) | (2g+1: t, t+1)
            const int ks = 2 * kk + (m >> 1), half = m & 1;
            af[ks][2 * half] = mla_dims2::e4m3_lo(y);      // row g (dim 2g), k 2t (+8 half)
            af[ks][2 * half + 1] = mla_dims2::e4m3_hi(y);  // row g + 8 (dim 2g + 1)
          }
        }
        mla_wgqk::wg_fence();  // the A registers (and, at b 0, the rescaled O) written by other instructions
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) mla_wgqk::wgmma_rs_n16(o[b], af[ks], pdesc + uint64_t(2 * ks), 1);
      }
      mla_wgqk::wg_commit();
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");  // the stage's V reads are done
      if (lane == 0 && pc.item < n_items) {  // refill the stage with tile j + S (this warpgroup's)
        if (q == 0) mbar_expect_tx(bar0 + 8 * s, uint32_t(kT * kDimQK));
        issue_boxes(pc, s, q);
        cur_next(pc);
        if (pc.item < n_items) cur_next(pc);
      }
      mla_wgqk::wg_wait0();  // P^T and the A registers free again
    }

    // Merge: l over the warpgroup, WG 1's (m, l, O) through shared memory, WG 0 writes.
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
      for (int off = 4; off < 32; off <<= 1) lsum[e] += __shfl_xor_sync(0xffffffffu, lsum[e], off);
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");  // red[] free (last tile's maxima read)
    if (g == 0) {
#pragma unroll
      for (int e = 0; e < 4; ++e) red[q * 16 + hd[e]] = lsum[e];
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
    float lw[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) lw[e] = red[hd[e]] + red[16 + hd[e]] + red[32 + hd[e]] + red[48 + hd[e]];
    float* osm = reinterpret_cast<float*>(smem + L::o);
    float* mlsm = reinterpret_cast<float*>(smem + L::ml);
    if (wg == 1) {
#pragma unroll
      for (int b = 0; b < 8; ++b)
#pragma unroll
        for (int i = 0; i < 8; ++i) osm[(b * 8 + i) * 128 + (tid - 128)] = o[b][i];
      if (q == 0 && g == 0) {
#pragma unroll
        for (int e = 0; e < 4; ++e) mlsm[2 * hd[e]] = m_ref[e], mlsm[2 * hd[e] + 1] = lw[e];
      }
    }
    __syncthreads();
    if (wg == 0) {
      float f0[4], f1[4], inv[4], lse[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float m1 = mlsm[2 * hd[e]], l1 = mlsm[2 * hd[e] + 1];
        const float m = fmaxf(m_ref[e], m1);
        f0[e] = m_ref[e] == -INFINITY ? 0.f : exp2f(m_ref[e] - m);
        f1[e] = m1 == -INFINITY ? 0.f : exp2f(m1 - m);
        const float l = lw[e] * f0[e] + l1 * f1[e];
        inv[e] = l > 0.f ? kv_scale / l : 0.f;
        lse[e] = l > 0.f ? m + log2f(l) : -INFINITY;
      }
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        const int dim = 64 * b + 16 * q + 2 * g;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i0 = 4 * (e >> 1) + (e & 1);  // rows g (dim), g + 8 (dim + 1) of column hd[e]
          const float v0 = (o[b][i0] * f0[e] + osm[(b * 8 + i0) * 128 + tid] * f1[e]) * inv[e];
          const float v1 = (o[b][i0 + 2] * f0[e] + osm[(b * 8 + i0 + 2) * 128 + tid] * f1[e]) * inv[e];
          if (splits == 1) {
            *reinterpret_cast<uint32_t*>(a.out + (int64_t(w.b) * kHeads + hd[e]) * kDimV + dim) =
                pack16(f32_to_bf16_bits(v0), f32_to_bf16_bits(v1));
          } else {
            *reinterpret_cast<float2*>(part.o + ((size_t(w.b) * splits + w.split) * kHeads + hd[e]) * kDimV + dim) =
                make_float2(v0, v1);
          }
        }
      }
      if (splits > 1 && q == 0 && g == 0) {
#pragma unroll
        for (int e = 0; e < 4; ++e) part.lse[(size_t(w.b) * splits + w.split) * kHeads + hd[e]] = lse[e];
      }
    }
  }
#else
  (void)a; (void)tokens_per_split; (void)splits; (void)part; (void)kvmap; (void)ropemap;
  __builtin_trap();
#endif
}

#if !defined(__HIP_PLATFORM_AMD__)
// The 32-tile shapes (65536 < batch * kv_len <= 262144): mla_dims5::DirPath's plan (min(items, SMs) blocks, items
// round robin), the splits' partials merged by mla_dims' combine kernel.
template <int S>
struct TokPath {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kT, 128);
  }
  static bool applies(const MlaDecodeConfig& c) {
    const int64_t n = int64_t(c.batch_size) * c.kv_seq_len;
    return n > 65536 && n <= 262144;
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static void launch(const MlaDecodeArgs& a) {
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error("mla_tok::TokPath: workspace too small");
    const Partials part = pl.splits > 1 ? partials_in(a.workspace, a.cfg.batch_size, pl.splits) : Partials{nullptr, nullptr};
    constexpr auto kernel = mla_tok_kernel<S>;
    static const bool attr_set = [] {
      harness_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(Smem<S>::total)),
                    "cudaFuncSetAttribute(mla_tok_kernel)");
      return true;
    }();
    (void)attr_set;
    const int64_t rows = int64_t(a.cfg.batch_size) * a.cfg.kv_seq_len;
    const mla_wgqk::KvMap map = mla_wgqk::kv_map(a.kv_fp8, rows, 128), rmap = mla_wgqk::kv_map(a.kv_fp8, rows, 64);
    const int grid = int(std::min<int64_t>(int64_t(a.cfg.batch_size) * pl.splits, current_device_shape().compute_units));
    kernel<<<grid, kThreads, Smem<S>::total>>>(a, pl.tokens_per_split, pl.splits, part, map, rmap);
    harness_check_launch("mla_tok_kernel");
    if (pl.splits > 1) {
      mla_dims::combine_splits_wide_kernel<<<a.cfg.batch_size * kHeads, kDimV / 4>>>(part, pl.splits, a.out);
      harness_check_launch("mla combine_splits_wide_kernel");
    }
  }
};
#endif  // !__HIP_PLATFORM_AMD__
#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_tok
