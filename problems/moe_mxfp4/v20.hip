// v20: v19 with the 32-row tiles (E 257 bs 512, E 33 bs 128) on moe_wide16n.h: each tile runs only the
// 8-column groups that hold real sorted rows (2, 3 or 4 of 4: ceil(rows / 8), at least 2), so a half-empty
// tile issues about half the MMAs and B loads per decoded weight word; the tiles taken in reverse route
// order (the shared expert's full tiles first, the lightest last); gate_up and combine launched as
// programmatic dependents. And v19's 8-row chain (moe_rows8b.h) only where it was measured to win
// (d_expert 256, the E 257 benchmark shapes); other 8-row shapes with v16's persistent-down rule (e.g. the
// d_expert 1024 test shape) take v16's chain.
// Everything else is v19's (= v16's) code. Bit-identical to v16 / v19 (the real columns' products, k order
// and sums are unchanged; skipped columns are padding). The same column groups on f16
// operands (measured slower) are in commit f5e16ae (moe_wide_f16n.h). Builds without mma.sync (AMD) run v11's
// dispatch.
#include "problems/common/moe_rows8b.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"

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
// The 32-row tiles' options as measured (docs/perf.md, section "moe_mxfp4 v20"): at least 2 column groups,
// 3 groups kept as 3 (not rounded to 4), reverse tile order, gate_up and combine as dependents (mode 5).
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
#endif

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return moe_rows8b::workspace8b(c);  // f16 activations + the chain's counters
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
      // v19's chain where measured (d_expert 256 with v16's persistent-down rule: E 257 bs 16 / 128).
      if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
          int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
              8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
        moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // 3 down blocks/SM, folded activation scales
      else
        moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v16's chain (its own persistent-down rule)
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

MOE_MXFP4_VARIANT("v20", gpu,
                  "v19 + 32-row tiles: empty 8-column groups skipped, reverse tile order, dependent launches; v19's E257 "
                  "chain only at d_expert 256",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
