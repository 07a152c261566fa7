// moe_wide16's 32-row tiles (v13's kernels) with the MMAs, B loads and activation copies of the empty
// 8-column groups skipped: a tile of an expert with r real sorted rows (r % 32 in its last tile) runs the
// mainloop instantiated for ceil(r / 8) column groups (block-uniform switch on a count taken in the
// prologue's barrier). At E 257 bs 512 (~16-18 pairs per routed expert) most tiles need 2 or 3 of their 4
// groups, so the tensor pipe and the B traffic drop by about a third while every weight is still decoded
// once per expert. Each real column's products, k order and fp32 sums are v13's, so the output is bit for
// bit the same; the skipped padding rows of the requantized activations are never written by gate_up nor
// read by down (down skips the same groups).
#pragma once
#include "problems/common/moe_rows8.h"
#include "problems/common/moe_wide16.h"

namespace moe_wide16n {
namespace {

using moe_pipeline::Tile;
using moe_pipeline::Workspace;
using moe_tile::Bf16Folded;

#if defined(MOE_WG8_HOST)
// C: the full-tile configuration (NG = 4); NG1: the smallest column-group count instantiated (1 or 2);
// STEP3: whether 3 groups get their own instantiation (else 4).
template <class C, int NGe>
using CfgN = moe_wide16::Cfg<C::WM, C::MT, NGe, C::KS, C::STAGES, C::kMinBlocks>;

template <class C>
__device__ inline void gate_up_tile(const MoeArgs& a, const Workspace& ws, const Tile& tile, const int* rg,
                                    const uint32_t* xoff, uint8_t* smem, int n0) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = H / 32;
  constexpr int kHalf = C::BM / 2;
  float acc[C::MT][C::NG][4];
  moe_wide16::mainloop<C>(a.gate_up_weight_shuffled + int64_t(tile.expert) * 2 * I * (H / 2),
                          a.gate_up_weight_scale + int64_t(tile.expert) * 2 * I * KB, ws.x8, KB, rg, xoff, smem,
                          acc);
  __syncthreads();  // the pipeline buffers become the fp32 tile [BN][BM + 4]

  constexpr int kStride = C::BM + 4;
  float* tile_f = reinterpret_cast<float*>(smem);
  const moe_wide16::AccIndex<C> ix;
#pragma unroll
  for (int m = 0; m < C::MT; ++m)
#pragma unroll
    for (int j = 0; j < C::NG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) tile_f[ix.col(j, i) * kStride + ix.row(m, i)] = acc[m][j][i];
  __syncthreads();

  constexpr int kB = mxfp4::kBlock, kGroups = C::BN * (kHalf / kB);
  const int lane = threadIdx.x % kB;
  for (int grp = threadIdx.x / kB; grp < kGroups; grp += C::kThreads / kB) {
    const int c = grp / (kHalf / kB), n = (grp % (kHalf / kB)) * kB + lane;
    const float gate = tile_f[c * kStride + n], up = tile_f[c * kStride + kHalf + n];
    int s;
    const float xv = moe_tiled::swiglu_bf16_block_scale(gate, up, s);
    const int64_t row = tile.row0 + c;
    const int col = n0 + (n & ~7) + Bf16Folded::position(n & 7);
    const uint32_t bits = Bf16Folded::encode(mxfp4::quantize_dynamic_code(xv, s), s);
    reinterpret_cast<uint16_t*>(ws.a8)[row * I + col] = uint16_t(bits);
  }
}

// Column groups a tile of `real` rows runs with.
template <int NG1, bool STEP3>
__device__ inline int groups_for(int real) {
  const int g = (real + 7) / 8;
  if (g <= NG1) return NG1;
  if (g <= 2) return 2;
  if (STEP3 && g == 3) return 3;
  return 4;
}

// Stage 1, moe_wide16::gate_up with the column-group count chosen per tile.
// PDL: the kernel may be launched as a programmatic dependent (griddepcontrol.wait before any read of the
// previous kernels' output; it releases its own dependent right after). REV: tile blockIdx.x takes tile n_tiles - 1 - blockIdx.x (the shared expert's full tiles, last in the
// route's order, start first; the lightest tiles of the last slice end the grid).
template <class C, int NG1, bool STEP3, bool REV, bool PDL = false>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void gate_up(MoeArgs a, Workspace ws) {
  static_assert(C::NG == 4 && C::BN <= C::kThreads, "full tile of 4 column groups");
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  if constexpr (PDL) {  // dependent launch: wait for the previous kernel, then let the next one be scheduled
    moe_wg8::dep_wait();
    moe_wg8::dep_release();
  }
  const int n_tiles = *ws.n_tiles;
  if (int(blockIdx.x) >= n_tiles) return;
  const Tile tile = ws.tiles[REV ? n_tiles - 1 - int(blockIdx.x) : int(blockIdx.x)];
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, T = a.cfg.total_top_k;
  constexpr int kHalf = C::BM / 2;
  const int n0 = blockIdx.y * kHalf;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = (i < kHalf / 16 ? n0 : I + n0 - kHalf) / 16 + i;
  bool real = false;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int p = ws.sorted_pair[tile.row0 + c];
    real = p >= 0;
    const uint32_t token = p >= 0 ? uint32_t(p / T) : 0u;  // padding rows borrow token 0; never written back
    xoff[c] = token * uint32_t(H) * 2u;
  }
  const int ng = groups_for<NG1, STEP3>(__syncthreads_count(real));
  if (NG1 == 1 && ng == 1) gate_up_tile<CfgN<C, (NG1 == 1 ? 1 : 2)>>(a, ws, tile, rg, xoff, smem, n0);
  else if (ng == 2) gate_up_tile<CfgN<C, 2>>(a, ws, tile, rg, xoff, smem, n0);
  else if (STEP3 && ng == 3) gate_up_tile<CfgN<C, 3>>(a, ws, tile, rg, xoff, smem, n0);
  else gate_up_tile<C>(a, ws, tile, rg, xoff, smem, n0);
}

template <class C>
__device__ inline void down_tile(const MoeArgs& a, const Workspace& ws, const Tile& tile, const int* rg,
                                 const uint32_t* xoff, const int* pair, const float* weight, uint8_t* smem, int n0) {
  const int H = a.cfg.d_hidden, I = a.cfg.d_expert, KB = I / 32;
  float acc[C::MT][C::NG][4];
  moe_wide16::mainloop<C>(a.down_weight_shuffled + int64_t(tile.expert) * H * (I / 2),
                          a.down_weight_scale + int64_t(tile.expert) * H * KB, ws.a8, KB, rg, xoff, smem, acc);
  moe_tiled::store_weighted_rows<C>(moe_wide16::AccIndex<C>(), acc, pair, weight, ws.y, H, n0);
}

// Stage 2, moe_wide16::down with the same per-tile column-group count as gate_up.
template <class C, int NG1, bool STEP3, bool REV, bool PDL = false>
__global__ __launch_bounds__(C::kThreads, C::kMinBlocks) void down(MoeArgs a, Workspace ws) {
  static_assert(C::NG == 4 && C::BN <= C::kThreads, "full tile of 4 column groups");
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int rg[C::BM / 16];
  __shared__ uint32_t xoff[C::BN];
  __shared__ int pair[C::BN];
  __shared__ float weight[C::BN];
  if constexpr (PDL) {  // dependent launch: wait for the previous kernel, then let the next one be scheduled
    moe_wg8::dep_wait();
    moe_wg8::dep_release();
  }
  const int n_tiles = *ws.n_tiles;
  if (int(blockIdx.x) >= n_tiles) return;
  const Tile tile = ws.tiles[REV ? n_tiles - 1 - int(blockIdx.x) : int(blockIdx.x)];
  const int I = a.cfg.d_expert;
  const int n0 = blockIdx.y * C::BM;
  for (int i = threadIdx.x; i < C::BM / 16; i += C::kThreads) rg[i] = n0 / 16 + i;
  bool real = false;
  if (int(threadIdx.x) < C::BN) {
    const int c = threadIdx.x;
    const int row = tile.row0 + c;
    const int p = ws.sorted_pair[row];
    real = p >= 0;
    xoff[c] = uint32_t(row) * uint32_t(I) * 2u;
    pair[c] = p;
    weight[c] = p >= 0 ? a.topk_weights[p] : 0.0f;
  }
  const int ng = groups_for<NG1, STEP3>(__syncthreads_count(real));
  if (NG1 == 1 && ng == 1) down_tile<CfgN<C, (NG1 == 1 ? 1 : 2)>>(a, ws, tile, rg, xoff, pair, weight, smem, n0);
  else if (ng == 2) down_tile<CfgN<C, 2>>(a, ws, tile, rg, xoff, pair, weight, smem, n0);
  else if (STEP3 && ng == 3) down_tile<CfgN<C, 3>>(a, ws, tile, rg, xoff, pair, weight, smem, n0);
  else down_tile<C>(a, ws, tile, rg, xoff, pair, weight, smem, n0);
}

// moe_wide16::launch with these kernels (same grids, shared memory of the full tile). DEP (as moe_rows8's):
// which launches are programmatic dependents (1 gate_up, 2 down, 4 combine); 0 = moe_wide16::launch_stages.
template <int BN, class G1, class G2, int NG1 = 2, bool STEP3 = true, bool REV = false, int DEP = 0>
void launch(const MoeArgs& a) {
  constexpr int kQuantThreads = 256;
  if constexpr (DEP == 0) {
    moe_wide16::launch_stages<BN, G1, G2>(
        a,
        [&](const Workspace& ws, const moe_pipeline::Sizes& s) {
          const int64_t n8 = s.M * s.H / 8;
          moe_wg8::quantize_hidden8<Bf16Folded>
              <<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(a.hidden_states, n8, ws.x8, ws.xs);
        },
        gate_up<G1, NG1, STEP3, REV>, down<G2, NG1, STEP3, REV>, "wide16n");
  } else {
    static_assert(G1::BN == BN && G2::BN == BN, "plan");
    moe_pipeline::require_workspace(a, BN, Bf16Folded::kActBytes);
    Workspace ws;
    moe_pipeline::carve(a.cfg, BN, a.workspace, &ws, Bf16Folded::kActBytes);
    const moe_pipeline::Sizes s = moe_pipeline::sizes_of(a.cfg, BN);
    if (s.I % (G1::BM / 2) || s.I % 32 || s.H % G2::BM || (s.H / 32) % G1::KS || (s.I / 32) % G2::KS || s.E > 1024)
      throw std::invalid_argument("moe_mxfp4: shape not supported by the wide16n kernels");
    const int64_t n8 = s.M * s.H / 8;
    moe_wg8::quantize_hidden8<Bf16Folded>
        <<<unsigned((n8 + kQuantThreads - 1) / kQuantThreads), kQuantThreads>>>(a.hidden_states, n8, ws.x8, ws.xs);
    moe_pipeline::check(hipGetLastError(), "quantize hidden");
    moe_wg8::route(a, ws, BN);
    constexpr bool kG = (DEP & 1) != 0, kD = (DEP & 2) != 0;
    constexpr int sm1 = moe_wide16::gate_up_smem<G1>(), sm2 = G2::kPipeBytes;
    auto* gk = gate_up<G1, NG1, STEP3, REV, true>;
    auto* dk = down<G2, NG1, STEP3, REV, true>;
    moe_wg8::allow_smem(gk, sm1);
    moe_wg8::allow_smem(dk, sm2);
    moe_rows8::launch_ex(gk, dim3(unsigned(s.tiles_max), unsigned(s.I / (G1::BM / 2))), dim3(G1::kThreads), sm1, kG,
                         "wide16n gate_up", a, ws);
    moe_rows8::launch_ex(dk, dim3(unsigned(s.tiles_max), unsigned(s.H / G2::BM)), dim3(G2::kThreads), sm2, kD,
                         "wide16n down", a, ws);
    constexpr int kCombineThreads = 256;
    const int64_t n = int64_t(a.cfg.bs) * a.cfg.d_hidden;
    moe_rows8::launch_ex(moe_rows8::combine, dim3(unsigned((n / moe_pipeline::kYVec + kCombineThreads - 1) / kCombineThreads)),
                         dim3(kCombineThreads), 0, (DEP & 4) != 0, "combine", static_cast<const moe_pipeline::YElem*>(ws.y),
                         int64_t(a.cfg.bs), int(a.cfg.d_hidden), int(a.cfg.total_top_k), a.out);
  }
}
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_wide16n
