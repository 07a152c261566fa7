// v21: v20 with the 8-row gate_up on the warpgroup MMA (moe_rows8w.h: e4m3 weights decoded into wgmma A
// registers, 7 integer ops a word instead of the f16 decode's 11; activations e4m3 with their scale folded
// in; ldmatrix.x4 for the weight words) in moe_rows8b's per-tile overlapped chain, on the 8-row shapes with
// d_expert <= 512 (E 257 bs 16 / 128 and E 33 bs 16). Every other shape runs v20's paths exactly as
// v20.hip launches them. Bit-identical to v20 (same exact per-k-block products, same fmaf order).
// Builds without mma.sync (AMD) run v11's dispatch, as v20.
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"

// Measurement switches (candidates define them before including this file).
#ifndef V21_G
#define V21_G 2  // k-blocks a wgmma group
#endif
#ifndef V21_ST
#define V21_ST 4  // stages
#endif
#ifndef V21_MINB
#define V21_MINB 5  // gate_up blocks per SM
#endif
#ifndef V21_LDSM
#define V21_LDSM true
#endif
#ifndef V21_CARRY
#define V21_CARRY true
#endif
#ifndef V21_FOLD
#define V21_FOLD true  // false: never fold (a check of the unfolded path)
#endif
#ifndef V21_DROT
#define V21_DROT true  // the down with the rotated copy plan (moe_rows8w::down_rot)
#endif
#ifndef V21_MAXI
#define V21_MAXI 512  // the wgmma chain for d_expert <= V21_MAXI
#endif

namespace {
using moe_tile::Bf16Folded;
using moe_tile::ScaledDecode;

int rows_for(const MoeConfig& c) {
#if defined(MOE_HAVE_MMA_SYNC)
  const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return pe <= 8 ? 8 : pe <= 40 ? 32 : 64;
#else
  const int r = moe_tiled::tile_rows_for(c);
  return r == 16 ? 32 : r;
#endif
}

#if defined(MOE_WG8_HOST)
// v20's options (docs/perf.md, section "moe_mxfp4 v20").
constexpr int kMinGroups = 2;
constexpr bool kThreeGroups = true;
constexpr bool kReverseTiles = true;
constexpr int kDependentMode = 5;
using FG1 = moe_wg8::F16Cfg<8, 4>;             // v15's 8-row gate_up
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;       // v15's 8-row down
using W32G1 = moe_wide16::Cfg<4, 2, 4, 8, 2>;  // 32-row kernels (full tile: 4 column groups)
using W32G2 = moe_wide16::Cfg<4, 2, 4, 4, 3>;
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
// This variant's 8-row gate_up: 64 rows, 8 k-blocks a stage.
using WG1 = moe_wg8::Cfg<1, 8, V21_ST, V21_G, V21_MINB>;

bool wg_chain(const MoeConfig& c) {
  return rows_for(c) == 8 && c.d_expert <= V21_MAXI && moe_rows8w::supports8w<WG1, WG2>(c);
}
#endif

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return wg_chain(c) ? moe_rows8w::workspace8w(c) : moe_rows8b::workspace8b(c);
#else
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, ScaledDecode::kActBytes);
#endif
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
#if defined(MOE_WG8_HOST)
  switch (rows_for(a.cfg)) {
    case 8:
      if (wg_chain(a.cfg))
        moe_rows8w::launch8w<WG1, V21_MINB, WG2, V21_FOLD, V21_LDSM, V21_CARRY, V21_DROT>(a);
      else if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
               int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
                   8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
        moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // v20: v19's chain
      else
        moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v20: v16's chain
      break;
    case 32:
      moe_wide16n::launch<32, W32G1, W32G2, kMinGroups, kThreeGroups, kReverseTiles, kDependentMode>(a);
      break;
    default:
      if (a.cfg.d_expert <= 512) moe_wgrows::launch<64, R64G1, R64G2S>(a);
      else moe_wgrows::launch<64, R64G1, R64G2>(a);
      break;
  }
#else
  switch (rows_for(a.cfg)) {
    case 8: moe_tiled::launch_one<8, moe_tiled::Plan, ScaledDecode>(a); break;
    case 32: moe_tiled::launch_one<32, moe_tiled::PlanWide, Bf16Folded>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, Bf16Folded>(a); break;
  }
#endif
}
}  // namespace

#if !defined(V21_NAME)
MOE_MXFP4_VARIANT("v21", gpu,
                  "v20 + 8-row gate_up on wgmma (e4m3 decode into A registers, folded e4m3 activations, ldmatrix) in "
                  "v19's per-tile overlapped chain, for d_expert <= 512",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
#else
MOE_MXFP4_VARIANT(V21_NAME, gpu,
                  "v20 + 8-row gate_up on wgmma (e4m3 decode into A registers, folded e4m3 activations, ldmatrix) in "
                  "v19's per-tile overlapped chain, for d_expert <= 512",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
#endif
