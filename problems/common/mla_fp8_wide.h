// mla_decode on fp8 KV, v8's pipeline (problems/common/mla_fp8_pipe.h) with Q kept once per block in
// shared memory as f16 (converted from bf16 once per block, not by every warp), so a warp needs
// ~100 registers instead of v8's 255 and more warps fit on an SM. Parameters:
//   W   warps per block; P V: 512 / W output dims a warp
//   T   tokens per tile (8 W / KS)
//   S   cp.async ring stages of T tokens
//   B   blocks per SM (register cap 65536 / (B * W * warp size))
//   QR  Q fragments loaded once into registers from the shared f16 copy (v8's QK with the block-wide
//       conversion) instead of read from shared memory at every tile
//   KS  1: warp w does Q K^T for 8 tokens over all 576 dims (T = 8 W); 2: the warps w and w + W/2 share
//       8 tokens (T = 4 W), each over half of every 64-dim block (lane t: dims 64p + 32h + 8t .. +7),
//       the upper half adds its partial logits through shared memory and a pair barrier (named
//       barrier 1 + pair), the lower half does the softmax; tokens of a pair: rows 2 apart, so the
//       64-bit K loads hit disjoint banks
// Everything else (lazy block-wide reference maximum, two barriers per tile, token order, P layout,
// warp 0's column of ones, hardware fp8 -> f16) is v8's.
// Q in shared memory: head rows of 576 f16 + 8 pad (1168 bytes; KS 2: + 32, 1216 bytes): the 128-bit
// loads of rows g, g+1 at 32-byte (KS 2: 16-byte) lane steps hit disjoint banks.
#pragma once
#include "problems/common/async_copy.h"
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_softmax_steps.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_wide {
namespace {  // internal linkage: every variant file gets its own kernels, launch statics and attributes

using namespace mla_kernels;

constexpr int kRowBytes = kDimQK + 16;  // odd multiple of 16 bytes
template <int KS>
constexpr int kQRow = KS == 1 ? kDimQK + 8 : kDimQK + 32;  // f16 per head row of Q in shared memory
constexpr float kRescaleSlack = 8.f;    // log2 units

template <int W, int T, int S, int KS>
struct Smem {
  static constexpr int kPRow = T + 16;  // f16; row stride = 8 words mod 32: conflict-free A loads
  static constexpr size_t stage = size_t(T) * kRowBytes;
  static constexpr size_t q = size_t(S) * stage;
  static constexpr size_t p = q + size_t(kHeads) * kQRow<KS> * 2;
  static constexpr size_t tmax = p + size_t(kHeads) * kPRow * 2;  // [head][warp] float
  static constexpr size_t flag = tmax + size_t(kHeads) * (W / KS) * 4;
  static constexpr size_t stats = flag + 16;  // l[16], m[16]
  static constexpr size_t sx = stats + 2 * kHeads * 4;  // KS 2: [pair][lane] float4 partial logits
  static constexpr size_t total = sx + (KS == 2 ? size_t(W / 2) * 32 * 16 : 0);
};

#if defined(HARNESS_GPU)

__device__ inline uint32_t bf16x2_to_f16x2(uint32_t w) {
  return pack16(f32_to_f16_bits(__uint_as_float(w << 16)), f32_to_f16_bits(__uint_as_float(w & 0xffff0000u)));
}

__device__ inline uint32_t fp8_pair(uint32_t a, uint32_t b, int j) {
  return fp8x2_to_f16x2_hw(byte_perm(a, b, uint32_t(j) | (uint32_t(4 + j) << 4)));
}

__device__ inline mma::FragB fp8_word(uint32_t w) { return make_uint2(fp8x2_to_f16x2_hw(w), fp8x2_to_f16x2_hw(w >> 16)); }

// The Q fragments of one 64-dim block p for lane group t (half h of KS 2) from the shared f16 copy:
// KS 1: steps (p, 0..3) = dims 64p + 16t + 4j .. +3; KS 2: steps j = 0, 1 = dims 64p + 32h + 8t + 4j.
template <int KS>
__device__ inline void q_frags(const uint16_t* qs, int p, int g, int t, int h, mma::FragA f[4 / KS]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if constexpr (KS == 1) {
      const uint4* src = reinterpret_cast<const uint4*>(qs + (g + 8 * r) * kQRow<1> + 64 * p + 16 * t);
      const uint4 lo = src[0], hi = src[1];
      f[0].row[r] = make_uint2(lo.x, lo.y);
      f[1].row[r] = make_uint2(lo.z, lo.w);
      f[2].row[r] = make_uint2(hi.x, hi.y);
      f[3].row[r] = make_uint2(hi.z, hi.w);
    } else {
      const uint4 lo = *reinterpret_cast<const uint4*>(qs + (g + 8 * r) * kQRow<2> + 64 * p + 32 * h + 8 * t);
      f[0].row[r] = make_uint2(lo.x, lo.y);
      f[1].row[r] = make_uint2(lo.z, lo.w);
    }
  }
}

// Q K^T of the lane's token row krow: out[i] = head g + 8 (i >> 1), token column 2t + (i & 1).
template <bool QR, int KS>
struct Qk {
  static constexpr int kF = 4 / KS;  // fragments per 64-dim block
  mma::FragA q[QR ? kDimQK / 64 * kF : 1];
  const uint16_t* qs;
  int h;
  __device__ void load(const uint16_t* q_sm, int g, int t, int half) {
    qs = q_sm;
    h = half;
    if constexpr (QR) {
#pragma unroll
      for (int p = 0; p < kDimQK / 64; ++p) q_frags<KS>(q_sm, p, g, t, h, q + kF * p);
    }
  }
  __device__ void dots(const unsigned char* krow, int g, int t, float out[4]) const {
    mma::FragC c[kF];
#pragma unroll
    for (int j = 0; j < kF; ++j) c[j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int p = 0; p < kDimQK / 64; ++p) {
      mma::FragA fl[QR ? 1 : kF];
      const mma::FragA* f = q + kF * p;
      if constexpr (!QR) {
        q_frags<KS>(qs, p, g, t, h, fl);
        f = fl;
      }
      if constexpr (KS == 1) {
        const uint4 kc = *reinterpret_cast<const uint4*>(krow + 64 * p + 16 * t);
        mma::mma<mma::Elem::f16>(c[0], f[0], fp8_word(kc.x));
        mma::mma<mma::Elem::f16>(c[1], f[1], fp8_word(kc.y));
        mma::mma<mma::Elem::f16>(c[2], f[2], fp8_word(kc.z));
        mma::mma<mma::Elem::f16>(c[3], f[3], fp8_word(kc.w));
      } else {
        const uint2 kc = *reinterpret_cast<const uint2*>(krow + 64 * p + 32 * h + 8 * t);
        mma::mma<mma::Elem::f16>(c[0], f[0], fp8_word(kc.x));
        mma::mma<mma::Elem::f16>(c[1], f[1], fp8_word(kc.y));
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (KS == 1)
        out[i] = (c[0].v[i] + c[1].v[i]) + (c[2].v[i] + c[3].v[i]);
      else
        out[i] = c[0].v[i] + c[1].v[i];
    }
  }
};

__device__ inline void pair_arrive(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
#else
  (void)id; (void)threads;
#endif
}
__device__ inline void pair_sync(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
#else
  (void)id; (void)threads;
#endif
}

template <int W, int T, int S, int B, bool QR, int KS>
__global__ void __launch_bounds__(W * kernel_warp_size(), B)
    mla_fp8_wide_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
#if defined(MMA_TILE_NVIDIA)
  using L = Smem<W, T, S, KS>;
  constexpr int kNQ = W / KS;  // warps (pairs) that own QK tokens
  constexpr int kPRow = L::kPRow;
  constexpr int WS = kernel_warp_size();
  constexpr int kThreads = W * WS;
  constexpr int kDimsPerWarp = kDimV / W;   // P V output dims of a warp
  constexpr int kGroups = kDimsPerWarp / 32;  // 32-dim groups (one V word per lane each)
  static_assert(mma::kN == 8 && mma::kARows == 2, "NVIDIA m16n8k16 lane geometry");
  static_assert(KS == 1 || KS == 2, "QK dims split in 1 or 2");
  static_assert(T == 8 * kNQ && kNQ % 4 == 0, "8 QK tokens a warp (pair)");
  static_assert(kThreads % T == 0, "copy plan: whole threads per row");
  static_assert(kGroups >= 1 && kDimsPerWarp % 32 == 0, "P V: whole 32-dim groups per warp");
  static_assert(S >= 2, "ring of at least two stages");
  require_warp_size();

  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* q_sm = reinterpret_cast<uint16_t*>(smem + L::q);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::p);
  float* tmax_sm = reinterpret_cast<float*>(smem + L::tmax);
  int* flag_sm = reinterpret_cast<int*>(smem + L::flag);
  float* l_sm = reinterpret_cast<float*>(smem + L::stats);
  float* m_sm = l_sm + kHeads;

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int lane = tid % WS, warp = tid / WS;
  const int g = lane >> 2, t = lane & 3;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const int n_tiles = (n_tokens + T - 1) / T;

  // Copies: kTPR threads per row, 16-byte chunks 16 (tid % kTPR) + 16 kTPR i.
  constexpr int kTPR = kThreads / T;
  const int ld_row = tid / kTPR, ld_col = 16 * (tid % kTPR);
  auto issue = [&](int tile) {
    if (tile < n_tiles) {
      const int valid = min(T, n_tokens - tile * T);
      if constexpr ((kDimQK / 16) % kTPR == 0) {
        const int64_t src_row = t0 + int64_t(tile) * T + min(ld_row, valid - 1);  // past the end: a valid row
        const uint8_t* src = a.kv_fp8 + src_row * kDimQK + ld_col;
        unsigned char* dst = smem + (tile % S) * L::stage + ld_row * kRowBytes + ld_col;
#pragma unroll
        for (int i = 0; i < kDimQK / (16 * kTPR); ++i) async_copy_16(dst + 16 * kTPR * i, src + 16 * kTPR * i);
      } else {  // chunk c: row c / 36, bytes 16 (c % 36)
        constexpr int kChunks = T * (kDimQK / 16);
#pragma unroll
        for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
          const int c = tid + i * kThreads;
          if (kChunks % kThreads == 0 || c < kChunks) {
            const int row = c / (kDimQK / 16), col = 16 * (c % (kDimQK / 16));
            const int64_t src_row = t0 + int64_t(tile) * T + min(row, valid - 1);
            async_copy_16(smem + (tile % S) * L::stage + row * kRowBytes + col, a.kv_fp8 + src_row * kDimQK + col);
          }
        }
      }
    }
    async_commit();  // empty groups keep the wait count uniform
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) issue(s);
  if (tid == 0) *flag_sm = -1;

  // Q: bf16 -> f16 once per block, 8 values per thread and step.
  {
    const uint16_t* qb = a.q + int64_t(b) * kHeads * kDimQK;
    constexpr int kChunks = kHeads * kDimQK / 8;
    for (int c = tid; c < kChunks; c += kThreads) {
      const int h = c / (kDimQK / 8), col = 8 * (c % (kDimQK / 8));
      const uint4 v = *reinterpret_cast<const uint4*>(qb + h * kDimQK + col);
      *reinterpret_cast<uint4*>(q_sm + h * kQRow<KS> + col) =
          make_uint4(bf16x2_to_f16x2(v.x), bf16x2_to_f16x2(v.y), bf16x2_to_f16x2(v.z), bf16x2_to_f16x2(v.w));
    }
  }
  const int wq = warp % kNQ, half = warp / kNQ;  // KS 2: pair wq, dims half
  Qk<QR, KS> qk;
  if constexpr (QR) __syncthreads();
  qk.load(q_sm, g, t, half);  // QR = false: only the pointer; the first tile's barrier orders the writes
  const float kv_scale = *a.kv_fp8_scale;
  const float logit_scale = a.cfg.sm_scale * 1.4426950408889634f * kv_scale;

  // KS 1: rows c_w + 4n; KS 2: rows c_w + 2n (n = 0..7; lane g reads row n = g, C columns are 2t, 2t+1).
  constexpr int kRowStep = KS == 1 ? 4 : 2;
  const int c_w = KS == 1 ? 32 * (wq >> 2) + (wq & 3) : 16 * (wq >> 1) + (wq & 1);
  int s_row[2], p_pos[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int row = c_w + kRowStep * (2 * t + e), rr = row & 15;
    s_row[e] = row;
    p_pos[e] = (row & ~15) + 4 * ((rr >> 1) & 3) + ((rr & 1) | ((rr >> 3) << 1));
  }

  mma::FragC o[kGroups][4], lacc = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int gr = 0; gr < kGroups; ++gr)
#pragma unroll
    for (int j = 0; j < 4; ++j) o[gr][j] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
  float m_ref[2] = {-INFINITY, -INFINITY};
  const mma::FragB ones = make_uint2(0x3c003c00u, 0x3c003c00u);

  for (int tile = 0; tile < n_tiles; ++tile) {
    async_wait<S - 2>();
    __syncthreads();
    issue(tile + S - 1);
    const unsigned char* st = smem + (tile % S) * L::stage;
    const int valid = min(T, n_tokens - tile * T);

    float s[4];
    qk.dots(st + (c_w + kRowStep * g) * kRowBytes, g, t, s);
    bool softmax = true;
    if constexpr (KS == 2) {
      float4* sx = reinterpret_cast<float4*>(smem + L::sx) + wq * WS + lane;
      if (half == 1) {
        *sx = make_float4(s[0], s[1], s[2], s[3]);
        __threadfence_block();
        pair_arrive(1 + wq, 2 * WS);
        softmax = false;
      } else {
        pair_sync(1 + wq, 2 * WS);
        const float4 u = *sx;
        s[0] += u.x;
        s[1] += u.y;
        s[2] += u.z;
        s[3] += u.w;
      }
    }
    auto write_p = [&]() {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        p_sm[(g + 8 * (i >> 1)) * kPRow + p_pos[i & 1]] = f32_to_f16_bits(exp2f(s[i] - m_ref[i >> 1]));
    };
    if (softmax) {
#pragma unroll
      for (int i = 0; i < 4; ++i) s[i] = s_row[i & 1] < valid ? s[i] * logit_scale : -INFINITY;
      float mx[2] = {fmaxf(s[0], s[1]), fmaxf(s[2], s[3])};
#pragma unroll
      for (int r = 0; r < 2; ++r) mx[r] = group_max<4>(mx[r]);
      if (mx[0] > m_ref[0] + kRescaleSlack || mx[1] > m_ref[1] + kRescaleSlack) *flag_sm = tile;
      if (t == 0) {
        tmax_sm[g * kNQ + wq] = mx[0];
        tmax_sm[(g + 8) * kNQ + wq] = mx[1];
      }
      write_p();
    }
    __syncthreads();

    if (*flag_sm == tile) {
      float alpha[2];
      mla_softmax::raise_reference<kNQ>(tmax_sm, g, m_ref, alpha);
      mla_softmax::scale_accumulators<kGroups>(o, lacc, alpha);
      if (softmax) write_p();
      __syncthreads();
    }

#pragma unroll
    for (int ks = 0; ks < T / 16; ++ks) {
      mma::FragA pa;
#pragma unroll
      for (int r = 0; r < 2; ++r)
        pa.row[r] = *reinterpret_cast<const uint2*>(p_sm + (g + 8 * r) * kPRow + 16 * ks + 4 * t);
      const unsigned char* r0 = st + (16 * ks + 2 * t) * kRowBytes + kDimsPerWarp * warp + 4 * g;
#pragma unroll
      for (int gr = 0; gr < kGroups; ++gr) {
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
    for (int gr = 0; gr < kGroups; ++gr) {
      const int dim = kDimsPerWarp * warp + 32 * gr + 4 * (2 * t + (i & 1));
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

// Split plan, workspace and launch for one configuration. min_tokens forces shorter splits (checks).
template <int W, int T, int S, int B, bool QR, int KS = 1, int MinTokens = 128>
struct Wide {
  static SplitPlan plan(const MlaDecodeConfig& c) {
    return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, B, T, MinTokens);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) { return partials_bytes(c.batch_size, plan(c).splits); }
  static void launch(const MlaDecodeArgs& a, const char* name) {
    using L = Smem<W, T, S, KS>;
    require_mla_shape(a.cfg);
    const SplitPlan pl = plan(a.cfg);
    if (a.workspace_size < partials_bytes(a.cfg.batch_size, pl.splits))
      throw std::runtime_error(std::string(name) + ": workspace too small");
    static const bool attr_set = [] {
      harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_fp8_wide_kernel<W, T, S, B, QR, KS>),
                                        hipFuncAttributeMaxDynamicSharedMemorySize, int(L::total)),
                    "hipFuncSetAttribute(mla_fp8_wide_kernel)");
      return true;
    }();
    (void)attr_set;
    const Partials part = partials_in(a.workspace, a.cfg.batch_size, pl.splits);
    const int threads = W * current_device_shape().warp_size;
    mla_fp8_wide_kernel<W, T, S, B, QR, KS>
        <<<dim3(pl.splits, a.cfg.batch_size), threads, L::total>>>(a, pl.tokens_per_split, pl.splits, part);
    harness_check_launch(name);
    if (pl.splits > 1) launch_combine(part, a.cfg.batch_size, pl.splits, a.out);
  }
};

#endif  // HARNESS_GPU

}  // namespace
}  // namespace mla_wide
