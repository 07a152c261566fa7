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
// fp8 -> f16 by the hardware conversion: on the H200 it beat bit moves (also with sign-filling byte
// permutes) and e4m3 mma.sync, which sm_90 runs through conversions (docs/perf.md).
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
#include "problems/common/mla_softmax_steps.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_pipe {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;

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

// V pair (byte j of a, byte j of b) as an f16 pair.
__device__ inline uint32_t fp8_pair(uint32_t a, uint32_t b, int j) {
  return fp8x2_to_f16x2_hw(byte_perm(a, b, uint32_t(j) | (uint32_t(4 + j) << 4)));
}

// K fragment of four consecutive dims (one word).
__device__ inline mma::FragB fp8_word(uint32_t w) { return make_uint2(fp8x2_to_f16x2_hw(w), fp8x2_to_f16x2_hw(w >> 16)); }

// QK on f16 matrix instructions: Q as f16 fragments for all 576 dims (144 registers).
// Step (p, j) covers dims 64p + 16t + 4j .. +3 for lane group t, so one 16-byte K load feeds 4 steps.
struct QkF16 {
  mma::FragA q[kDimQK / 16];

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
  }
  // C layout of mma: out[i] = head g + 8 (i >> 1), token column 2t + (i & 1).
  __device__ void dots(const unsigned char* krow, int t, float out[4]) const {
    mma::FragC c[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) c[j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p) {
      const uint4 kc = *reinterpret_cast<const uint4*>(krow + 64 * p + 16 * t);
      mma::mma<mma::Elem::f16>(c[0], q[4 * p + 0], fp8_word(kc.x));
      mma::mma<mma::Elem::f16>(c[1], q[4 * p + 1], fp8_word(kc.y));
      mma::mma<mma::Elem::f16>(c[2], q[4 * p + 2], fp8_word(kc.z));
      mma::mma<mma::Elem::f16>(c[3], q[4 * p + 3], fp8_word(kc.w));
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = (c[0].v[i] + c[1].v[i]) + (c[2].v[i] + c[3].v[i]);
  }
};

static __global__ void __launch_bounds__(kWarps * kernel_warp_size(), 1)
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

  QkF16 qk;
  qk.load(a.q + int64_t(b) * kHeads * kDimQK, g, t);
  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;

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
      mla_softmax::scale_accumulators<2>(o, lacc, alpha);
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
          mma::mma<mma::Elem::f16>(o[gr][j], pa, make_uint2(fp8_pair(w0, w1, j), fp8_pair(w2, w3, j)));
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
  __builtin_trap();
#endif
}

static SplitPlan pipe_plan(const MlaDecodeConfig& c) {
  return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, 1, kTile, 128);
}

static size_t pipe_workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, pipe_plan(c).splits); }

static void pipe_launch(const MlaDecodeArgs& a, const char* name) {
  require_mla_shape(a.cfg);
  const SplitPlan plan = pipe_plan(a.cfg);
  if (a.workspace_size < partials_bytes(a.cfg.batch_size, plan.splits))
    throw std::runtime_error(std::string(name) + ": workspace too small");
  static const bool attr_set = [] {
    harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_pipe_kernel),
                                      hipFuncAttributeMaxDynamicSharedMemorySize, int(Smem::total)),
                  "hipFuncSetAttribute(mla_fp8_pipe_kernel)");
    return true;
  }();
  (void)attr_set;
  const Partials part = partials_in(a.workspace, a.cfg.batch_size, plan.splits);
  const int threads = kWarps * current_device_shape().warp_size;
  mla_fp8_pipe_kernel<<<dim3(plan.splits, a.cfg.batch_size), threads, Smem::total>>>(a, plan.tokens_per_split,
                                                                                            plan.splits, part);
  harness_check_launch(name);
  if (plan.splits > 1) launch_combine(part, a.cfg.batch_size, plan.splits, a.out);
}

#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_pipe
