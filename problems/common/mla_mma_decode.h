// Split-KV flash decoding for mla_decode on matrix instructions, generic over the KV storage
// format. A format policy (see v3.hip: fp8, v4.hip: MXFP4) says how a tile of rows is copied into
// shared memory and how a lane turns its slice of that tile into matrix fragments.
//
// Block (split, batch), four warps. Per tile of 32 tokens:
//   1. the tile's rows arrive in shared memory (kStages-deep copy pipeline);
//   2. S = Q K^T: warp w owns 144 of the 576 dims (its Q fragments stay in registers) and writes a
//      partial S[16 x 32]; the four partials are summed in step 3;
//   3. online softmax (base 2) per head, P rounded to the MMA element type;
//   4. O = O * alpha + P V: warp w owns 128 of the 512 output dims.
// The V fragment wants four tokens of one dim, which are four rows apart in shared memory: a lane
// reads a 4-dim word from each of four rows and byte-transposes them, which yields four n-tiles at
// once. So n-tile j, column n of a 4*kN-dim group stands for dim 4n + j of that group.
#pragma once
#include "problems/common/async_copy.h"
#include "problems/common/launch_check.h"
#include "problems/common/lowp_pack.h"
#include "problems/common/mla_split_kv.h"
#include "problems/common/mma_tile.h"
#include "problems/common/warp_reduce.h"

namespace mla_kernels {

// Work split of a block. S = Q K^T: warps split the 576 dims four ways (each keeps the Q fragments
// of its 144 dims in registers) and the tile's tokens Warps/4 ways. P V: warps split the 512 output
// dims evenly.
template <int Warps, int Tile>
struct MmaGeo {
  static constexpr int kWarps = Warps;
  static constexpr int kTile = Tile;  // tokens per tile
  static constexpr int kQkRanges = 4;
  static constexpr int kQkDimsPerWarp = kDimQK / kQkRanges;  // 144 = 9 k-steps
  static constexpr int kQkTokPerWarp = Tile / (Warps / kQkRanges);
  static constexpr int kPvDimsPerWarp = kDimV / Warps;
  static constexpr int kSRow = Tile + 4;  // padded row of the partial-S buffer (floats)
  static constexpr int kPRow = Tile + 4;  // padded row of P (16-bit values)
  static_assert(Warps % kQkRanges == 0, "warps must split the dims four ways");
};

template <class Fmt>
struct MmaLayout {
  using G = typename Fmt::Geo;
  static constexpr size_t kv_bytes = size_t(Fmt::kStages) * Fmt::kStageBytes;
  static constexpr size_t s_bytes = size_t(G::kQkRanges) * kHeads * G::kSRow * sizeof(float);
  static constexpr size_t p_bytes = size_t(kHeads) * G::kPRow * sizeof(uint16_t);
  static constexpr size_t total = kv_bytes + s_bytes + p_bytes + 3 * kHeads * sizeof(float);
};

#if defined(HARNESS_GPU)
#if defined(__HIP_PLATFORM_AMD__)
#define MLA_MMA_BOUNDS(FMT) __launch_bounds__(FMT::Geo::kWarps * 64)  // upper bound: wave64
#else
#define MLA_MMA_BOUNDS(FMT) __launch_bounds__(FMT::Geo::kWarps * kernel_warp_size(), FMT::kMinBlocks)
#endif

// static: each variant file gets its own kernel and launcher (and the launcher's attribute flag), see
// tests/test_kernel_linkage.cpp. (An unnamed namespace here would clash with the variant files'
// `using namespace mla_kernels` in nvcc's generated stubs.)
template <class Fmt>
static __global__ void MLA_MMA_BOUNDS(Fmt) mla_mma_kernel(MlaDecodeArgs a, int tokens_per_split, int splits, Partials part) {
  using G = typename Fmt::Geo;
  constexpr int W = kernel_warp_size();
  constexpr int kThreads = G::kWarps * W;
  constexpr int kMmaTile = G::kTile;
  constexpr int kQkDimsPerWarp = G::kQkDimsPerWarp;
  constexpr int kPvDimsPerWarp = G::kPvDimsPerWarp;
  constexpr int kSRow = G::kSRow, kPRow = G::kPRow;
  constexpr int kQkSteps = kQkDimsPerWarp / mma::kK;
  constexpr int kGroupDims = 4 * mma::kN;  // output dims covered by one byte-transposed load
  constexpr int kGroups = kPvDimsPerWarp / kGroupDims;
  constexpr int kLanesPerHead = kThreads / kHeads;
  constexpr int kTokPerLane = kMmaTile / kLanesPerHead;
  constexpr mma::Elem E = Fmt::kElem;
  static_assert(kPvDimsPerWarp % kGroupDims == 0 && G::kQkTokPerWarp % mma::kN == 0, "tile shapes");
  require_warp_size();

  extern __shared__ __align__(16) unsigned char smem[];
  using L = MmaLayout<Fmt>;
  float* s_part = reinterpret_cast<float*>(smem + L::kv_bytes);
  uint16_t* p_sm = reinterpret_cast<uint16_t*>(smem + L::kv_bytes + L::s_bytes);
  float* alpha_sm = reinterpret_cast<float*>(smem + L::kv_bytes + L::s_bytes + L::p_bytes);
  float* l_sm = alpha_sm + kHeads;
  float* m_sm = l_sm + kHeads;

  const int b = blockIdx.y, split = blockIdx.x, tid = threadIdx.x;
  const int lane = tid % W, warp = tid / W;
  constexpr bool kOneTokGroup = G::kWarps == G::kQkRanges;  // then warp < 4: no index arithmetic
  const int qk_range = kOneTokGroup ? warp : warp % G::kQkRanges;
  const int qk_tok0 = kOneTokGroup ? 0 : (warp / G::kQkRanges) * G::kQkTokPerWarp;
  const int64_t kv_begin = a.kv_indptr[b], kv_end = a.kv_indptr[b + 1];
  const int64_t t0 = kv_begin + int64_t(split) * tokens_per_split;
  const int64_t left = kv_end - t0;
  const int n_tokens = left <= 0 ? 0 : int(left < tokens_per_split ? left : tokens_per_split);
  const int n_tiles = (n_tokens + kMmaTile - 1) / kMmaTile;
  const float dequant = Fmt::dequant(a);
  const float qk_scale = a.cfg.sm_scale * 1.4426950408889634f * dequant;
  auto stage_ptr = [&](int tile) { return smem + size_t(tile % Fmt::kStages) * Fmt::kStageBytes; };
  auto issue_tile = [&](int tile) {
    if (tile < n_tiles)
      Fmt::load_tile(a, stage_ptr(tile), t0 + int64_t(tile) * kMmaTile, min(kMmaTile, n_tokens - tile * kMmaTile), tid,
                     kThreads);
    async_commit();  // empty groups keep the wait count uniform
  };

#pragma unroll
  for (int t = 0; t < Fmt::kStages - 1; ++t) issue_tile(t);

  mma::FragA qf[kQkSteps];
  {
    const uint16_t* q = a.q + int64_t(b) * kHeads * kDimQK;
#pragma unroll
    for (int ks = 0; ks < kQkSteps; ++ks)
#pragma unroll
      for (int r = 0; r < mma::kARows; ++r) {
        const int dim = qk_range * kQkDimsPerWarp + ks * mma::kK + 4 * mma::a_kq(lane);
        const uint2 raw = *reinterpret_cast<const uint2*>(q + mma::a_row(lane, r) * kDimQK + dim);
        qf[ks].row[r] = Fmt::convert_q(raw);
      }
  }

  mma::FragC acc[kGroups][4];
#pragma unroll
  for (int g = 0; g < kGroups; ++g)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[g][j].v[i] = 0.f;
  const int sm_h = tid / kLanesPerHead, sm_sub = tid % kLanesPerHead;
  float m_run = -INFINITY, l_run = 0.f;
  int v_ref = -1000;  // block-scaled formats: reference exponent of the V values (running max)

  for (int tile = 0; tile < n_tiles; ++tile) {
    async_wait<Fmt::kStages - 2>();
    __syncthreads();  // tile's rows visible to all; every warp is done with tile - 1
    issue_tile(tile + Fmt::kStages - 1);
    const unsigned char* st = stage_ptr(tile);

    {  // independent accumulators per n-tile keep several matrix instructions in flight
      constexpr int kNT = G::kQkTokPerWarp / mma::kN;
      mma::FragC c[kNT];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) c[nt] = mma::FragC{{0.f, 0.f, 0.f, 0.f}};
#pragma unroll
      for (int ks = 0; ks < kQkSteps; ++ks) {
        const int dim = qk_range * kQkDimsPerWarp + ks * mma::kK + 4 * mma::b_kq(lane);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const mma::FragB kb = Fmt::qk_b(st, qk_tok0 + nt * mma::kN + mma::b_col(lane), dim);
          if constexpr (Fmt::kBlockScaled) {  // per-token block scale, applied to each k-step's product
            mma::FragC t = {{0.f, 0.f, 0.f, 0.f}};
            mma::mma<E>(t, qf[ks], kb);
            const int blk_dim = qk_range * kQkDimsPerWarp + ks * mma::kK;
#pragma unroll
            for (int i = 0; i < 4; ++i)
              c[nt].v[i] += Fmt::qk_scale(st, qk_tok0 + nt * mma::kN + mma::c_col(lane, i), blk_dim) * t.v[i];
          } else {
            mma::mma<E>(c[nt], qf[ks], kb);
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          s_part[(qk_range * kHeads + mma::c_row(lane, i)) * kSRow + qk_tok0 + nt * mma::kN + mma::c_col(lane, i)] =
              c[nt].v[i];
    }
    __syncthreads();

    {
      const int valid = min(kMmaTile, n_tokens - tile * kMmaTile);
      float x[kTokPerLane], mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < kTokPerLane; ++j) {
        const int tok = sm_sub * kTokPerLane + j;
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < G::kQkRanges; ++w) s += s_part[(w * kHeads + sm_h) * kSRow + tok];
        x[j] = tok < valid ? s * qk_scale : -INFINITY;
        mx = fmaxf(mx, x[j]);
      }
      const float m_new = fmaxf(m_run, group_max<kLanesPerHead>(mx));
      const float alpha = exp2f(m_run - m_new);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < kTokPerLane; ++j) {
        const uint16_t p = Fmt::from_f32(exp2f(x[j] - m_new));
        sum += mma::elem_to_f32(p, E);  // the sum sees the same rounded weights as P V
        p_sm[sm_h * kPRow + sm_sub * kTokPerLane + j] = p;
      }
      l_run = l_run * alpha + group_sum<kLanesPerHead>(sum);
      m_run = m_new;
      if (sm_sub == 0) alpha_sm[sm_h] = alpha;
    }
    __syncthreads();

    float ref_rescale = 1.f;
    if constexpr (Fmt::kBlockScaled) {  // V values are kept relative to the largest scale seen so far
      const int r_tile = Fmt::tile_ref(st, lane);
      if (r_tile > v_ref) {
        ref_rescale = ldexpf(1.f, v_ref - r_tile);
        v_ref = r_tile;
      }
    }
#pragma unroll
    for (int g = 0; g < kGroups; ++g)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[g][j].v[i] *= alpha_sm[mma::c_row(lane, i)] * ref_rescale;
#pragma unroll
    for (int kstep = 0; kstep < kMmaTile / mma::kK; ++kstep) {
      mma::FragA pa;
#pragma unroll
      for (int r = 0; r < mma::kARows; ++r)
        pa.row[r] = *reinterpret_cast<const uint2*>(p_sm + mma::a_row(lane, r) * kPRow + kstep * mma::kK +
                                                    4 * mma::a_kq(lane));
      const int tok0 = kstep * mma::kK + 4 * mma::b_kq(lane);
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        mma::FragB vb[4];
        if constexpr (Fmt::kBlockScaled)
          Fmt::pv_b(st, tok0, warp * kPvDimsPerWarp + g * kGroupDims + 4 * mma::b_col(lane), vb, v_ref);
        else
          Fmt::pv_b(st, tok0, warp * kPvDimsPerWarp + g * kGroupDims + 4 * mma::b_col(lane), vb);
#pragma unroll
        for (int j = 0; j < 4; ++j) mma::mma<E>(acc[g][j], pa, vb[j]);
      }
    }
  }
  async_wait<0>();

  if (sm_sub == 0) { l_sm[sm_h] = l_run; m_sm[sm_h] = m_run; }
  __syncthreads();
  float out_scale = dequant;
  if constexpr (Fmt::kBlockScaled) out_scale = Fmt::out_scale(v_ref);
#pragma unroll
  for (int g = 0; g < kGroups; ++g)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int h = mma::c_row(lane, i);
        const int dim = warp * kPvDimsPerWarp + g * kGroupDims + 4 * mma::c_col(lane, i) + j;
        const float o = l_sm[h] > 0.f ? acc[g][j].v[i] * out_scale / l_sm[h] : 0.f;
        if (splits == 1)
          a.out[(int64_t(b) * kHeads + h) * kDimV + dim] = f32_to_bf16_bits(o);
        else
          part.o[((size_t(b) * splits + split) * kHeads + h) * kDimV + dim] = o;
      }
  if (splits > 1 && tid < kHeads)
    part.lse[(size_t(b) * splits + split) * kHeads + tid] = l_sm[tid] > 0.f ? m_sm[tid] + log2f(l_sm[tid]) : -INFINITY;
}

template <class Fmt>
SplitPlan mma_plan(const MlaDecodeConfig& c) {
  const int per_cu = int(Fmt::kMaxSmemPerCu / MmaLayout<Fmt>::total);
  return plan_splits(c.batch_size, c.kv_seq_len, current_device_shape().compute_units, per_cu < 1 ? 1 : per_cu, Fmt::Geo::kTile,
                     128);
}

template <class Fmt>
size_t mma_workspace_bytes(const MlaDecodeConfig& c) {
  return partials_bytes(c.batch_size, mma_plan<Fmt>(c).splits);
}

template <class Fmt>
static void mma_launch(const MlaDecodeArgs& a, const char* name) {
  require_mla_shape(a.cfg);
  const SplitPlan plan = mma_plan<Fmt>(a.cfg);
  if (a.workspace_size < partials_bytes(a.cfg.batch_size, plan.splits))
    throw std::runtime_error(std::string(name) + ": workspace too small");
  constexpr size_t smem = MmaLayout<Fmt>::total;
  static const bool attr_set = [] {
    harness_check(hipFuncSetAttribute(reinterpret_cast<const void*>(mla_mma_kernel<Fmt>),
                                      hipFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                  "hipFuncSetAttribute(mla_mma_kernel)");
    return true;
  }();
  (void)attr_set;
  const Partials part = partials_in(a.workspace, a.cfg.batch_size, plan.splits);
  const int threads = Fmt::Geo::kWarps * current_device_shape().warp_size;
  mla_mma_kernel<Fmt><<<dim3(plan.splits, a.cfg.batch_size), threads, smem>>>(a, plan.tokens_per_split, plan.splits,
                                                                             part);
  harness_check_launch(name);
  if (plan.splits > 1) launch_combine(part, a.cfg.batch_size, plan.splits, a.out);
}
#endif

}  // namespace mla_kernels
